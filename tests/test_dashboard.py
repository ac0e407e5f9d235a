"""The Grafana dashboard loads with grafana-foundation-sdk, matches the committed JSON, and every metric it and the
alert rules query is one a real gateway (and a real vLLM server) exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from conftest import MODEL
from gateway_harness import client as gateway
from grafana_foundation_sdk.models.dashboard import Dashboard
from prometheus_client.parser import text_string_to_metric_families

from ai_platform.config import load_platform
from ai_platform.rollout.kubernetes import dashboard_config_map, prometheus_rule
from ai_platform.serving import dashboard

COMMITTED = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "ai-platform.json"
METRIC = re.compile(r"\b(ai_platform_[a-z0-9_]+|vllm:[a-z0-9_:]+)")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
NOT_ON_THE_DASHBOARD = {
    "ai_platform_gateway_switches",
    "ai_platform_gateway_in_flight_requests",
    "ai_platform_gateway_step_duration_seconds",  # where a request's time goes: for benchmarks/gateway_overhead.py
}


def exposed(text: str) -> set[str]:
    """The series names a /metrics text can carry, whether or not a sample was observed yet."""
    return {f.name + s for f in text_string_to_metric_families(text) for s in SUFFIXES.get(f.type, ("",))}


def queried(exprs: list[str]) -> set[str]:
    return {m for expr in exprs for m in METRIC.findall(expr)}


def alert_exprs(demo_repo: Path) -> list[str]:
    platform = load_platform(demo_repo)
    rule = prometheus_rule(platform, platform.model(MODEL))
    return [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]


def test_the_committed_dashboard_is_the_built_one() -> None:
    assert COMMITTED.read_text() == dashboard.text(), (
        "deploy/grafana/ai-platform.json is stale: python -m ai_platform.serving.dashboard > it"
    )


def test_the_dashboard_loads_with_unique_panel_ids_and_query_refs() -> None:
    loaded = json.loads(COMMITTED.read_text())
    model = Dashboard.from_json(loaded)
    assert model.uid == dashboard.UID and model.panels
    assert json.loads(json.dumps(model.to_json(), default=lambda o: o.to_json())) == loaded
    ids = [p["id"] for p in loaded["panels"]]
    assert len(ids) == len(set(ids))
    for panel in loaded["panels"]:
        refs = [t["refId"] for t in panel.get("targets", [])]
        assert len(refs) == len(set(refs)) and all(refs), panel["title"]
    assert {v["name"] for v in loaded["templating"]["list"]} == {"datasource", "model"}


def test_the_config_map_carries_the_dashboard_for_grafanas_sidecar(demo_repo: Path) -> None:
    config_map = dashboard_config_map(load_platform(demo_repo))
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["ai-platform.json"]) == json.loads(COMMITTED.read_text())


def test_every_gateway_metric_queried_exists_and_every_golden_metric_is_shown(tmp_path: Path, demo_repo: Path) -> None:
    with gateway(tmp_path) as client:
        families = exposed(client.get("/metrics").text)
    charted = queried(dashboard.expressions(dashboard.as_json()))
    ours = {m for m in charted | queried(alert_exprs(demo_repo)) if m.startswith("ai_platform_")}
    assert ours <= families, f"queried but not exposed: {sorted(ours - families)}"
    names = {f.name for f in text_string_to_metric_families(client.get("/metrics").text)}
    names = {n for n in names if not n.endswith("_created")}  # prometheus_client's creation times
    shown = {name for name in names if any(m.startswith(name) for m in charted)}
    assert names - shown == NOT_ON_THE_DASHBOARD


@pytest.mark.vllm
@pytest.mark.slow
def test_every_vllm_metric_queried_exists_on_a_real_server(demo_vllm, demo_repo: Path) -> None:
    families = exposed(httpx.get(f"{demo_vllm.base_url}/metrics", timeout=30).text)
    wanted = {m for m in queried(dashboard.expressions(dashboard.as_json()) + alert_exprs(demo_repo)) if "vllm:" in m}
    assert wanted and wanted <= families, f"not exposed by vLLM: {sorted(wanted - families)}"
