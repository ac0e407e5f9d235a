"""Per-file and per-tensor hashes, manifests and `ai-platform weights verify`, on real safetensors files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from safetensors.numpy import save_file

from ai_platform.errors import (
    DanglingSymlinkError,
    NotRegularFileError,
    OffsetLayoutError,
    PickleNotAllowedError,
    ShardIndexError,
    SymlinkEscapeError,
    SymlinkLoopError,
    WeightsError,
)
from ai_platform.platform_repo import git
from ai_platform.specs import snapshot_model_spec
from ai_platform.weights import hashing
from ai_platform.weights.manifest import build_manifest, compare, digest, identical_fraction, scan
from ai_platform.weights.stage import fetch_raw, verify

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    rng = np.random.default_rng(0)
    save_file(
        {"a.weight": rng.standard_normal((64, 32), dtype=np.float32), "a.bias": np.arange(32, dtype=np.int64)},
        str(folder / "model-00001-of-00002.safetensors"),
    )
    save_file(
        {"b.weight": rng.integers(0, 255, (128,), dtype=np.uint8)}, str(folder / "model-00002-of-00002.safetensors")
    )
    (folder / "config.json").write_text('{"model_type": "qwen2"}')
    return folder


def test_hashes_equal_the_reference_computation(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hashing, "WINDOW", 4096)  # many windows, tensors straddling them
    from safetensors.numpy import load_file

    paths = sorted(model.iterdir())
    for result in hashing.hash_files(paths):
        assert result.sha256 == hashlib.sha256(result.path.read_bytes()).hexdigest()
        if result.path.suffix == ".safetensors":
            for name, array in load_file(str(result.path)).items():
                assert result.tensors[name] == hashlib.sha256(array.tobytes()).hexdigest(), name


def test_manifest_is_stable_and_complete(model: Path) -> None:
    first, second = build_manifest(model), build_manifest(model)
    assert digest(first) == digest(second)
    assert [f["path"] for f in first["files"]] == sorted(p.name for p in model.iterdir())
    tensors = {t["name"] for f in first["files"] for t in f.get("tensors", [])}
    assert tensors == {"a.weight", "a.bias", "b.weight"}


def flip_byte_in(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_one_byte_flip_names_file_and_tensor(model: Path) -> None:
    trusted = build_manifest(model)
    shard = model / "model-00001-of-00002.safetensors"
    entry = next(f for f in trusted["files"] if f["path"] == shard.name)
    bias = next(t for t in entry["tensors"] if t["name"] == "a.bias")
    flip_byte_in(shard, bias["data_begin"] + 3)
    (problem,) = compare(build_manifest(model), trusted)
    assert problem.startswith(shard.name) and "tensors differ: a.bias" in problem


def test_truncated_and_polyglot_files_are_refused(model: Path) -> None:
    shard = model / "model-00002-of-00002.safetensors"
    shard.write_bytes(shard.read_bytes() + b"<script>payload</script>")
    with pytest.raises(OffsetLayoutError, match="trailing bytes"):
        build_manifest(model)
    shard.write_bytes(shard.read_bytes()[:-40])
    with pytest.raises(WeightsError):
        build_manifest(model)


def test_missing_and_extra_files(model: Path) -> None:
    trusted = build_manifest(model)
    (model / "config.json").unlink()
    (model / "extra.txt").write_text("x")
    assert compare(build_manifest(model), trusted) == ["config.json: missing", "extra.txt: not in the trusted manifest"]


def test_pickles_and_escaping_symlinks_are_refused(model: Path, tmp_path: Path) -> None:
    (model / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(PickleNotAllowedError, match="pickle-based weights are refused"):
        scan(model)
    (model / "pytorch_model.bin").unlink()
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path / "secret", model / "tokenizer.json")
    with pytest.raises(SymlinkEscapeError, match="symlink points outside the snapshot"):
        scan(model)


def test_identical_fraction_flags_a_copy(model: Path, tmp_path: Path) -> None:
    base = build_manifest(model)
    assert identical_fraction(base, base) == 1.0
    tuned = tmp_path / "tuned"
    shutil.copytree(model, tuned)
    flip_byte_in(tuned / "model-00002-of-00002.safetensors", -1)
    assert identical_fraction(build_manifest(tuned), base) == pytest.approx(2 / 3)


def test_demo_model_verifies(demo_model_dir: Path) -> None:
    manifest = build_manifest(demo_model_dir)
    assert any(f["path"] == "model.safetensors" and len(f["tensors"]) > 10 for f in manifest["files"])


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), "weights", "verify", *args], capture_output=True, text=True, timeout=120)


def test_cli_against_a_manifest(model: Path, tmp_path: Path) -> None:
    written = tmp_path / "manifest.json"
    assert run(str(model), "--write-manifest", str(written)).returncode == 0
    ok = run(str(model), "--manifest", str(written), "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True
    flip_byte_in(model / "model-00002-of-00002.safetensors", -1)
    bad = run(str(model), "--manifest", str(written), "--json")
    assert bad.returncode == 1
    assert "tensors differ: b.weight" in json.loads(bad.stdout)["problems"][0]


def test_cli_flags_a_byte_identical_fine_tune(model: Path, tmp_path: Path) -> None:
    reference = tmp_path / "base.json"
    run(str(model), "--write-manifest", str(reference))
    done = run(str(model), "--reference", str(reference))
    assert done.returncode == 1 and "not a fine-tune" in done.stdout and "100.0%" in done.stdout


def test_cli_bad_input_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    done = run(str(tmp_path))
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert "not valid JSON" in done.stderr


def test_hub_download_bookkeeping_is_not_part_of_the_model(model: Path) -> None:
    """snapshot_download(local_dir=...) leaves .cache/huggingface/ beside the files; it is not a model file."""
    before = scan(model)
    (model / ".cache/huggingface/download").mkdir(parents=True)
    (model / ".cache/huggingface/download/model.safetensors.metadata").write_text("sha\netag\n")
    assert scan(model) == before


# ------------------------------------------------- entries that are not plain files, and shard indexes


def test_a_dangling_symlink_is_a_named_error(model: Path) -> None:
    os.symlink("tokenizer.model", model / "tokenizer.json")
    with pytest.raises(DanglingSymlinkError, match=r"tokenizer\.json: symlink to 'tokenizer\.model', which does not"):
        build_manifest(model)


def test_a_symlink_loop_is_a_named_error(model: Path) -> None:
    os.symlink("b.json", model / "a.json")
    os.symlink("a.json", model / "b.json")
    with pytest.raises(SymlinkLoopError, match=r"a\.json: symlink loop"):
        build_manifest(model)


@pytest.mark.parametrize("name", ["model.safetensors", "tokenizer.json"])
def test_a_fifo_is_refused_without_opening_it(model: Path, name: str) -> None:
    os.mkfifo(model / name)  # opening it to read would block until a writer came
    with pytest.raises(NotRegularFileError, match=rf"{name}: a FIFO, not a regular file"):
        build_manifest(model)


def test_a_symlink_to_a_fifo_is_refused(model: Path) -> None:
    os.mkfifo(model / "pipe")
    os.symlink("pipe", model / "model.safetensors")
    with pytest.raises(NotRegularFileError, match="pipe: a FIFO"):
        build_manifest(model)


def write_index(folder: Path, weight_map: dict[str, str]) -> None:
    body = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(body))


SHARDED = {
    "a.weight": "model-00001-of-00002.safetensors",
    "a.bias": "model-00001-of-00002.safetensors",
    "b.weight": "model-00002-of-00002.safetensors",
}


def test_a_sharded_model_with_a_shard_gone_fails(model: Path) -> None:
    write_index(model, SHARDED)
    build_manifest(model)  # whole, it verifies
    (model / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(
        ShardIndexError,
        match=r"model\.safetensors\.index\.json: weight_map names 'model-00002-of-00002\.safetensors'"
        r" \(for b\.weight\), which is not in the folder",
    ):
        build_manifest(model)


@pytest.mark.parametrize("shard", ["../x.safetensors", "/tmp/x.safetensors", "sub/../../x.safetensors"])
def test_a_shard_index_naming_a_file_outside_the_folder_fails(model: Path, shard: str) -> None:
    write_index(model, {**SHARDED, "b.weight": shard})
    with pytest.raises(ShardIndexError, match="outside the model folder"):
        build_manifest(model)


def test_a_shard_index_naming_a_tensor_its_shard_lacks_fails(model: Path) -> None:
    write_index(model, {**SHARDED, "b.weight": "model-00001-of-00002.safetensors"})
    with pytest.raises(ShardIndexError, match=r"b\.weight is not in model-00001-of-00002\.safetensors"):
        build_manifest(model)


def test_an_unreadable_shard_index_fails(model: Path) -> None:
    (model / "model.safetensors.index.json").write_text('{"weight_map": ["not", "a", "map"]}')
    with pytest.raises(ShardIndexError, match="weight_map must map tensor names to shard files"):
        build_manifest(model)


@pytest.mark.parametrize("case", ["dangling", "loop", "fifo", "missing-shard"])
def test_cli_refuses_odd_folders_with_an_error_not_a_traceback(model: Path, case: str) -> None:
    if case == "dangling":
        os.symlink("gone.json", model / "tokenizer.json")
    elif case == "loop":
        os.symlink("loop.json", model / "loop.json")
    elif case == "fifo":
        os.mkfifo(model / "model.safetensors")
    else:
        write_index(model, SHARDED)
        (model / "model-00002-of-00002.safetensors").unlink()
    done = run(str(model))  # a FIFO used to block here until the timeout
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "Traceback" not in done.stderr, done.stderr


# ------------------------------------------------- "not a fine-tune": a share of identical tensors, not all of them


def many_tensors(folder: Path, changed: bool) -> Path:
    """A 300-tensor model; `changed` edits one bias, as a "fine-tune" that trained nothing else would."""
    folder.mkdir()
    tensors = {f"layers.{i}.weight": np.full((4,), i, dtype=np.float32) for i in range(299)}
    tensors["head.bias"] = np.ones((4,), dtype=np.float32) * (2.0 if changed else 1.0)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


def test_cli_flags_a_fine_tune_that_changed_one_tensor_of_300(tmp_path: Path) -> None:
    base, tuned = many_tensors(tmp_path / "base", False), many_tensors(tmp_path / "tuned", True)
    reference = tmp_path / "base.json"
    assert run(str(base), "--write-manifest", str(reference)).returncode == 0
    done = run(str(tuned), "--reference", str(reference), "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["identical_to_reference"] == pytest.approx(299 / 300)
    assert report["problems"] == [
        "99.7% of tensors are byte-identical to the reference model, at or above the 99% limit: not a fine-tune"
    ]
    assert run(str(tuned), "--reference", str(reference), "--identical-limit", "1").returncode == 0


def test_the_spec_sets_the_identical_share_that_blocks(own_demo_repo: Path, tmp_path: Path) -> None:
    """verification.identical_fraction_limit: 25 of the demo's 26 tensors equal a base that differs in one."""
    base = json.loads((own_demo_repo / "manifests/contract-qwen2.json").read_text())
    weights = next(f for f in base["files"] if f["path"] == "model.safetensors")
    weights["tensors"][0]["sha256"] = "0" * 64
    (own_demo_repo / "manifests/base.json").write_text(json.dumps(base))
    spec_path = own_demo_repo / "models/contract-reviewer.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    spec["verification"]["reference_manifest"] = "manifests/base.json"
    results = {}
    for limit in (None, 0.9):
        if limit is not None:
            spec["verification"]["identical_fraction_limit"] = limit
        spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
        git(own_demo_repo, "add", "-A")
        git(own_demo_repo, "commit", "--quiet", "-m", f"reference manifest, limit {limit}")
        snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", "contract-reviewer")
        results[limit] = verify(snap, fetch_raw(snap))
    default, strict = results[None], results[0.9]
    assert default.passed and default.identical_to_reference == pytest.approx(25 / 26)
    assert default.identical_limit == 0.99
    assert not strict.passed and strict.identical_limit == 0.9
    assert strict.problems == [
        "96.2% of tensors are byte-identical to the reference model, at or above the 90% limit: not a fine-tune"
    ]
