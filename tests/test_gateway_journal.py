"""kill -9 the gateway under load: every generation whose reply went out is in the warehouse after a restart."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from fake_upstream import FakeUpstream
from gateway_harness import api_key, roll_out
from gateway_process import start, stored

CLIENTS = 6


@pytest.mark.slow
def test_kill_9_mid_load_loses_no_answered_generation(tmp_path: Path, upstream: FakeUpstream) -> None:
    upstream.default = "Risk: low."
    db = tmp_path / "wh.duckdb"
    roll_out(tmp_path, upstream, model="m", warehouse=db, admission={"budget": 100000, "key_share": 1.0})
    headers = {"Authorization": f"Bearer {api_key(tmp_path, 'load')}"}
    gateway, url = start(tmp_path)
    answered: list[str] = []
    stop = threading.Event()

    def client() -> None:
        with httpx.Client(timeout=10) as http:
            while not stop.is_set():
                try:
                    reply = http.post(
                        f"{url}/v1/prompts/review:run", json={"variables": {"text": "x"}}, headers=headers
                    )
                except httpx.HTTPError:
                    return  # the gateway is gone
                if reply.status_code == 200:
                    answered.append(reply.json()["generation_id"])

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(answered) < 120 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(gateway.pid, signal.SIGKILL)
    gateway.wait()
    stop.set()
    for thread in threads:
        thread.join(timeout=15)
    assert len(answered) >= 56, "enough load to lose rows in memory"

    restarted, _ = start(tmp_path)  # replays the dead gateway's journal
    try:
        deadline = time.monotonic() + 60
        while not set(answered) <= stored(db) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        restarted.terminate()
        restarted.wait(timeout=30)
    rows = stored(db)
    assert set(answered) <= rows, f"{len(set(answered) - rows)} answered generations lost"
    assert len(rows) <= len(answered) + CLIENTS, "at most the requests in flight at the kill are extra"
    assert not list((tmp_path / "gateway" / "journal").glob("*.jsonl")), "replayed segments are removed"


def test_a_running_gateway_writes_its_access_lines_each_second_and_all_of_them_when_stopped(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    """The access lines are written in batches (access.BufferedLines): while the gateway runs, by its lifespan's
    flush task; when it is stopped (SIGTERM), at its lifespan's end, before uvicorn re-raises the signal."""
    roll_out(tmp_path, upstream)
    headers = {"Authorization": f"Bearer {api_key(tmp_path)}"}
    gateway, url = start(tmp_path)
    log = tmp_path / f"gateway-{url.rsplit(':', 1)[1]}.log"

    def lines() -> list[str]:
        return [line for line in log.read_text().splitlines() if line.startswith('{"time"')]

    try:
        assert httpx.get(f"{url}/v1/models", headers=headers, timeout=30).status_code == 200
        deadline = time.monotonic() + 30  # a generous bound on a loaded machine; the interval is 1 s
        while not [line for line in lines() if '"/v1/models"' in line] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [line for line in lines() if '"/v1/models"' in line], "written while the gateway runs"
        for _ in range(5):
            httpx.get(f"{url}/livez", timeout=30)
    finally:
        gateway.send_signal(signal.SIGTERM)
        gateway.wait(timeout=60)
    assert len([line for line in lines() if '"/livez"' in line]) == 5, "every line is written when it stops"
