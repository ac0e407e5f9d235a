"""`rollout stop` (and the next deploy) signal a live colour by the PID in its state file: only while that PID is
still the process the platform started. Real processes, a real state file under tmp_path."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ai_platform.rollout import local
from ai_platform.serving.state import Color, ModelState, load, save
from ai_platform.serving.vllm import VLLM_ENTRYPOINT, pid_alive, process_identity

MODEL = "contract-reviewer"


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not ours to stop: `sleep 60`, in its own process group as a vLLM colour is."""
    process = subprocess.Popen(["sleep", "60"], process_group=0)
    yield process
    process.kill()
    process.wait()


def live(home: Path, pid: int, started: str | None) -> None:
    """A state file naming `pid` as the live colour; `started` None: as an older platform wrote it (no such key)."""
    color = Color("blue", "http://127.0.0.1:9", pid, "sha256:image", "sha256:bundle", "/nowhere", "dep-1")
    color = replace(color, started=started or "")
    save(home, ModelState(MODEL, "warehouse.duckdb", live=color))
    if started is None:
        path = home / "rollout" / f"{MODEL}.json"
        record = json.loads(path.read_text())
        del record["live"]["started"]
        path.write_text(json.dumps(record))


def alive(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is None and pid_alive(process.pid)


def test_a_reused_pid_is_not_signalled(sleeper: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """After a reboot or a long pause the state file's PID can belong to anything: a start time that differs
    means it is not the server we started, so it is treated as not running and left alone."""
    identity = process_identity(sleeper.pid)
    assert identity is not None
    boot, ticks = identity.rsplit(":", 1)
    live(tmp_path, sleeper.pid, f"{boot}:{int(ticks) + 1}")
    said: list[str] = []
    assert local.stop(tmp_path, MODEL, log=said.append) is None
    assert alive(sleeper)
    assert any(f"pid {sleeper.pid}" in line and "not signalled" in line and "start time" in line for line in said)
    assert load(tmp_path, MODEL).live is None  # not running, as far as the platform is concerned
    print("\n".join(said))


def test_the_process_we_started_is_stopped(sleeper: subprocess.Popen[bytes], tmp_path: Path) -> None:
    live(tmp_path, sleeper.pid, process_identity(sleeper.pid))
    assert local.stop(tmp_path, MODEL, log=print) == "blue"
    sleeper.wait(timeout=30)
    assert not alive(sleeper)


def test_an_older_state_file_stops_only_a_vllm_server(sleeper: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """No start time recorded (an older platform): signalled only if the PID runs the vLLM server we launch."""
    live(tmp_path, sleeper.pid, None)
    said: list[str] = []
    assert local.stop(tmp_path, MODEL, log=said.append) is None
    assert alive(sleeper)
    assert any("records no start time" in line and VLLM_ENTRYPOINT in line for line in said)
    print("\n".join(said))

    server_like = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "-m", VLLM_ENTRYPOINT], process_group=0
    )
    try:
        live(tmp_path, server_like.pid, None)
        assert local.stop(tmp_path, MODEL, log=print) == "blue"
        server_like.wait(timeout=30)
    finally:
        server_like.kill()
        server_like.wait()
