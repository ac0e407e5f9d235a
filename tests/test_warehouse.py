"""The DuckDB warehouse: migrations on open, short transactions, and a reader in another process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from ai_platform.errors import AppliedMigrationChangedError, NoWarehouseYetError, WarehouseBusyError
from ai_platform.warehouse import TABLES, VIEWS, Warehouse, migrations


def test_migrations_applied_on_open(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.write() as con:
        con.execute("SELECT 1")
    _, rows = wh.query("SELECT table_name, table_type FROM information_schema.tables ORDER BY 1")
    kinds = dict(rows)
    assert {t: "BASE TABLE" for t in TABLES}.items() <= kinds.items()
    assert {v: "VIEW" for v in VIEWS}.items() <= kinds.items()
    _, versions = wh.query("SELECT version FROM schema_migrations ORDER BY 1")
    assert [v for (v,) in versions] == [m.version for m in migrations()]


def test_migrate_is_idempotent(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "w.duckdb")
    assert wh.migrate() == [m.version for m in migrations()] and len(migrations()) >= 2
    assert wh.migrate() == []


def test_a_warehouse_migrated_before_a_comment_was_reworded_is_current(tmp_path: Path) -> None:
    """0001's header comment changed after release; warehouses made with the old text keep working."""
    import hashlib
    import subprocess

    old = subprocess.run(
        ["git", "show", "050ca40:ai_platform/migrations/0001_initial.sql"],
        capture_output=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if old.returncode != 0:
        pytest.skip("not a git checkout with the history of 0001_initial.sql")
    path = tmp_path / "w.duckdb"
    Warehouse(path).migrate()
    con = duckdb.connect(str(path))
    con.execute("UPDATE schema_migrations SET checksum = ? WHERE version = 1", [hashlib.sha256(old.stdout).hexdigest()])
    con.close()
    assert Warehouse(path).migrate() == []
    _, rows = Warehouse(path).query("SELECT checksum FROM schema_migrations WHERE version = 1")
    assert rows == [(migrations()[0].checksum,)]


def test_edited_migration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    Warehouse(path).migrate()
    con = duckdb.connect(str(path))
    con.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
    con.close()
    with pytest.raises(AppliedMigrationChangedError, match="was changed after it was applied"):
        Warehouse(path).migrate()


def test_failed_block_rolls_back(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "w.duckdb")
    with pytest.raises(RuntimeError), wh.write() as con:
        con.execute("INSERT INTO trust_models VALUES ('v1', 'lr', '[]', '{}', false, '/x', now(), NULL, NULL)")
        raise RuntimeError("boom")
    assert wh.query("SELECT count(*) FROM trust_models")[1] == [(0,)]


def test_constraints_hold(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "w.duckdb")
    with pytest.raises(duckdb.ConstraintException), wh.write() as con:
        con.execute(
            "INSERT INTO feedback_labels (generation_id, reviewer, label, labeled_at, source_file)"
            " VALUES ('g', 'r', 'meh', now(), 'f.csv')"
        )


def test_views_answer_analyst_questions(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "w.duckdb")
    with wh.write() as con:
        con.execute(
            "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, output, trust_score)"
            " VALUES ('g1', 'm', 'contract_review', 'v1', '{}', 0.9), ('g2', 'm', 'contract_review', 'v1', '{}', 0.2)"
        )
        con.execute(
            "INSERT INTO feedback_labels (generation_id, reviewer, label, labeled_at, source_file) VALUES"
            " ('g1', 'a', 'correct', TIMESTAMPTZ '2026-01-06 10:00:00+00', 'f.csv'),"
            " ('g2', 'a', 'missed_risk', TIMESTAMPTZ '2026-01-07 10:00:00+00', 'f.csv')"
        )
    _, rows = wh.query("SELECT model, prompt_version, labels, correct, missed_risk, correct_rate FROM label_summary")
    assert rows == [("m", "v1", 2, 1, 1, 0.5)]
    _, rows = wh.query("SELECT generation_id, label, trust_score FROM generation_quality ORDER BY 1")
    assert rows == [("g1", "correct", 0.9), ("g2", "missed_risk", 0.2)]


def test_read_of_missing_warehouse_is_clear(tmp_path: Path) -> None:
    with pytest.raises(NoWarehouseYetError, match="no warehouse here yet"):
        Warehouse(tmp_path / "none.duckdb").query("SELECT 1")


READER = textwrap.dedent(
    """
    import sys, time, duckdb
    path, seconds = sys.argv[1], float(sys.argv[2])
    seen, opened, deadline = set(), 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            con = duckdb.connect(path, read_only=True)
        except duckdb.Error:
            time.sleep(0.005)
            continue
        opened += 1
        seen.add(con.execute("SELECT count(*) FROM eval_cases").fetchone()[0])
        con.close()
        time.sleep(0.01)
    print(opened, *sorted(seen))
    """
)


@pytest.mark.stress
def test_reader_in_another_process_never_sees_partial_writes(tmp_path: Path) -> None:
    """An analyst process polls while 30 transactions of 50 rows each are written."""
    path = tmp_path / "w.duckdb"
    wh = Warehouse(path, lock_timeout_s=30)
    wh.migrate()
    reader = subprocess.Popen([sys.executable, "-c", READER, str(path), "6"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    batch = 50
    for run in range(30):
        with wh.write() as con:
            for case in range(batch):  # row by row, so a partial transaction would be visible if it leaked
                con.execute("INSERT INTO eval_cases (run_id, case_id) VALUES (?, ?)", [f"r{run}", f"c{case}"])
        time.sleep(0.02)
    out, _ = reader.communicate(timeout=60)
    opened, *counts = (int(x) for x in out.split())
    assert wh.query("SELECT count(*) FROM eval_cases")[1] == [(30 * batch,)]
    assert opened > 10, "the reader should have got in between writes"
    assert all(count % batch == 0 for count in counts), counts


def hold_open(path: Path, seconds: float) -> subprocess.Popen[str]:
    """An analyst's read-only session in another process, kept open for `seconds`."""
    Warehouse(path).migrate()
    code = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); print('held', flush=True)"
    code += f"; time.sleep({seconds})"
    holder = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout and holder.stdout.readline().strip() == "held"
    return holder


def test_writer_waits_for_a_reader_holding_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    holder = hold_open(path, 2)
    started = time.monotonic()
    with Warehouse(path, lock_timeout_s=30).write() as con:
        con.execute("INSERT INTO eval_cases (run_id, case_id) VALUES ('r', 'c')")
    assert time.monotonic() - started > 0.5  # it did wait, and then succeeded
    holder.wait(timeout=10)
    assert Warehouse(path).query("SELECT count(*) FROM eval_cases")[1] == [(1,)]


def test_writer_gives_up_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    holder = hold_open(path, 5)
    try:
        with (
            pytest.raises(WarehouseBusyError, match="another process held the warehouse"),
            Warehouse(path, lock_timeout_s=0.5).write(),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_a_writer_waits_for_a_reader_in_its_own_process(tmp_path: Path) -> None:
    """A thread's read-only connection (the gateway's champion lookup) and a read-write open in another thread of
    the same process (a rollout's record) conflict in DuckDB 1.5 as two processes do: the writer waits."""
    import threading

    path = tmp_path / "w.duckdb"
    Warehouse(path).migrate()
    reading, release = threading.Event(), threading.Event()

    def reader() -> None:
        with Warehouse(path).read() as con:
            con.execute("SELECT count(*) FROM eval_cases").fetchall()
            reading.set()
            release.wait(timeout=30)

    thread = threading.Thread(target=reader)
    thread.start()
    assert reading.wait(timeout=30)
    threading.Timer(0.5, release.set).start()
    with Warehouse(path, lock_timeout_s=30).write() as con:
        con.execute("INSERT INTO eval_cases (run_id, case_id) VALUES ('r', 'c')")
    thread.join(timeout=30)
    assert Warehouse(path).query("SELECT count(*) FROM eval_cases")[1] == [(1,)]


def test_a_large_batch_goes_in_through_arrow_as_bound_parameters_would_store_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """insert_new hands DuckDB one Arrow table from ARROW_ROWS rows on (the gateway's log batches): the rows
    stored are those the bound parameters store, NULLs, time zones, JSON and non-ASCII text included."""
    import json
    from datetime import UTC, datetime, timedelta, timezone

    from ai_platform.warehouse import file, generation_row, insert_rows

    def rows(n: int) -> list[list[object]]:
        zones = [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))]
        return [
            generation_row(
                generation_id=f"gen-{i:04d}",
                model="m",
                prompt_name="p ☃ 合同",
                prompt_version="v1" if i % 2 else "",
                image_digest=None if i % 4 == 0 else "sha256:" + "a" * 64,
                source="gateway" if i % 5 else "canary",
                input=None if i % 7 == 0 else json.dumps({"input": f'x {i} é \u2028 "q"'}, ensure_ascii=False),
                output="out\n" * (i % 3),
                metrics=json.dumps({"a": i, "b": [1.5, None]}),
                finish_reason=None if i % 6 == 0 else "stop",
                latency_s=i if i % 2 else i + 0.123456789,  # ints and floats in one column
                trust_score=None if i % 3 else 0.5 + i / 1000,
                needs_review=[True, False, None][i % 3],
                created_at=datetime(2026, 12, 1, 9, 30, 0, i * 1000, tzinfo=zones[i % 3]),
            )
            for i in range(n)
        ]

    stored = []
    for arrow_from in (10**9, file.ARROW_ROWS):
        monkeypatch.setattr(file, "ARROW_ROWS", arrow_from)
        warehouse = Warehouse(tmp_path / f"wh-{arrow_from}.duckdb")
        for batch in (rows(50), rows(60), rows(5)):  # the second and third repeat keys: inserted once
            with warehouse.write() as con:
                insert_rows(con, "generations", batch, idempotent=True)
        stored.append(warehouse.query("SELECT * FROM generations ORDER BY generation_id")[1])
    assert len(stored[0]) == 60
    assert stored[0] == stored[1]
