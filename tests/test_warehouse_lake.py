"""The production warehouse profile: DuckLake with its catalog in a real PostgreSQL (started by the `postgres`
fixture). Same migrations and views as the DuckDB file; writers never wait on an analyst's long read."""

from __future__ import annotations

import json
import multiprocessing
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_feedback_ingest import assemble, check_conserved, hostile

from ai_platform.feedback.ingest import ingest_file
from ai_platform.warehouse import TABLES, VIEWS, generation_row, insert_generations, migrations
from ai_platform.warehouse.ducklake import Lake, ddl, extension

ROOT = Path(__file__).resolve().parent.parent
WRITERS, BATCHES, ROWS = 3, 10, 10


def generation(generation_id: str) -> list[object]:
    return generation_row(
        generation_id=generation_id,
        model="contract-reviewer",
        prompt_name="contract_review",
        prompt_version="v1",
        source="gateway",
        created_at=datetime.now(UTC),
    )


def test_ddl_drops_only_what_ducklake_cannot_hold() -> None:
    (statement,) = ddl(
        "CREATE TABLE t (a VARCHAR PRIMARY KEY, b INTEGER NOT NULL CHECK (b > 0), c VARCHAR UNIQUE,"
        " d TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (a, b)) -- a comment"
    )
    assert "PRIMARY KEY" not in statement and "CHECK" not in statement and "UNIQUE" not in statement
    assert "b INT NOT NULL" in statement and "DEFAULT NOW()" in statement.upper()


def test_the_same_migrations_and_views_on_the_lake(lake: Lake) -> None:
    assert lake.migrate() == [m.version for m in migrations()]
    assert lake.migrate() == []
    with lake.read() as con:
        names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert set(TABLES) | set(VIEWS) <= names


def test_the_sql_command_and_a_plain_duckdb_attach_see_the_same_views(lake: Lake) -> None:
    with lake.write() as con:
        insert_generations(con, [generation("gen-1"), generation("gen-2")])
        con.execute(
            "INSERT INTO feedback_labels (generation_id, reviewer, label, labeled_at, source_file, source_line)"
            " VALUES ('gen-1', 'ana', 'correct', now(), 'f.csv', 2)"
        )
    query = "SELECT generation_id, label FROM generation_quality ORDER BY generation_id"
    done = subprocess.run(
        [sys.executable, "-m", "ai_platform.cli", "sql", "--warehouse", lake.catalog, "--json", query],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"generation_id": "gen-1", "label": "correct"},
        {"generation_id": "gen-2", "label": None},
    ]
    plain = duckdb.connect()  # what the README tells an analyst to type
    plain.execute(f"LOAD '{extension('duckdb_extension_ducklake')}'")
    plain.execute(f"LOAD '{extension('duckdb_extension_postgres_scanner')}'")
    plain.execute(f"ATTACH '{lake.catalog}' AS lake (READ_ONLY)")
    plain.execute("USE lake")
    assert plain.execute(query).fetchall() == [("gen-1", "correct"), ("gen-2", None)]


def write(catalog: str, writer: int, finished: multiprocessing.Queue) -> None:
    lake = Lake(catalog)
    for batch in range(BATCHES):
        with lake.write() as con:
            insert_generations(con, [generation(f"gen-{writer}-{batch}-{i}") for i in range(ROWS)])
    finished.put(writer)


def analyse(catalog: str, hold_s: float, writers_done: Any, seen: multiprocessing.Queue) -> None:
    """An analyst's read transaction, held at least `hold_s` and until every writer has committed."""
    with Lake(catalog).read() as con:
        con.begin()
        first = con.execute("SELECT count(*) FROM generations").fetchone()
        seen.put("holding")
        time.sleep(hold_s)
        committed = writers_done.wait(timeout=300)  # a writer that waited on this read would never set it
        again = con.execute("SELECT count(*) FROM generations").fetchone()
        con.commit()
    seen.put((committed, first, again))


