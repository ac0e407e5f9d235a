"""The gateway's own answers, without a model server: OpenAI-shaped errors, /v1/models, /metrics, the generation log."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from gateway_harness import api_key, roll_out
from gateway_harness import client as gateway
from prometheus_client.parser import text_string_to_metric_families

from ai_platform.serving.gateway import access
from ai_platform.serving.gateway.access import BufferedLines
from ai_platform.serving.gateway.generations import GenerationLog
from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.warehouse import Warehouse, generation_row


@pytest.fixture
def client(tmp_path: Path):
    """Two live models whose server is not running: the gateway's own answers must not need one."""
    for model in ("contract-reviewer", "other-model"):
        roll_out(tmp_path, model=model, color="green")
    with gateway(tmp_path, api_key(tmp_path)) as client:
        yield client


@pytest.mark.parametrize("body", ["[]", '"x"', "1", "null"])
@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/completions"])
def test_a_json_body_that_is_not_an_object_is_a_400_in_openai_shape(client, route: str, body: str) -> None:
    reply = client.post(route, content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error" and "JSON object" in error["message"]


def test_an_unknown_model_is_a_404_naming_what_is_live_and_not_where(client) -> None:
    reply = client.post("/v1/chat/completions", json={"model": "gpt-4", "messages": []})
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "contract-reviewer, other-model" in error["message"]
    assert "127.0.0.1" not in reply.text and "green" not in reply.text


def test_an_unreachable_model_server_is_a_503_to_retry_that_does_not_say_where_it_runs(client) -> None:
    reply = client.post("/v1/chat/completions", json={"model": "contract-reviewer", "messages": []})
    assert reply.status_code == 503
    assert reply.json()["error"]["type"] == "service_unavailable"
    assert 1 <= int(reply.headers["Retry-After"]) <= 2
    assert "127.0.0.1" not in reply.text and "green" not in reply.text


def test_models_lists_every_live_model(client) -> None:
    reply = client.get("/v1/models")
    assert reply.status_code == 200
    assert [m["id"] for m in reply.json()["data"]] == ["contract-reviewer", "other-model"]


def test_metrics_parse_and_carry_the_golden_metrics(client) -> None:
    client.post("/v1/chat/completions", json={"model": "gpt-4"})
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    for name in (
        "ai_platform_gateway_requests",
        "ai_platform_gateway_request_duration_seconds",
        "ai_platform_gateway_time_to_first_token_seconds",
        "ai_platform_gateway_in_flight_requests",
        "ai_platform_admission_decisions",
        "ai_platform_admission_weight",
        "ai_platform_guard_actions",
        "ai_platform_gateway_live_color",
        "ai_platform_replies",
        "ai_platform_replies_schema_valid",
        "ai_platform_reply_repetition_ratio",
        "ai_platform_reply_pii_entities",
        "ai_platform_request_injection_score",
        "ai_platform_reply_trust_score",
        "ai_platform_replies_needing_review",
        "ai_platform_generation_log_pending",
        "ai_platform_generation_log_write_failures",
    ):
        assert name in families, name
    live = {s.labels["model"] for s in families["ai_platform_gateway_live_color"].samples}
    assert live == {"contract-reviewer", "other-model"}
    counted = {
        (s.labels["route"], s.labels["status"])
        for s in families["ai_platform_gateway_requests"].samples
        if s.name.endswith("_total")
    }
    assert ("/v1/chat/completions", "404") in counted


def test_every_request_has_one_access_line_and_one_count(client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ai_platform.gateway.access")
    client.post("/v1/prompts/review:run", json={"variables": {"text": "x"}, "model": "contract-reviewer"})
    client.get("/v1/models", headers={"Authorization": "Bearer wrong"})
    client.get("/healthz")
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "ai_platform.gateway.access"]
    assert [(line["route"], line["status"], line["key"]) for line in lines] == [
        ("/v1/prompts/{name}:run", 503, "tester"),  # its model server is not running
        ("/v1/models", 401, None),
        ("/healthz", lines[2]["status"], None),
    ]
    assert lines[0]["path"] == "/v1/prompts/review:run" and lines[0]["model"] == "contract-reviewer"
    assert all(datetime.fromisoformat(line["time"]).tzinfo is not None for line in lines)
    counted = client.app.state.gateway.metrics.registry.get_sample_value(
        "ai_platform_gateway_requests_total",
        {"route": "/v1/prompts/{name}:run", "model": "contract-reviewer", "status": "503"},
    )
    assert counted == 1


def test_looked_up_metric_children_count_where_metrics_reads_them() -> None:
    """Metrics.child keeps each labelled child after its first lookup: the same child the registry renders."""
    metrics = Metrics()
    for _ in range(3):
        metrics.observe("/v1/chat/completions", "m", 200, 0.1, 0.05)
    metrics.admission("m", "admitted", 2)
    labels = {"route": "/v1/chat/completions", "model": "m", "status": "200"}
    assert metrics.registry.get_sample_value("ai_platform_gateway_requests_total", labels) == 3
    assert metrics.registry.get_sample_value("ai_platform_gateway_request_duration_seconds_count", labels) == 3
    assert (
        metrics.registry.get_sample_value(
            "ai_platform_admission_decisions_total", {"model": "m", "decision": "admitted"}
        )
        == 1
    )
    assert metrics.child(metrics.requests, "/v1/chat/completions", "m", "200") is metrics.requests.labels(
        "/v1/chat/completions", "m", "200"
    )


def _access_logger(handler: BufferedLines) -> logging.Logger:
    logger = logging.getLogger(f"test.access.{id(handler)}")
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def test_access_lines_are_written_in_batches_and_all_of_them_at_close() -> None:
    """One write per batch, not a write and a flush per request; what waits is written when the handler closes."""
    stream = io.StringIO()
    handler = BufferedLines(stream)
    logger = _access_logger(handler)
    for i in range(3):
        logger.info('{"n": %d}', i)
    assert stream.getvalue() == "", "the lines wait for a flush"
    handler.close()
    assert [json.loads(line)["n"] for line in stream.getvalue().splitlines()] == [0, 1, 2]


def test_access_lines_are_written_once_enough_wait() -> None:
    stream = io.StringIO()
    handler = BufferedLines(stream, capacity=2)
    logger = _access_logger(handler)
    logger.info("one")
    assert stream.getvalue() == ""
    logger.info("two")
    assert stream.getvalue() == "one\ntwo\n"
    handler.close()


def test_access_lines_are_written_every_interval_without_more_traffic() -> None:
    """A line logged once, with nothing after it, still reaches the stream: the app's flush_every task writes it."""
    stream = io.StringIO()
    handler = BufferedLines(stream)
    level = access.ACCESS.level
    access.ACCESS.addHandler(handler)
    access.ACCESS.setLevel(logging.INFO)
    try:

        async def alone() -> None:
            flushing = asyncio.create_task(access.flush_every(0.05))
            access.ACCESS.info("alone")
            deadline = time.monotonic() + 30  # a generous bound on a loaded machine; the interval is 0.05 s
            while "alone" not in stream.getvalue() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            flushing.cancel()

        asyncio.run(alone())
        assert stream.getvalue() == "alone\n"
    finally:
        access.ACCESS.removeHandler(handler)
        access.ACCESS.setLevel(level)


def _row(generation_id: str, received: datetime) -> list[object]:
    return generation_row(
        generation_id=generation_id,
        model="m",
        prompt_name="p",
        prompt_version="v",
        source="gateway",
        created_at=received,
    )


def _sample(metrics: Metrics, name: str) -> float:
    return metrics.registry.get_sample_value(name) or 0.0


def test_a_failing_writer_keeps_the_rows_retries_and_says_so(tmp_path: Path) -> None:
    """Any failure (here an OSError: the warehouse's folder is a file) is retried; the thread never dies."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    db = str(blocker / "wh.duckdb")
    metrics = Metrics()
    log = GenerationLog(metrics, backoff_s=(0.05, 0.2))
    received = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    log.add(db, _row("gen-1", received))
    deadline = time.monotonic() + 10
    while _sample(metrics, "ai_platform_generation_log_write_failures_total") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sample(metrics, "ai_platform_generation_log_write_failures_total") >= 2, (
        "the failure is retried, and counted each time"
    )
    assert log.thread.is_alive() and _sample(metrics, "ai_platform_generation_log_pending") == 1
    blocker.unlink()
    log.add(db, _row("gen-2", received))
    log.flush(timeout_s=10)
    _, rows = Warehouse(db).query("SELECT generation_id, created_at FROM generations ORDER BY 1")
    assert [r[0] for r in rows] == ["gen-1", "gen-2"]
    assert rows[0][1] == received, "created_at is when the request came in"
    assert _sample(metrics, "ai_platform_generation_log_pending") == 0
