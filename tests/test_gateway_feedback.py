"""POST /v1/feedback: a label is held to the same checks as a label file's rows, and lands in the inbox."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from gateway_harness import api_key
from gateway_harness import client as gateway

from ai_platform.feedback.checks import UNKNOWN_FOR_NOW
from ai_platform.feedback.ingest import ingest
from ai_platform.serving.state import ModelState, save
from ai_platform.warehouse import Warehouse

GOOD = {"generation_id": "gen-1", "reviewer": "ana", "label": "missed_risk", "labeled_at": "2026-12-01T10:00:00Z"}


@pytest.fixture
def client(tmp_path: Path):
    save(tmp_path, ModelState("m", str(tmp_path / "wh.duckdb"), inbox=str(tmp_path / "inbox")))
    with gateway(tmp_path, api_key(tmp_path, "ana", ("label",))) as client:
        yield client


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"label": "meh"}, "unknown label"),
        ({"generation_id": "  "}, "missing generation_id"),
        ({"labeled_at": "2026-12-01T10:00:00"}, "labeled_at has no time zone"),
        ({"labeled_at": "yesterday"}, "labeled_at is not an ISO 8601 timestamp"),
        ({"comment": 7}, "field is not a string"),
        ({"labeled_at": "2099-01-01T00:00:00Z"}, "labeled_at is in the future"),
        ({"score": "1"}, "unknown field: score"),
    ],
)
def test_a_bad_label_is_refused_with_the_reason_a_file_row_would_get(client, tmp_path, change, reason) -> None:
    reply = client.post("/v1/feedback", json={**GOOD, **change})
    assert reply.status_code == 422
    assert reply.json()["error"]["message"] == reason
    assert not (tmp_path / "inbox").exists()


def test_a_good_label_lands_in_the_inbox_and_ingests_like_a_file_row(client, tmp_path) -> None:
    reply = client.post("/v1/feedback", json={**GOOD, "label": " Missed_Risk"})  # a file row is cleaned the same
    assert reply.status_code == 202
    (written,) = (tmp_path / "inbox").iterdir()
    assert json.loads(written.read_text())["generation_id"] == "gen-1"
    (report,) = ingest([written], Warehouse(tmp_path / "wh.duckdb"))
    assert report.rows_in == 1
    _, rows = Warehouse(tmp_path / "wh.duckdb").query("SELECT reason FROM feedback_quarantine")
    assert rows == [(UNKNOWN_FOR_NOW,)]  # the one check that needs the warehouse, at ingestion


def test_the_key_names_the_reviewer_and_a_label_an_hour_ahead_is_refused(client, tmp_path) -> None:
    assert client.post("/v1/feedback", json={**GOOD, "reviewer": "mallory"}).status_code == 202
    (written,) = (tmp_path / "inbox").iterdir()
    assert json.loads(written.read_text())["reviewer"] == "ana", "the key's name, not the body's"
    ahead = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    reply = client.post("/v1/feedback", json={**GOOD, "labeled_at": ahead})
    assert reply.status_code == 422 and "in the future" in reply.json()["error"]["message"]