@pytest.mark.stress
def test_writers_never_wait_on_an_analyst_and_nothing_is_lost(lake: Lake, tmp_path: Path) -> None:
    lake.migrate()
    with lake.write() as con:  # the generations the hostile label file refers to
        insert_generations(con, [generation(f"gen-{i:03d}") for i in range(300)])
    records = hostile(malformed_quoting=False)
    data, _ = assemble(records)
    labels = tmp_path / "hostile.csv"
    labels.write_bytes(data)

    spawn = multiprocessing.get_context("spawn")
    finished, seen, writers_done = spawn.Queue(), spawn.Queue(), spawn.Event()
    analyst = spawn.Process(target=analyse, args=(lake.catalog, 10.0, writers_done, seen))
    analyst.start()
    assert seen.get(timeout=60) == "holding"
    writers = [spawn.Process(target=write, args=(lake.catalog, w, finished)) for w in range(WRITERS)]
    for process in writers:
        process.start()
    report = ingest_file(labels, lake)  # the label ingest runs meanwhile, in this process
    for _ in writers:
        finished.get(timeout=300)
    writers_done.set()
    committed, first, again = seen.get(timeout=60)
    for process in [*writers, analyst]:
        process.join(timeout=60)
        assert process.exitcode == 0

    assert committed, "every writer and the ingest committed while the analyst held its read"
    assert first == again, "the analyst kept one snapshot"
    _, rows = lake.query("SELECT count(*) FROM generations WHERE generation_id LIKE 'gen-_-%'")
    assert rows[0][0] == WRITERS * BATCHES * ROWS
    check_conserved(labels, records, report, lake)


def test_maintenance_compacts_and_keeps_time_travel_within_the_window(lake: Lake) -> None:
    for batch in range(5):  # five small inserts: inlined in the catalog, then written out together
        with lake.write() as con:
            insert_generations(con, [generation(f"gen-m{batch}-{i}") for i in range(3)])
    with lake.read() as con:
        snapshots = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()
    done = lake.maintain(keep_days=7)
    assert done["flushed"] >= 1 and set(done) == {"flushed", "merged", "expired", "deleted"}
    _, rows = lake.query("SELECT count(*) FROM generations")
    assert rows == [(15,)]
    assert snapshots is not None
    _, then = lake.query(f"SELECT count(*) FROM generations AT (VERSION => {snapshots[0] - 1})")
    assert then == [(12,)], "a snapshot inside the window still answers"


def test_the_maintenance_job_runs_on_the_platforms_warehouse(instance, own_demo_repo: Path) -> None:
    from definitions import defs

    result = defs.resolve_job_def("maintain_warehouse").execute_in_process(instance=instance)
    assert result.success
    (materialized,) = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    assert materialized.step_key == "maintain"


def test_the_analysts_duckdb_cli_opens_either_profile(lake: Lake, tmp_path: Path) -> None:
    from ai_platform.warehouse import Warehouse

    file = Warehouse(tmp_path / "w.duckdb")
    for warehouse in (lake, file):
        with warehouse.write() as con:
            insert_generations(con, [generation("gen-cli")])
        printed = subprocess.run(
            [
                sys.executable,
                "-m",
                "ai_platform.cli",
                "warehouse",
                "shell",
                "--print",
                "--warehouse",
                warehouse.location,
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout
        argv = [*shlex.split(printed), "-csv", "-noheader", "-c", "SELECT generation_id FROM generations"]
        assert Path(argv[0]).name == "duckdb"
        answered = subprocess.run(argv, capture_output=True, text=True, check=True)
        assert answered.stdout.split() == ["gen-cli"]


def test_a_label_before_its_generation_on_the_lake(lake: Lake, tmp_path: Path) -> None:
    from test_feedback_pending import labels, log_generation, state

    from ai_platform.feedback.pending import retry

    early = labels(tmp_path, "early.csv", "gen-late,ana,correct,,2026-01-05T10:00:00Z")
    assert ingest_file(early, lake).quarantined == 1
    log_generation(lake, "gen-late")
    assert retry(lake).accepted == 1
    assert state(lake) == {"labels": [("gen-late", "correct")], "quarantine": [], "pending": 0, "files": [(1, 0, 0, 1)]}
