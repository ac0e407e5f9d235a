"""One model's fault stays with that model: a model whose server is down is answered 503 with Retry-After while
the others are served; the gateway's liveness and readiness are its own, never a model's; a rollout state the
gateway cannot read is refused, and the model keeps its last good one."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
from fake_upstream import FakeUpstream, serving
from gateway_harness import MODEL, NOWHERE, api_key, client, roll_out, served
from k8s_schema import validate_strictly
from prometheus_client.parser import text_string_to_metric_families

from ai_platform.config import load_platform
from ai_platform.serving.state import state_dir

OTHER = "other-model"
ANSWER = "Risk: the termination clause is one-sided."


def chat(model: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "Review: a lease"}]}


def samples(text: str, name: str) -> dict[str, float]:
    """`name`'s samples on /metrics, by their model label."""
    return {
        s.labels["model"]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def health_of(url: str, model: str, healthy: bool, within_s: float = 20) -> dict[str, Any]:
    """/healthz, once it says `model`'s server is `healthy` (the background checks find it)."""
    deadline = time.monotonic() + within_s
    while True:
        body: dict[str, Any] = httpx.get(f"{url}/healthz", timeout=10).json()
        if body["models"][model]["healthy"] is healthy or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def test_a_model_whose_server_is_down_gets_503_with_retry_after_and_the_others_are_served(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    upstream.default = ANSWER
    roll_out(tmp_path, upstream)
    with serving(FakeUpstream(default=ANSWER, healthy=False)) as down:
        roll_out(tmp_path, down, model=OTHER, prompt_name="other")
        headers = {"Authorization": f"Bearer {api_key(tmp_path)}"}
        with served(tmp_path) as (url, _):
            status = health_of(url, OTHER, healthy=False)
            assert status["models"][OTHER]["healthy"] is False and status["models"][MODEL]["healthy"] is True
            assert status["status"] == "degraded"
            # the gateway itself is fine: it stays alive and ready, in its Service and not restarted
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
            assert httpx.get(f"{url}/livez", timeout=10).status_code == 200
            assert httpx.get(f"{url}/readyz", timeout=10).status_code == 200

            refused = httpx.post(f"{url}/v1/chat/completions", json=chat(OTHER), headers=headers, timeout=30)
            assert refused.status_code == 503 and refused.headers["Retry-After"] == "2", refused.text
            assert refused.json()["error"]["code"] == "model_unavailable"
            assert down.requests == []  # answered at once: the server that is down was not asked
            served_ok = httpx.post(f"{url}/v1/chat/completions", json=chat(MODEL), headers=headers, timeout=30)
            assert served_ok.status_code == 200 and served_ok.json()["choices"][0]["message"]["content"] == ANSWER

            metrics = httpx.get(f"{url}/metrics", timeout=10).text
            assert samples(metrics, "ai_platform_gateway_upstream_up") == {MODEL: 1.0, OTHER: 0.0}
            assert samples(metrics, "ai_platform_gateway_upstream_down_total") == {OTHER: 1.0}

            down.healthy = True  # the server comes back: served again without anyone acting
            assert health_of(url, OTHER, healthy=True)["status"] == "ok"
            back = httpx.post(f"{url}/v1/chat/completions", json=chat(OTHER), headers=headers, timeout=30)
            assert back.status_code == 200, back.text


def test_liveness_is_the_process_and_readiness_the_gateways_own_state(tmp_path: Path) -> None:
    roll_out(tmp_path, NOWHERE)  # its one model's server is not running
    with client(tmp_path) as gateway:
        assert gateway.get("/livez").status_code == 200
        assert gateway.get("/readyz").json() == {"status": "ready"}
        status = gateway.get("/healthz")
        assert status.status_code == 200 and status.json()["models"][MODEL]["healthy"] is True  # one failed check

        journal = gateway.app.state.gateway.log.journal  # type: ignore[attr-defined]
        journal.max_bytes = 0  # full: the gateway refuses every request until the warehouse takes its backlog
        not_ready = gateway.get("/readyz")
        assert not_ready.status_code == 503 and "journal is full" in not_ready.json()["reason"]
        assert gateway.get("/healthz").status_code == 503
        assert gateway.get("/livez").status_code == 200  # not restarted for it: the backlog drains by itself


def test_the_cluster_gateways_probes_are_its_liveness_and_readiness(demo_repo: Path) -> None:
    from ai_platform.rollout import cluster_gateway

    image = "registry.example.com/ai-platform/code@sha256:" + "b" * 64
    gateway = {m["kind"]: m for m in cluster_gateway.manifests(load_platform(demo_repo), image)}
    container = gateway["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["readinessProbe"]["timeoutSeconds"] >= 2  # the default 1 s is one GC pause from a flap
    # a replica told to stop drains: it keeps accepting until its endpoint is gone, then finishes what is in
    # flight for gateway.drain_s, inside the pod's grace period
    pod = gateway["Deployment"]["spec"]["template"]["spec"]
    drain = int(container["args"][container["args"].index("--drain-s") + 1])
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert drain == load_platform(demo_repo).config.gateway.drain_s and pre_stop >= 5
    assert pod["terminationGracePeriodSeconds"] > pre_stop + drain
    for manifest in gateway.values():
        validate_strictly(manifest)


def test_a_state_the_gateway_cannot_read_is_refused_and_the_model_keeps_its_last_good_one(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    upstream.default = ANSWER
    roll_out(tmp_path, upstream)
    with client(tmp_path, api_key(tmp_path)) as gateway:
        reload = gateway.app.state.gateway.reload  # type: ignore[attr-defined]
        assert gateway.post("/v1/chat/completions", json=chat(MODEL)).status_code == 200

        roll_out(tmp_path, upstream, color="green", admission={"budget": 10**9})  # over the 1,000,000 cap
        reload()
        reload()  # refused once, not once per reload
        kept = gateway.post("/v1/chat/completions", json=chat(MODEL))
        assert kept.status_code == 200, kept.text
        assert gateway.app.state.gateway.states[MODEL].live.color == "blue"  # type: ignore[attr-defined]
        refused = samples(gateway.get("/metrics").text, "ai_platform_gateway_states_refused_total")
        assert refused == {MODEL: 1.0}

        (state_dir(tmp_path) / f"{MODEL}.json").write_text('{"model": "contract-reviewer", "live": ')  # torn
        reload()
        assert gateway.post("/v1/chat/completions", json=chat(MODEL)).status_code == 200
        refused = samples(gateway.get("/metrics").text, "ai_platform_gateway_states_refused_total")
        assert refused == {MODEL: 2.0}

        roll_out(tmp_path, upstream, color="green")  # a good one again: taken
        reload()
        assert gateway.app.state.gateway.states[MODEL].live.color == "green"  # type: ignore[attr-defined]


def test_one_broken_state_does_not_hide_the_other_models(tmp_path: Path, upstream: FakeUpstream) -> None:
    upstream.default = ANSWER
    roll_out(tmp_path, upstream)
    (state_dir(tmp_path) / f"{OTHER}.json").write_text(json.dumps({"model": OTHER, "live": {"color": 1}}))
    with client(tmp_path, api_key(tmp_path)) as gateway:
        assert gateway.post("/v1/chat/completions", json=chat(MODEL)).status_code == 200
        broken = gateway.post("/v1/chat/completions", json=chat(OTHER))
        assert broken.status_code == 503 and "rollout state is not valid" in broken.json()["error"]["message"]


def test_a_server_too_busy_to_answer_its_health_check_is_not_taken_for_a_dead_one(upstream: FakeUpstream) -> None:
    """Overload is not an outage: a health check without an answer in time changes nothing (seen: under the
    admission benchmark's surge, vLLM's /health took over 2 s and the gateway refused a live model with 503s);
    a check answered 503 does count."""
    from ai_platform.serving.gateway.health import Health
    from ai_platform.serving.gateway.metrics import Metrics
    from ai_platform.serving.state import Color
    from ai_platform.serving.upstream import Upstream

    color = Color("blue", upstream.url, 1, "sha256:" + "a" * 64, "sha256:" + "b" * 64, "", "d")

    async def rounds(health: Health, count: int) -> bool:
        for _ in range(count):
            await health.check([(MODEL, color)])
        await health.upstream.aclose()
        return health.status(MODEL, color).healthy

    health = Health(Upstream(), Metrics(), timeout_s=0.2)
    upstream.health_delay_s = 0.5
    assert asyncio.run(rounds(health, 3)) is True
    upstream.health_delay_s, upstream.healthy = 0.0, False
    assert asyncio.run(rounds(health, 2)) is False
