"""The embedded supervisor (rollout/heal.py) against real processes: a stand-in model server (Python's own HTTP
server answering GET /health) is killed with SIGKILL, and the supervisor starts it again, records it in the
rollout state, backs off on failed starts and never overrides a rollout or a stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import httpx

from ai_platform.errors import ServingError
from ai_platform.records import LiveRelease, ModelState
from ai_platform.rollout import local
from ai_platform.rollout.heal import Supervisor, dead
from ai_platform.serving.state import load, save
from ai_platform.serving.vllm import VllmServer, process_identity

MODEL = "contract-reviewer"


def stand_in(folder: Path) -> VllmServer:
    """A model server stand-in on a free port: `python -m http.server` over a folder holding a file `health`."""
    (folder / "health").write_text("ok")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, process_group=0)
    server = VllmServer(process, f"http://127.0.0.1:{port}", MODEL, folder / "server.log", folder)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{server.base_url}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.05)
    server.stop()
    raise ServingError("the stand-in did not answer")


def live_on(home: Path, server: VllmServer) -> ModelState:
    live = LiveRelease(
        "blue", server.base_url, server.pid, "sha256:" + "a" * 64, "sha256:" + "b" * 64, "", "d1",
        started=server.identity, model_dir=str(server.model_dir), serving={"max_model_len": 2048},
    )  # fmt: skip
    state = ModelState(MODEL, str(home / "wh.duckdb"), live=live)
    save(home, state)
    return state


def kill(server: VllmServer) -> None:
    os.kill(server.pid, signal.SIGKILL)
    server.process.wait(timeout=10)


def test_a_dead_colour_is_started_again_and_the_state_names_its_new_process(tmp_path: Path) -> None:
    started: list[VllmServer] = []

    def start(model: str, live: LiveRelease) -> VllmServer:
        assert model == MODEL and live.model_dir == str(tmp_path / "model")  # as the state recorded it
        started.append(stand_in(Path(live.model_dir)))
        return started[-1]

    (tmp_path / "model").mkdir()
    first = stand_in(tmp_path / "model")
    before = live_on(tmp_path, first)
    supervisor = Supervisor(tmp_path, start, log=print)
    try:
        assert supervisor.check() == [] and not started  # alive: left alone
        kill(first)
        (healed,) = supervisor.check()
        assert healed.live is not None and len(started) == 1
        assert healed.live.pid == started[0].pid != first.pid and healed.live.base_url == started[0].base_url
        assert healed.live.restarts == 1 and healed.live.started == process_identity(started[0].pid)
        assert replace(healed.live, pid=0, started="", base_url="", restarts=0) == replace(
            before.live, pid=0, started="", base_url="", restarts=0
        )  # the same release: image, bundle, settings, folder
        assert load(tmp_path, MODEL) == healed  # the gateway follows the state file
        assert httpx.get(f"{healed.live.base_url}/health", timeout=5).status_code == 200
        assert supervisor.check() == []
    finally:
        for server in [first, *started]:
            server.stop(grace_s=2)


def test_failed_starts_back_off_and_are_tried_again(tmp_path: Path) -> None:
    calls: list[float] = []

    def start(model: str, live: LiveRelease) -> VllmServer:
        calls.append(time.monotonic())
        if len(calls) < 3:
            raise ServingError("vLLM exited with code 1 before becoming healthy")
        return stand_in(Path(live.model_dir))

    (tmp_path / "model").mkdir()
    first = stand_in(tmp_path / "model")
    live_on(tmp_path, first)
    kill(first)
    supervisor = Supervisor(tmp_path, start, backoff_s=(0.3, 0.6), log=print)
    assert supervisor.check() == [] and len(calls) == 1
    assert supervisor.check() == [] and len(calls) == 1  # inside its backoff: not tried again yet
    deadline = time.monotonic() + 10
    while not (healed := supervisor.check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(calls) == 3 and calls[1] - calls[0] >= 0.3 and calls[2] - calls[1] >= 0.6  # 0.3 s, then 0.6 s
    assert healed and healed[0].live is not None and healed[0].live.restarts == 1
    (restarted,) = supervisor.started
    restarted.stop(grace_s=2)


def test_a_rollout_or_a_stop_wins_over_the_supervisor(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    first = stand_in(tmp_path / "model")
    state = live_on(tmp_path, first)
    kill(first)
    raced: list[VllmServer] = []

    def start_while_a_rollout_lands(model: str, live: LiveRelease) -> VllmServer:
        raced.append(stand_in(Path(live.model_dir)))
        assert state.live is not None
        save(tmp_path, replace(state, live=replace(state.live, color="green", deployment_id="d2")))
        return raced[-1]

    assert Supervisor(tmp_path, start_while_a_rollout_lands, log=print).check() == []
    raced[0].process.wait(timeout=30)  # the supervisor stopped what it started
    assert load(tmp_path, MODEL).live.color == "green"  # type: ignore[union-attr]

    second = stand_in(tmp_path / "model")
    live_on(tmp_path, second)
    assert local.stop(tmp_path, MODEL, log=print) == "blue"  # the state is cleared before the process stops
    second.process.wait(timeout=30)
    never: list[LiveRelease] = []
    assert Supervisor(tmp_path, lambda m, live: never.append(live) or second, log=print).check() == []
    assert never == [] and load(tmp_path, MODEL).live is None


def test_what_counts_as_dead() -> None:
    me = LiveRelease("blue", "http://x", os.getpid(), "i", "b", "", "d", started=process_identity(os.getpid()) or "")
    assert not dead(me)
    assert dead(replace(me, started="another boot:1"))  # the pid now names another process
    assert not dead(replace(me, pid=0))  # a cluster's colour: the kubelet's to restart, not ours
    child = subprocess.Popen(["true"])
    child.wait()
    assert dead(replace(me, pid=child.pid, started=""))
