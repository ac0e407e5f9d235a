"""Labels that arrive before their generation (normal with several gateway replicas): quarantined for now,
accepted on a later ingest once the generation is logged, quarantined for good after the window."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_feedback_ingest import warehouse

from ai_platform.feedback.checks import CONFLICT, UNKNOWN_FOR_NOW, UNKNOWN_GENERATION
from ai_platform.feedback.ingest import ingest_file
from ai_platform.feedback.pending import retry
from ai_platform.warehouse import Warehouse

HEADER = "generation_id,reviewer,label,comment,labeled_at\n"


def labels(folder: Path, name: str, *rows: str) -> Path:
    path = folder / name
    path.write_text(HEADER + "".join(f"{r}\n" for r in rows), encoding="utf-8")
    return path


def log_generation(wh: Warehouse, generation_id: str) -> None:
    with wh.write() as con:
        con.execute(
            "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, created_at)"
            " VALUES (?, 'contract-reviewer', 'contract_review', 'v1', now())",
            [generation_id],
        )


def state(wh: Warehouse) -> dict[str, object]:
    return {
        "labels": wh.query("SELECT generation_id, label FROM feedback_labels ORDER BY 1")[1],
        "quarantine": wh.query("SELECT source_line, reason FROM feedback_quarantine ORDER BY 1")[1],
        "pending": wh.query("SELECT count(*) FROM feedback_pending")[1][0][0],
        "files": wh.query("SELECT accepted, quarantined, duplicates, rows_in FROM feedback_files")[1],
    }


def test_a_label_before_its_generation_is_accepted_once_the_generation_is_logged(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb", ids=["gen-000"])
    early = labels(
        tmp_path,
        "early.csv",
        "gen-000,ana,correct,,2026-01-05T10:00:00Z",
        "gen-new,ana,missed_risk,,2026-01-05T10:01:00Z",
    )
    report = ingest_file(early, wh)
    assert (report.accepted, report.quarantined) == (1, 1)
    assert state(wh)["quarantine"] == [(3, UNKNOWN_FOR_NOW)] and state(wh)["pending"] == 1

    assert retry(wh).waiting == 1, "still not logged: it keeps waiting"
    log_generation(wh, "gen-new")  # another gateway replica's writer catches up
    retried = retry(wh)
    assert (retried.accepted, retried.waiting) == (1, 0)
    after = state(wh)
    assert after["labels"] == [("gen-000", "correct"), ("gen-new", "missed_risk")]
    assert after["quarantine"] == [] and after["pending"] == 0
    assert after["files"] == [(2, 0, 0, 2)], "the file's rows are still all accounted for"
    assert retry(wh).accepted == 0, "accepted once"


def test_one_still_unknown_after_the_window_is_quarantined_for_good(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb", ids=[])
    ingest_file(labels(tmp_path, "early.csv", "gen-never,ana,correct,,2026-01-05T10:00:00Z"), wh)
    with wh.write() as con:  # a day and an hour later
        con.execute("UPDATE feedback_pending SET first_seen_at = first_seen_at - INTERVAL 25 HOURS")
    assert retry(wh).expired == 1
    assert state(wh)["quarantine"] == [(2, UNKNOWN_GENERATION)] and state(wh)["pending"] == 0


@pytest.mark.parametrize(("stored", "outcome"), [("missed_risk", "duplicate"), ("correct", "conflict")])
def test_a_label_stored_meanwhile_with_the_same_key_decides(tmp_path: Path, stored: str, outcome: str) -> None:
    wh = warehouse(tmp_path / "w.duckdb", ids=[])
    ingest_file(labels(tmp_path, "early.csv", "gen-x,ana,missed_risk,,2026-01-05T10:00:00Z"), wh)
    log_generation(wh, "gen-x")
    later = labels(
        tmp_path, "later.csv", f"gen-x,ana,{stored},,2026-01-05T10:00:00Z", "gen-x,bob,correct,,2026-01-05T11:00:00Z"
    )
    ingest_file(later, wh)  # another reviewer's file, with the same key as the waiting label
    retried = retry(wh)
    assert (retried.duplicates, retried.conflicts) == ((1, 0) if outcome == "duplicate" else (0, 1))
    quarantine = state(wh)["quarantine"]
    assert quarantine == ([] if outcome == "duplicate" else [(2, CONFLICT)])


@pytest.mark.parametrize(("second", "outcome"), [("missed_risk", "duplicate"), ("correct", "conflict")])
def test_two_waiting_labels_with_the_same_key_are_accepted_once(tmp_path: Path, second: str, outcome: str) -> None:
    """Both wait for the same generation: the first to arrive is accepted, the other is a duplicate or a conflict
    (both were accepted, so the key was stored twice and a conflict went unseen)."""
    wh = warehouse(tmp_path / "w.duckdb", ids=[])
    ingest_file(labels(tmp_path, "first.csv", "gen-x,ana,missed_risk,,2026-01-05T10:00:00Z"), wh)
    # the same key written another way (a file with the same bytes would be skipped as already ingested)
    ingest_file(labels(tmp_path, "second.csv", f"gen-x,ana,{second},,2026-01-05T10:00:00+00:00"), wh)
    log_generation(wh, "gen-x")
    retried = retry(wh)
    assert (retried.accepted, retried.duplicates, retried.conflicts) == (
        (1, 1, 0) if outcome == "duplicate" else (1, 0, 1)
    )
    after = state(wh)
    assert after["labels"] == [("gen-x", "missed_risk")], "the first to arrive is the label"
    assert after["quarantine"] == ([] if outcome == "duplicate" else [(2, CONFLICT)])
    assert after["pending"] == 0
    files = wh.query("SELECT source_file, accepted, quarantined, duplicates, rows_in FROM feedback_files ORDER BY 1")[1]
    assert [row[1:] for row in files] == [(1, 0, 0, 1), (0, 1, 0, 1) if outcome == "conflict" else (0, 0, 1, 1)]
    assert retry(wh).accepted == 0, "accepted once"
