"""Group-wise quantization cuts each Linear layer's input into groups of `group_size`: a size that does not
divide the model's widths is refused before any work, naming them (SmolLM2-135M's hidden size is 576, which
the default 128 does not divide)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ai_platform.config import Quantization
from ai_platform.errors import QuantizationError
from ai_platform.quantize.recipe import from_spec, group_size_problem, linear_inputs
from ai_platform.quantize.stage import check_group_size

# SmolLM2-135M-Instruct's config.json (Hugging Face), the fields that set its Linear widths
SMOLLM2_135M = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "num_hidden_layers": 30,
}
QWEN2_7B = {"hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28}


def test_the_widths_group_wise_quantization_cuts() -> None:
    assert linear_inputs(SMOLLM2_135M) == {
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_attention_heads × head_dim": 576,
    }
    assert linear_inputs({"text_config": QWEN2_7B})["hidden_size"] == 3584


def test_the_default_group_of_128_is_refused_for_a_576_wide_model_naming_its_widths() -> None:
    problem = group_size_problem(from_spec(Quantization()), SMOLLM2_135M)
    assert problem is not None
    assert "group_size 128" in problem and "hidden_size 576" in problem and "intermediate_size" not in problem
    assert "32 or 64 divides them all" in problem


@pytest.mark.parametrize("size", [32, 64])
def test_a_group_that_divides_every_width_passes(size: int) -> None:
    assert group_size_problem(from_spec(Quantization(group_size=size)), SMOLLM2_135M) is None


def test_qwen2_7b_with_the_default_group_and_int8_channels_pass() -> None:
    assert group_size_problem(from_spec(Quantization()), QWEN2_7B) is None
    assert group_size_problem(from_spec(Quantization(), "W8A8"), SMOLLM2_135M) is None  # per channel: no groups


def test_the_stage_refuses_before_any_work_naming_the_spec(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2_135M))
    with pytest.raises(QuantizationError, match=r"models/smol\.yaml: quantization\.group_size 128 .* hidden_size 576"):
        check_group_size(from_spec(Quantization()), tmp_path, "models/smol.yaml")
    check_group_size(from_spec(Quantization(group_size=64)), tmp_path, "models/smol.yaml")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(QuantizationError, match="cannot read the model's config"):
        check_group_size(from_spec(Quantization(group_size=64)), tmp_path, "models/smol.yaml")
