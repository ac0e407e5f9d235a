"""Pickle-format weights: refused by default; with allow_pickle, only after a clean picklescan report.

The benign files are written by torch.save; the malicious ones are pickle opcodes
put together by hand (so no test ever defines, let alone runs, a payload). Nothing
here unpickles anything.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import materialize
from safetensors.numpy import save_file

from ai_platform.errors import NoWeightsError, PickleNotAllowedError, UnsafePickleError
from ai_platform.platform_repo import git
from ai_platform.weights.manifest import build_manifest, scan

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"

# PROTO 2; GLOBAL "os system"; the argument "true"; TUPLE1; REDUCE; STOP: os.system("true") when loaded.
CALLS_OS_SYSTEM = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03."
# An OrderedDict() whose stream stops before STOP: picklescan reads part of it and reports a scan error.
CUT_SHORT = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01}q\x02X\x01\x00\x00\x00a"


def torch_checkpoint(path: Path) -> Path:
    torch.save({"w": torch.arange(12, dtype=torch.float32).reshape(3, 4), "b": torch.ones(4)}, path)
    return path


def with_data_pkl(checkpoint: Path, payload: bytes, out: Path) -> Path:
    """The same torch zip, its data.pkl swapped for `payload`: how a poisoned checkpoint looks."""
    with zipfile.ZipFile(checkpoint) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, payload if item.filename.endswith("/data.pkl") else src.read(item))
    return out


@pytest.fixture
def pickle_model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    torch_checkpoint(folder / "pytorch_model.bin")
    (folder / "config.json").write_text('{"model_type": "qwen2"}')
    return folder


def test_without_the_opt_in_pickles_are_refused(pickle_model: Path) -> None:
    with pytest.raises(PickleNotAllowedError, match=r"pytorch_model.bin: pickle-based weights are refused"):
        scan(pickle_model)


def test_a_clean_torch_checkpoint_is_accepted_with_a_file_level_hash(pickle_model: Path) -> None:
    manifest = build_manifest(pickle_model, allow_pickle=True)
    (entry,) = [f for f in manifest["files"] if f["path"] == "pytorch_model.bin"]
    assert entry["sha256"] == hashlib.sha256((pickle_model / "pytorch_model.bin").read_bytes()).hexdigest()
    assert "tensors" not in entry  # locating tensors would mean unpickling


@pytest.mark.parametrize("suffix", [".bin", ".pt", ".pth", ".ckpt", ".PT"])
def test_every_pickle_suffix_is_scanned(pickle_model: Path, tmp_path: Path, suffix: str) -> None:
    with_data_pkl(pickle_model / "pytorch_model.bin", CALLS_OS_SYSTEM, pickle_model / f"extra{suffix}")
    with pytest.raises(UnsafePickleError, match=rf"extra\{suffix}: picklescan flagged dangerous globals: os.system"):
        scan(pickle_model, allow_pickle=True)


def test_a_bare_malicious_pickle_is_refused(pickle_model: Path) -> None:
    (pickle_model / "optimizer.pkl").write_bytes(CALLS_OS_SYSTEM)
    with pytest.raises(UnsafePickleError, match=r"optimizer\.pkl: picklescan flagged dangerous globals: os\.system"):
        build_manifest(pickle_model, allow_pickle=True)


def test_a_scan_error_is_a_refusal(pickle_model: Path) -> None:
    (pickle_model / "state.pickle").write_bytes(CUT_SHORT)
    with pytest.raises(UnsafePickleError, match=r"state\.pickle: picklescan could not read the whole pickle stream"):
        scan(pickle_model, allow_pickle=True)


def test_an_unrecognisable_file_with_a_pickle_suffix_is_refused(pickle_model: Path) -> None:
    """picklescan logs such a file and reports it clean; we do not."""
    (pickle_model / "pytorch_model.bin").write_bytes(b"GGUF\x03\x00\x00\x00 not a pickle")
    with pytest.raises(UnsafePickleError, match=r"pytorch_model\.bin: picklescan found no pickled tensors"):
        scan(pickle_model, allow_pickle=True)


def test_a_folder_still_needs_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(NoWeightsError, match=r"no weights \(.safetensors or opted-in pickle files\)"):
        scan(tmp_path, allow_pickle=True)
    save_file({"x": np.zeros(2, dtype=np.float32)}, str(tmp_path / "model.safetensors"))
    assert scan(tmp_path, allow_pickle=True) == ["config.json", "model.safetensors"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), "weights", "verify", *args], capture_output=True, text=True, timeout=120)


def test_cli_allow_pickle(pickle_model: Path) -> None:
    refused = run(str(pickle_model))
    assert refused.returncode == 1 and "pickle-based weights are refused" in refused.stderr
    ok = run(str(pickle_model), "--allow-pickle", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["files"] == 2
    with_data_pkl(pickle_model / "pytorch_model.bin", CALLS_OS_SYSTEM, pickle_model / "pytorch_model-2.bin")
    bad = run(str(pickle_model), "--allow-pickle")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("error: pytorch_model-2.bin: picklescan flagged dangerous globals: os.system")


def test_raw_weights_refuses_a_poisoned_checkpoint_even_when_opted_in(instance, own_demo_repo: Path) -> None:
    spec = own_demo_repo / "models/contract-reviewer.yaml"
    spec.write_text(spec.read_text().replace("  kind: local\n", "  kind: local\n  allow_pickle: true\n"))
    clean = torch_checkpoint(own_demo_repo / "hub/contract-qwen2/extra.bin")
    with_data_pkl(clean, CALLS_OS_SYSTEM, own_demo_repo / "hub/contract-qwen2/training_args.bin")
    git(own_demo_repo, "add", "-A")
    git(own_demo_repo, "commit", "--quiet", "-m", "opt in to pickles, and a poisoned one slips in")

    result = materialize(instance, "model_spec", "raw_weights", "verified_weights")
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "raw_weights"
    message = failure.event_specific_data.error.to_string()  # our error is the cause of Dagster's
    assert "training_args.bin: picklescan flagged dangerous globals: os.system" in message
