"""Two gateway processes serve one model at once: they share one admission window on a real redis-server, both
follow a prompt-only rollout without a reload call or a model server restart, and each logs its own generations
and access lines."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_upstream import FakeUpstream
from gateway_harness import api_key
from gateway_harness import roll_out as rolled_out
from gateway_process import start
from gateway_process import stored as stored_in

from ai_platform.serving.gateway.admission import weight

BEFORE, AFTER = b'user: "Review: {{text}}"\n', b'user: "Review this contract: {{text}}"\n'
ONE = weight(len("Review: x"), 512)  # what one run() weighs under BEFORE


def roll_out(home: Path, upstream: FakeUpstream, prompt: bytes, budget: int, window: str, warehouse: str) -> str:
    """What a rollout leaves behind: the same model server, the prompt bundle and admission policy in the state."""
    policy = {"budget": budget, "key_share": 1.0, "window_s": 600, "degrade_max_tokens": None}
    return rolled_out(home, upstream, prompt=prompt, warehouse=warehouse, admission=policy, window_storage=window)


def run(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{url}/v1/prompts/review:run", json={"variables": {"text": "x"}}, headers=headers, timeout=30)


def access_lines(home: Path, url: str) -> list[dict[str, Any]]:
    log = home / f"gateway-{url.rsplit(':', 1)[1]}.log"
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


@pytest.fixture(params=["duckdb-file", "ducklake"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the replicas log: the embedded default's file, or the production DuckLake (a real PostgreSQL)."""
    if request.param == "duckdb-file":
        return str(tmp_path / "wh.duckdb")
    lake = request.getfixturevalue("lake")
    lake.migrate()  # the pipeline creates it before anything is served
    return str(lake.location)


def test_two_replicas_share_a_window_follow_a_prompt_only_rollout_and_log_their_own(
    tmp_path: Path, redis_url: str, warehouse: str, upstream: FakeUpstream
) -> None:
    first, second = (3, 4) if warehouse.endswith(".duckdb") else (5, 6)  # each run its own fresh windows
    upstream.default = '{"risk": "low"}'
    roll_out(tmp_path, upstream, BEFORE, budget=3 * ONE, window=f"{redis_url}/{first}", warehouse=warehouse)
    headers = {"Authorization": f"Bearer {api_key(tmp_path, 'app')}"}
    replicas = [start(tmp_path), start(tmp_path)]
    urls = [url for _, url in replicas]
    try:
        replies = [run(url, headers) for url in urls * 4]
        statuses = [r.status_code for r in replies]
        assert statuses.count(200) == 3, f"one window of 3 requests across both replicas, not 3 each: {statuses}"
        assert set(statuses) == {200, 429}

        new = roll_out(
            tmp_path, upstream, AFTER, budget=1000 * ONE, window=f"{redis_url}/{second}", warehouse=warehouse
        )
        changed, seen = time.monotonic(), [None, None]  # no /admin/reload: each replica watches the state
        while seen != [new, new] and time.monotonic() < changed + 30:
            polled = [run(url, headers) for url in urls]
            replies += polled
            seen = [r.json().get("prompt_version") for r in polled]
        print(f"both replicas served the new prompt {time.monotonic() - changed:.2f} s after the state changed")
        assert seen == [new, new], "both replicas serve the new prompt"
        assert "Review this contract: x" in json.dumps(upstream.requests[-1]), "the same model server"

        answered = {r.json()["generation_id"] for r in replies if r.status_code == 200}
        answered |= {run(url, headers).json()["generation_id"] for url in urls}
        deadline, stored = time.monotonic() + 60, set()
        while not answered <= stored and time.monotonic() < deadline:
            time.sleep(0.5)
            stored = stored_in(warehouse)
        assert answered <= stored, f"{len(answered - stored)} answered generations are not in the warehouse"
        for process, _ in replicas:  # the access lines are written once a second, and all of them at the end
            process.terminate()
            process.wait(timeout=30)
        logged = [access_lines(tmp_path, url) for url in urls]
        assert [len([x for x in lines if x["route"] == "/v1/prompts/{name}:run"]) for lines in logged] == [
            len(replies) // 2 + 1
        ] * 2, "one access line per request, in the log of the replica that answered it"
        assert {x["key"] for lines in logged for x in lines if x["route"].startswith("/v1/")} == {"app"}
        assert {x["status"] for lines in logged for x in lines if x["route"].startswith("/v1/")} == {200, 429}
    finally:
        for process, _ in replicas:
            process.terminate()
            process.wait(timeout=30)
