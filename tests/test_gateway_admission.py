"""Weighted admission control through the real gateway and a stand-in model server; the shared window on a
real redis-server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_upstream import FakeUpstream
from gateway_harness import api_key, client, key_file, roll_out
from starlette.testclient import TestClient

from ai_platform.config import Admission
from ai_platform.serving.gateway import keys
from ai_platform.serving.gateway.admission import DECODE_COST, UNIT, Windows, weight

TEXT = "a short contract"
FULL, SMALL = weight(len(f"Review: {TEXT}"), 512), weight(len(f"Review: {TEXT}"), 64)  # what run() weighs


def gateway(home: Path, upstream: FakeUpstream, admission: dict[str, Any], storage: str = "memory://") -> TestClient:
    roll_out(home, upstream, admission=admission, window_storage=storage)
    raw = api_key(home, "team-a") if not key_file(home).exists() else (home / "raw.key").read_text()
    (home / "raw.key").write_text(raw)
    return client(home, raw)


def run(client: TestClient) -> Any:
    return client.post("/v1/prompts/review:run", json={"variables": {"text": TEXT}})


def test_the_weight_counts_input_tokens_and_four_times_max_tokens() -> None:
    assert weight(0, 64) == 1
    assert weight(3 * UNIT, 0) == 1
    assert weight(3 * 1000, 500) == -(-(1000 + DECODE_COST * 500) // UNIT)


def test_over_budget_degrades_then_refuses_with_retry_after(tmp_path: Path, upstream: FakeUpstream) -> None:
    # room for one request at 512 max_tokens and two degraded to 64
    policy = {"budget": FULL + 2 * SMALL, "key_share": 1.0, "window_s": 30, "max_tokens": 512, "degrade_max_tokens": 64}
    for _ in range(3):
        upstream.reply("Risk: low.")
    with gateway(tmp_path, upstream, policy) as client:
        replies = [run(client) for _ in range(4)]
        metrics = client.get("/metrics").text
    assert [r.headers.get("x-admission") for r in replies[:3]] == ["admitted", "degraded", "degraded"]
    assert [r["max_tokens"] for r in upstream.requests] == [512, 64, 64], "the model server got the degraded limit"
    refused = replies[3]
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 30
    error = refused.json()["error"]
    assert error["type"] == "rate_limit_error" and error["code"] == "rate_limit_exceeded"
    assert len(upstream.requests) == 3, "a refused request never reaches the model server"
    assert 'ai_platform_admission_decisions_total{decision="rejected",model="contract-reviewer"} 1.0' in metrics


def test_one_key_may_use_only_its_share(tmp_path: Path, upstream: FakeUpstream) -> None:
    policy = {"budget": 2 * FULL, "key_share": 0.5, "window_s": 30, "max_tokens": 512, "degrade_max_tokens": None}
    upstream.reply("ok")
    with gateway(tmp_path, upstream, policy) as client:
        first, second = run(client), run(client)
        other = api_key(tmp_path, "team-b")
        upstream.reply("ok")
        third = client.post(
            "/v1/prompts/review:run", json={"variables": {"text": "x"}}, headers={"Authorization": f"Bearer {other}"}
        )
    assert first.status_code == 200 and second.status_code == 429, "team-a used its half"
    assert "this key (team-a) has used its share" in second.json()["error"]["message"]
    assert third.status_code == 200, "team-b has its own share"


def test_two_replicas_share_one_window_on_redis(tmp_path: Path, upstream: FakeUpstream, redis_url: str) -> None:
    policy = {"budget": FULL, "key_share": 1.0, "window_s": 30, "max_tokens": 512, "degrade_max_tokens": None}
    upstream.reply("ok")
    with (
        gateway(tmp_path / "a", upstream, policy, f"{redis_url}/0") as replica_a,
        gateway(tmp_path / "b", upstream, policy, f"{redis_url}/0") as replica_b,
    ):
        keys.write(key_file(tmp_path / "b"), keys.read(key_file(tmp_path / "a")))
        raw = (tmp_path / "a" / "raw.key").read_text()
        assert run(replica_a).status_code == 200
        refused = replica_b.post(
            "/v1/prompts/review:run", json={"variables": {"text": "x"}}, headers={"Authorization": f"Bearer {raw}"}
        )
    assert refused.status_code == 429, "replica b sees what replica a admitted"


def test_windows_in_memory_are_per_process(redis_url: str) -> None:
    policy = Admission(budget=weight(10, 512), key_share=1.0, window_s=30, max_tokens=512, degrade_max_tokens=None)
    shared_a, shared_b = Windows(f"{redis_url}/1"), Windows(f"{redis_url}/1")
    assert shared_a.admit("m", "k", policy, 10, 512).kind == "admitted"
    assert shared_b.admit("m", "k", policy, 10, 512).kind == "rejected"
    alone_a, alone_b = Windows(), Windows()
    assert alone_a.admit("m", "k", policy, 10, 512).kind == "admitted"
    assert alone_b.admit("m", "k", policy, 10, 512).kind == "admitted"
