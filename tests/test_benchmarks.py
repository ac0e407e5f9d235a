"""Every benchmark (`benchmarks/*.py`) runs in its smoke mode, so a change that breaks one fails the suite.

The smoke mode (`--smoke`) is seconds, not the figures: it checks that the script runs to its end and prints
our figure, its baseline's and their ratio. A script that takes `--upstream URL` is given the session's shared
vLLM (conftest's `demo_vllm`) instead of starting its own; one that starts servers itself declares its marks
in a top-level `SMOKE_MARKS = (...)`. A script that cannot run here (a system tool or PostgreSQL missing)
exits with `benchmarks.support.SKIP` and says why: a skip, like the tests that need the same tool.
"""

from __future__ import annotations

import ast
import getpass
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from benchmarks.support import SKIP

pytestmark = pytest.mark.benchmark
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
SMOKE_TIMEOUT_S = 600  # seconds-long where the machine is quiet; a loaded 2-core runner is many times slower


# What a vLLM server the benchmark ships leaves in TMPDIR when it is stopped, not the benchmark's: its ZMQ IPC
# sockets (UUID names), vllm_dist_* files of ~2 KB, and torch's compile cache (a cache across runs). Bytes, not
# the megabytes a leaked work folder is; giving each server a TMPDIR of its own that its stop removes is left.
VLLM_LEFTOVER = re.compile(r"vllm_dist_[0-9a-f]+|torchinductor_\w+")


def smoke_marks(source: str) -> tuple[str, ...]:
    """The script's `SMOKE_MARKS`, and `vllm` when it takes the session's server (`--upstream`)."""
    marks: set[str] = {"vllm"} if "--upstream" in source else set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SMOKE_MARKS" for t in node.targets):
            marks |= set(ast.literal_eval(node.value))
    return tuple(sorted(marks))


def params() -> list[object]:
    out = []
    for script in SCRIPTS:
        marks = smoke_marks(script.read_text(encoding="utf-8"))
        out.append(pytest.param(script, id=script.stem, marks=[getattr(pytest.mark, m) for m in marks]))
    return out


def test_every_benchmark_is_picked_up() -> None:
    """The glob sees the scripts (a moved folder would otherwise leave nothing to run) and no helper module."""
    names = {s.name for s in SCRIPTS}
    assert {"admission.py", "warehouse_write.py", "weights_verify.py"} <= names
    assert not any((ROOT / "benchmarks" / name).is_dir() for name in names)


@pytest.mark.parametrize("script", params())
def test_the_benchmark_runs_in_its_smoke_mode(script: Path, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """It runs to its end, prints ours, the baseline and their ratio, and leaves nothing in its temporary folder:
    every run of make test runs each one, and a leaked folder a run (commit_to_live's was 40 MB) fills the disk."""
    source = script.read_text(encoding="utf-8")
    assert '"--smoke"' in source, f"benchmarks/{script.name} has no --smoke mode (tests/test_benchmarks.py)"
    argv = [sys.executable, str(script), "--smoke"]
    if "--upstream" in source:
        argv += ["--upstream", request.getfixturevalue("demo_vllm").base_url]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # torch's compile cache is a cache across runs, not a leak: it stays where it always is.
    inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or f"{tempfile.gettempdir()}/torchinductor_{getpass.getuser()}"
    env = {
        **os.environ,
        "TMPDIR": str(scratch),
        "TORCHINDUCTOR_CACHE_DIR": inductor,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=SMOKE_TIMEOUT_S)
    if done.returncode == SKIP:
        pytest.skip(f"benchmarks/{script.name}: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    for word in ("ours", "baseline", "ratio"):
        assert re.search(rf"\b{word}\b", done.stdout, re.IGNORECASE), f"no {word!r} in:\n{done.stdout[-3000:]}"
    left = sorted(p.name for p in scratch.iterdir() if not (p.is_socket() or VLLM_LEFTOVER.match(p.name)))
    assert not left, f"benchmarks/{script.name} left {left} in its temporary folder"
