"""platform.yaml and models/*.yaml: strict, all-or-nothing, errors name file, field and allowed values."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ai_platform.config import load_platform
from ai_platform.errors import ConfigError


@pytest.fixture
def repo(demo_repo: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(demo_repo, copy, ignore=shutil.ignore_patterns(".git", "hub"))
    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def error_of(repo: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_platform(repo)
    return str(info.value)


def test_demo_repo_loads(repo: Path) -> None:
    platform = load_platform(repo, home=repo / "state")
    spec = platform.model("contract-reviewer")
    assert spec.source.kind == "local"
    assert spec.quantization.method == "awq" and spec.quantization.group_size == 128
    assert spec.prompts == ["contract_review"]
    assert [g.metric for g in spec.canary.gates][:2] == ["schema_valid_rate", "finish_stop_rate"]
    assert platform.warehouse().location == str(repo / "state" / "warehouse.duckdb")
    assert platform.config.kubernetes.gpu.tolerations[0].key == "nvidia.com/gpu"


def test_bad_enum_names_file_field_and_allowed_values(repo: Path) -> None:
    edit(repo / "models/contract-reviewer.yaml", "method: awq", "method: gptq")
    message = error_of(repo)
    assert "models/contract-reviewer.yaml" in message
    assert "quantization.method" in message
    assert "'awq'" in message and "'none'" in message and "'gptq'" in message


def test_unknown_field_is_an_error(repo: Path) -> None:
    edit(repo / "models/contract-reviewer.yaml", "  group_size: 128", "  group_size: 128\n  groupsize: 64")
    assert "quantization.groupsize: unknown field" in error_of(repo)


def test_source_kind_must_be_known(repo: Path) -> None:
    edit(repo / "models/contract-reviewer.yaml", "kind: local", "kind: s3")
    message = error_of(repo)
    assert "source" in message and "'local'" in message and "'hub'" in message


def test_every_problem_is_reported_at_once(repo: Path) -> None:
    edit(repo / "models/contract-reviewer.yaml", "dtype: auto", "dtype: fp8")
    edit(repo / "models/contract-reviewer.yaml", "max_ppl_increase: 0.10", "max_ppl_increase: -1")
    message = error_of(repo)
    assert "serving.dtype" in message and "quantization.max_ppl_increase" in message


def test_gate_takes_exactly_one_bound(repo: Path) -> None:
    edit(repo / "models/contract-reviewer.yaml", "{metric: pii_count, max: 0}", "{metric: pii_count, max: 0, min: 0}")
    assert "exactly one of min, max, max_drop, max_rise" in error_of(repo)


def test_invalid_yaml_names_line(repo: Path) -> None:
    (repo / "platform.yaml").write_text("name: demo\nstorage: [unclosed\n", encoding="utf-8")
    message = error_of(repo)
    assert "platform.yaml:" in message and "invalid YAML" in message


def test_name_must_match_file_stem(repo: Path) -> None:
    shutil.copyfile(repo / "models/contract-reviewer.yaml", repo / "models/other.yaml")
    assert "must equal the file stem 'other'" in error_of(repo)


def test_missing_prompt_and_eval_files(repo: Path) -> None:
    (repo / "prompts/contract_review.prompt").unlink()
    assert "no file prompts/contract_review.prompt" in error_of(repo)


def test_nothing_half_loaded(repo: Path) -> None:
    """One bad spec among good ones: no Platform at all, not the good subset."""
    good = (repo / "models/contract-reviewer.yaml").read_text(encoding="utf-8")
    (repo / "models/a-good-one.yaml").write_text(good.replace("name: contract-reviewer", "name: a-good-one"))
    (repo / "models/zz-bad.yaml").write_text(good.replace("name: contract-reviewer", "name: zz-bad") + "surprise: 1\n")
    assert "zz-bad.yaml" in error_of(repo)


def test_model_names_are_dns_labels(repo: Path) -> None:
    (repo / "models/contract-reviewer.yaml").rename(repo / "models/Bad_Name.yaml")
    edit(repo / "models/Bad_Name.yaml", "name: contract-reviewer", "name: Bad_Name")
    assert "name: String should match pattern" in error_of(repo)


def test_unknown_model_lists_known(repo: Path) -> None:
    with pytest.raises(ConfigError, match=r"no model 'nope'.*known: contract-reviewer"):
        load_platform(repo).model("nope")


def test_an_image_base_must_be_pinned_by_digest(repo: Path) -> None:
    spec = repo / "models/contract-reviewer.yaml"
    spec.write_text(spec.read_text(encoding="utf-8") + "image:\n  base: docker.io/library/busybox:latest\n")
    message = error_of(repo)
    assert "image.base" in message and "sha256" in message


def test_a_canary_without_gates_is_a_config_error(repo: Path) -> None:
    """A canary with no gate passes every candidate: no canary at all."""
    spec = repo / "models/contract-reviewer.yaml"
    text = spec.read_text(encoding="utf-8")
    start = text.index("  gates:\n")
    end = text.find("\n", text.index("\n    - ", start))
    while text.startswith("    ", end + 1):  # the whole gates list
        end = text.find("\n", end + 1)
    spec.write_text(text[:start] + "  gates: []" + text[end:], encoding="utf-8")
    message = error_of(repo)
    assert "canary.gates" in message and "at least 1" in message, message
