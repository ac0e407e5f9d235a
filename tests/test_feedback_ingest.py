"""Label ingestion: real files, real DuckDB. Every row read is accepted, quarantined or a duplicate."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ai_platform.demo.reviewers import write_labels
from ai_platform.errors import (
    FeedbackError,
    LabelEncodingError,
    LabelFormatError,
    LabelHeaderError,
    UnreadableLabelFileError,
)
from ai_platform.feedback import formats, readers
from ai_platform.feedback.checks import UNKNOWN_FOR_NOW, row_checks
from ai_platform.feedback.formats import FIELDS
from ai_platform.feedback.ingest import FileReport, ingest, ingest_file
from ai_platform.feedback.readers import read_csv
from ai_platform.warehouse import Warehouse

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"
KNOWN = [f"gen-{i:03d}" for i in range(300)]

HEADER, ACCEPT, DUPLICATE = "header", "accepted", "duplicate"
WIDTH = "wrong number of fields"
CONFLICT = "conflicts with an earlier label (same generation_id, reviewer, labeled_at)"


def warehouse(path: Path, ids: list[str] = KNOWN) -> Warehouse:
    wh = Warehouse(path, lock_timeout_s=30)
    with wh.write() as con:
        if ids:
            con.executemany(
                "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, created_at)"
                " VALUES (?, 'contract-reviewer', 'contract_review', ?, TIMESTAMPTZ '2026-01-01 00:00:00+00')",
                [[gid, f"v{int(gid[-1]) % 2 if gid[-1].isdigit() else 0}"] for gid in ids],
            )
    return wh


@dataclass(frozen=True)
class Record:
    text: str  # the record as written, without its line break
    end: str  # its line break: \r\n, \n, \r, or "" at the end of the file
    expect: str  # HEADER, ACCEPT, DUPLICATE or the quarantine reason; "" for a blank line
    gid: str = ""


def assemble(records: list[Record]) -> tuple[bytes, list[tuple[Record, int]]]:
    """The file's bytes (UTF-8 with BOM) and each record with the physical line it starts on."""
    text, line, placed = "\ufeff", 1, []
    for record in records:
        placed.append((record, line))
        text += record.text + record.end
        inner = record.text.replace("\r\n", "\n").replace("\r", "\n").count("\n")
        line += inner + (1 if record.end else 0)
    return text.encode("utf-8"), placed


def good(i: int, end: str = "\n", reviewer: str = "ana") -> Record:
    gid = KNOWN[i]
    return Record(f"{gid},{reviewer},correct,,2026-01-{1 + i % 28:02d}T09:{i % 60:02d}:00Z", end, ACCEPT, gid)


def hostile(*, malformed_quoting: bool) -> list[Record]:
    """A BOM, mixed CRLF/LF/CR line ends, blank lines, bad labels and dates, unknown ids,
    duplicates and conflicts, wrong widths, multi-line quoted comments, and ~10% garbage lines."""
    ends = ["\r\n", "\n", "\n", "\r\n", "\r"]
    rows = [Record("generation_id,reviewer,label,comment,labeled_at", "\r\n", HEADER)]
    rows += [good(i, ends[i % len(ends)]) for i in range(200)]
    rows += [
        Record('gen-200,bob, Missed_Risk ,"cap, uncapped",2026-01-05T10:01:00.123+08:00', "\n", ACCEPT, "gen-200"),
        Record(
            'gen-201,bob,false_positive,"line one\r\nline two, ""quoted""",2026-01-05t10:02:00z',
            "\r\n",
            ACCEPT,
            "gen-201",
        ),
        Record("gen-202,bob,correct,复核：赔偿上限条款遗漏,2026-01-05 10:03:00+0000", "\n", ACCEPT, "gen-202"),
        Record("gen-203,bob,correct,,2026-01-05T10:04Z,,", "\n", ACCEPT, "gen-203"),  # padded export
        Record("", "\n", ""),
        Record("", "\r\n", ""),
        Record("gen-204,bob,looks fine,,2026-01-05T10:05:00Z", "\n", "unknown label"),
        Record("gen-205,bob,,,2026-01-05T10:05:00Z", "\n", "missing label"),
        Record("gen-206,bob,correct,,2026-01-05T10:06:00", "\n", "labeled_at has no time zone"),
        Record("gen-207,bob,correct,,2026-02-30T10:00:00Z", "\n", "labeled_at is not an ISO 8601 timestamp"),
        Record("gen-208,bob,correct,,05/01/2026", "\r\n", "labeled_at is not an ISO 8601 timestamp"),
        Record("gen-209,bob,correct,,2026-01-05", "\n", "labeled_at is not an ISO 8601 timestamp"),
        Record("gen-210,bob,correct,,2099-01-01T00:00:00Z", "\n", "labeled_at is in the future"),
        Record("gen-211,bob,correct,,", "\n", "missing labeled_at"),
        Record("gen-999,bob,correct,,2026-01-05T10:07:00Z", "\n", UNKNOWN_FOR_NOW),
        Record("canary-case-0001,bob,correct,,2026-01-05T10:07:00Z", "\n", UNKNOWN_FOR_NOW),
        Record(",bob,correct,,2026-01-05T10:08:00Z", "\n", "missing generation_id"),
        Record("gen-212,,correct,,2026-01-05T10:08:00Z", "\n", "missing reviewer"),
        Record("gen-213,bob,correct", "\n", WIDTH),
        Record('gen-214,bob,correct,"a comment\nover two lines",2026-01-05T10:09:00Z,extra', "\n", WIDTH),
        # duplicates: an exact copy, the same instant in another zone; then a conflict
        Record("gen-000,ana,correct,,2026-01-01T09:00:00Z", "\n", DUPLICATE, "gen-000"),
        Record("gen-001,ana,correct,,2026-01-02T10:01:00+01:00", "\n", DUPLICATE, "gen-001"),
        Record("gen-002,ana,missed_risk,,2026-01-03T09:02:00Z", "\n", CONFLICT, "gen-002"),
        Record("gen-003,ana,correct,second thoughts,2026-01-04T09:03:00Z", "\r", CONFLICT, "gen-003"),
    ]
    garbage = [
        Record("lorem ipsum dolor sit amet", "\n", WIDTH),
        Record("   ", "\n", WIDTH),
        Record("#####", "\r\n", WIDTH),
        Record("gen-1;bob;correct;;2026-01-05T10:00:00Z", "\n", WIDTH),
        Record(",,,,", "\n", "missing generation_id"),
        Record("NULL,NULL,NULL,NULL,NULL", "\n", "unknown label"),
        Record("\t", "\n", WIDTH),
        Record("a,b,c,d,e,f,g,h", "\n", WIDTH),
    ]
    for i in range(24):  # ~10% of the lines
        rows.insert(10 + i * 9, garbage[i % len(garbage)])
    if malformed_quoting:
        rows.append(Record('gen-215,bob,"correct"x,,2026-01-05T10:10:00Z', "\n", "malformed CSV quoting"))
    rows.append(good(250, end=""))  # the last line has no line break
    return rows


def tables(wh: Warehouse) -> tuple[list[tuple], list[tuple]]:
    _, quarantine = wh.query(
        "SELECT source_file, source_sha256, source_line, reason, raw FROM feedback_quarantine ORDER BY source_line"
    )
    _, labels = wh.query(
        "SELECT generation_id, reviewer, label, comment, labeled_at, source_file, source_line, source_sha256"
        " FROM feedback_labels ORDER BY source_line"
    )
    return quarantine, labels


def check_conserved(path: Path, records: list[Record], report: FileReport, wh: Warehouse) -> None:
    data, placed = assemble(records)
    assert path.read_bytes() == data
    rows = [(r, line) for r, line in placed if r.expect not in (HEADER, "")]
    outcome = {k: sum(1 for r, _ in rows if r.expect == k) for k in (ACCEPT, DUPLICATE)}
    assert report.rows_in == len(rows)
    assert report.rows_in == report.accepted + report.quarantined + report.duplicates
    assert (report.accepted, report.duplicates) == (outcome[ACCEPT], outcome[DUPLICATE])
    assert report.quarantined == len(rows) - outcome[ACCEPT] - outcome[DUPLICATE]

    quarantine, labels = tables(wh)
    source = str(path.resolve())
    kept = [(r, line) for r, line in rows if r.expect not in (ACCEPT, DUPLICATE)]
    expected = [(source, report.sha256, line, r.expect, r.text) for r, line in kept]
    assert quarantine == sorted(expected, key=lambda q: q[2])
    assert [(gid, line) for gid, *_, line, _ in labels] == [(r.gid, line) for r, line in rows if r.expect == ACCEPT]
    assert {(f, sha) for *_, f, _, sha in labels} == {(source, report.sha256)}


@pytest.mark.parametrize("malformed", [False, True], ids=["rfc4180", "malformed-quoting"])
def test_hostile_file_conserves_every_row(tmp_path: Path, malformed: bool) -> None:
    records = hostile(malformed_quoting=malformed)
    data, _ = assemble(records)
    path = tmp_path / "hostile.csv"
    path.write_bytes(data)
    wh = warehouse(tmp_path / "w.duckdb")
    report = ingest_file(path, wh)
    # DuckDB's reader takes the RFC 4180 file; a quote inside a field sends it to the exact reader
    assert report.reader == ("python" if malformed else "duckdb")
    check_conserved(path, records, report, wh)
    _, labels = tables(wh)
    by_id = {row[0]: row for row in labels}
    assert by_id["gen-200"][2:4] == ("missed_risk", "cap, uncapped")
    assert by_id["gen-201"][3] == 'line one\r\nline two, "quoted"'
    assert by_id["gen-202"][3] == "复核：赔偿上限条款遗漏"
    assert str(by_id["gen-200"][4].astimezone().isoformat()).startswith("2026-01-05")


def test_both_csv_readers_agree_on_a_hostile_file(tmp_path: Path) -> None:
    data, _ = assemble(hostile(malformed_quoting=False))
    path = tmp_path / "hostile.csv"
    path.write_bytes(data)
    fast, exact = warehouse(tmp_path / "fast.duckdb"), warehouse(tmp_path / "exact.duckdb")
    a, b = ingest_file(path, fast), ingest_file(path, exact, exact_csv=True)
    assert (a.reader, b.reader) == ("duckdb", "python")
    assert (a.rows_in, a.accepted, a.quarantined, a.duplicates, a.reasons) == (
        b.rows_in,
        b.accepted,
        b.quarantined,
        b.duplicates,
        b.reasons,
    )
    assert tables(fast) == tables(exact)


def test_reingest_adds_nothing_and_a_grown_file_adds_only_its_new_rows(tmp_path: Path) -> None:
    records = hostile(malformed_quoting=False)
    data, _ = assemble(records)
    path = tmp_path / "hostile.csv"
    path.write_bytes(data)
    wh = warehouse(tmp_path / "w.duckdb")
    first = ingest_file(path, wh)
    before = tables(wh)

    again = ingest_file(path, wh)
    assert again.already_ingested and again.sha256 == first.sha256
    assert (again.rows_in, again.accepted, again.quarantined, again.duplicates) == (first.rows_in, 0, 0, first.rows_in)
    copy = tmp_path / "renamed copy.csv"
    shutil.copyfile(path, copy)
    assert ingest_file(copy, wh).already_ingested  # the same bytes under another name
    assert tables(wh) == before

    grown = tmp_path / "hostile-v2.csv"  # the reviewer appended one row and sent the file again
    grown.write_bytes(data + b"\ngen-260,cy,correct,,2026-01-20T08:00:00Z\n")
    report = ingest_file(grown, wh)
    assert not report.already_ingested
    assert (report.rows_in, report.accepted) == (first.rows_in + 1, 1)
    assert report.duplicates == first.accepted + first.duplicates
    assert report.quarantined == first.quarantined  # the same bad rows, now under the new file's sha256
    _, keys = wh.query("SELECT count(*), count(DISTINCT (generation_id, reviewer, labeled_at)) FROM feedback_labels")
    assert keys == [(first.accepted + 1, first.accepted + 1)]
    _, files = wh.query("SELECT count(*), sum(rows_in), sum(accepted + quarantined + duplicates) FROM feedback_files")
    assert files == [(2, first.rows_in * 2 + 1, first.rows_in * 2 + 1)]


def test_conflict_with_a_label_from_an_earlier_file(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    head = "generation_id,reviewer,label,comment,labeled_at\n"
    (tmp_path / "a.csv").write_text(head + "gen-001,ana,correct,fine,2026-01-02T10:00:00Z\n")
    (tmp_path / "b.csv").write_text(
        head + "gen-001,ana,missed_risk,fine,2026-01-02T10:00:00Z\n"  # same key, other label: conflict
        "gen-001,ana,correct,fine,2026-01-02T11:00:00+01:00\n"  # same key and label: duplicate
        "gen-001,ana,missed_risk,on reflection,2026-01-02T12:00:00Z\n"  # a new labeled_at: a new label
    )
    a, b = ingest([tmp_path / "a.csv", tmp_path / "b.csv"], wh)
    assert (a.accepted, b.accepted, b.quarantined, b.duplicates) == (1, 1, 1, 1)
    assert b.reasons == {CONFLICT: 1}
    _, rows = wh.query("SELECT source_line, raw FROM feedback_quarantine")
    assert rows == [(2, "gen-001,ana,missed_risk,fine,2026-01-02T10:00:00Z")]


def test_gb18030_declared_in_the_name(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    text = (
        "generation_id,reviewer,label,comment,labeled_at\r\n"
        "gen-001,王审核,missed_risk,遗漏：赔偿上限条款（第7.2条）,2026-01-06T10:00:00+08:00\r\n"
        "gen-002,王审核,正确,标签不对,2026-01-06T10:01:00+08:00\r\n"
    )
    path = tmp_path / "2026-01-reviewer-wang.gb18030.csv"
    path.write_bytes(text.encode("gb18030"))
    report = ingest_file(path, wh)
    assert (report.rows_in, report.accepted, report.quarantined) == (2, 1, 1)
    _, rows = wh.query("SELECT reviewer, comment FROM feedback_labels")
    assert rows == [("王审核", "遗漏：赔偿上限条款（第7.2条）")]
    _, rows = wh.query("SELECT source_line, reason, raw FROM feedback_quarantine")
    assert rows == [(3, "unknown label", "gen-002,王审核,正确,标签不对,2026-01-06T10:01:00+08:00")]

    undeclared = tmp_path / "2026-01-reviewer-wang.csv"  # the same bytes, without the declaration
    undeclared.write_bytes(text.encode("gb18030"))
    with pytest.raises(LabelEncodingError, match=r"line 2: not valid UTF-8; a GB18030 file must say so in its name"):
        ingest_file(undeclared, wh)
    bad = tmp_path / "broken.gb18030.csv"
    bad.write_bytes(text.encode("gb18030") + b"\x81\n")
    with pytest.raises(LabelEncodingError, match="not valid GB18030"):
        ingest_file(bad, wh)


def test_parquet(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    table = pa.table(
        {
            "Generation_ID": ["gen-001", "gen-002", "gen-999", "gen-003"],
            "reviewer": ["ana", "ana", "ana", None],
            "label": ["correct", "false_positive", "correct", "correct"],
            "labeled_at": pa.array(
                [1767693600_000_000, 1767693660_000_000, 1767693720_000_000, 1767693780_000_000],
                pa.timestamp("us", tz="UTC"),
            ),
        }
    )  # no comment column: it is optional
    pq.write_table(table, tmp_path / "labels.parquet")
    report = ingest_file(tmp_path / "labels.parquet", wh)
    assert (report.format, report.rows_in, report.accepted, report.quarantined) == ("parquet", 4, 2, 2)
    _, rows = wh.query("SELECT source_line, reason FROM feedback_quarantine ORDER BY 1")
    assert rows == [(3, UNKNOWN_FOR_NOW), (4, "missing reviewer")]  # row numbers, from 1
    _, raw = wh.query("SELECT raw FROM feedback_quarantine WHERE source_line = 3")
    assert json.loads(raw[0][0])["Generation_ID"] == "gen-999"

    naive = table.set_column(3, "labeled_at", table["labeled_at"].cast(pa.timestamp("us")))
    naive = naive.set_column(0, "Generation_ID", pa.array(["gen-010", "gen-011", "gen-012", "gen-013"]))
    pq.write_table(naive, tmp_path / "naive.parquet")
    report = ingest_file(tmp_path / "naive.parquet", wh)
    assert report.reasons == {"labeled_at has no time zone": 3, "missing reviewer": 1}

    pq.write_table(pa.table({"generation_id": ["g"], "label": ["correct"]}), tmp_path / "narrow.parquet")
    with pytest.raises(LabelHeaderError, match="missing reviewer, labeled_at"):
        ingest_file(tmp_path / "narrow.parquet", wh)
    (tmp_path / "fake.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(UnreadableLabelFileError, match="not a readable Parquet file"):
        ingest_file(tmp_path / "fake.parquet", wh)


def test_jsonl_with_bad_rows(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    lines = [
        '{"generation_id": "gen-001", "reviewer": "ana", "label": "correct", "comment": null,'
        ' "labeled_at": "2026-01-06T10:00:00Z"}',
        "",
        '{"generation_id": "gen-002", "reviewer": "ana", "label": "missed_risk",'
        ' "labeled_at": "2026-01-06T10:01:00Z"}\r',
        "{not json",
        '["gen-003", "ana", "correct"]',
        '{"generation_id": 4, "reviewer": "ana", "label": "correct", "labeled_at": "2026-01-06T10:02:00Z"}',
        '{"generation_id": "gen-005", "reviewer": "ana", "label": "correct", "labeled_at": "2026-01-06T10:03:00Z",'
        ' "model": "m"}',
        '{"generation_id": "gen-006", "reviewer": "ana", "label": "looks fine", "labeled_at": "2026-01-06T10:04:00Z"}',
        "   ",
    ]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = ingest_file(path, wh)
    assert (report.rows_in, report.accepted, report.quarantined) == (7, 2, 5)
    _, rows = wh.query("SELECT source_line, reason FROM feedback_quarantine ORDER BY 1")
    assert rows == [
        (4, "not valid JSON"),
        (5, "not a JSON object"),
        (6, "field is not a string"),
        (7, "unknown field"),
        (8, "unknown label"),
    ]
    _, rows = wh.query("SELECT generation_id, source_line FROM feedback_labels ORDER BY 2")
    assert rows == [("gen-001", 1), ("gen-002", 3)]


def test_the_demo_reviewers_label_files(tmp_path: Path) -> None:
    """As the demo's reviewers send them: reviewer-a's CSV from Excel (with its BOM), the others' JSONL with one
    row that is not a label; the clause classifier's reviewers label a wrong class `incorrect`."""
    rows = [
        {"generation_id": f"gen-{i:03d}", "reviewer": f"reviewer-{'abc'[i % 3]}",
         "label": "incorrect" if i in (0, 5) else "correct", "comment": "",
         "labeled_at": f"2026-02-02T09:{i:02d}:00+00:00"}
        for i in range(12)
    ]  # fmt: skip
    csv_file, jsonl_file = write_labels(tmp_path / "inbox", rows, "0")
    assert csv_file.read_bytes().startswith("\ufeff".encode())

    empty = warehouse(tmp_path / "empty.duckdb", ids=[])  # no generations yet: all unknown, all kept
    reports = ingest([csv_file, jsonl_file], empty)
    assert [(r.rows_in, r.accepted, r.quarantined) for r in reports] == [(4, 0, 4), (9, 0, 9)]
    assert reports[1].reasons == {UNKNOWN_FOR_NOW: 8, "unknown label": 1}

    served = warehouse(tmp_path / "served.duckdb", ids=[f"gen-{i:03d}" for i in range(12)])
    reports = ingest([csv_file, jsonl_file], served)
    assert [(r.rows_in, r.accepted, r.quarantined) for r in reports] == [(4, 4, 0), (9, 8, 1)]
    _, quarantined = served.query("SELECT source_line, reason FROM feedback_quarantine")
    assert quarantined == [(9, "unknown label")]
    _, summary = served.query("SELECT sum(labels), sum(correct), sum(incorrect) FROM label_summary")
    assert summary == [(12, 10, 2)]


def test_files_refused_whole(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    cases: dict[str, tuple[bytes, type[FeedbackError], str]] = {
        "labels.txt": (b"x", LabelFormatError, "not a label file"),
        "empty.csv": (b"", LabelHeaderError, "line 1: expected the header"),
        "blank-first.csv": (
            b"\ngeneration_id,reviewer,label,labeled_at\n",
            LabelHeaderError,
            "line 1: expected the header",
        ),
        "no-header.csv": (
            b"gen-001,ana,correct,,2026-01-06T10:00:00Z\n",
            LabelHeaderError,
            "missing generation_id, reviewer",
        ),
        "extra.csv": (b"generation_id,reviewer,label,labeled_at,model\n", LabelHeaderError, "unknown 'model'"),
        "utf16.csv": ("generation_id\n".encode("utf-16"), LabelFormatError, "UTF-16 is not supported"),
        "gb.jsonl": (b"{}", LabelFormatError, "only CSV may declare"),
    }
    for name, (data, refusal, message) in cases.items():
        target = tmp_path / (name if name != "gb.jsonl" else "labels.gb18030.jsonl")
        target.write_bytes(data)
        with pytest.raises(refusal, match=message):
            ingest_file(target, wh)
    with pytest.raises(UnreadableLabelFileError, match="cannot read"):
        ingest_file(tmp_path / "missing.csv", wh)
    assert wh.query("SELECT count(*) FROM feedback_files")[1] == [(0,)]


def test_views_over_ingested_labels(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    path = tmp_path / "labels.csv"
    path.write_text(
        "generation_id,reviewer,label,labeled_at\n"
        "gen-001,ana,correct,2026-01-05T10:00:00Z\n"  # a Monday
        "gen-002,ana,missed_risk,2026-01-11T23:30:00-01:00\n"  # Monday 00:30 UTC: the next week
        "gen-003,bob,correct,2026-01-06T10:00:00Z\n"
    )
    ingest_file(path, wh)
    _, rows = wh.query(
        "SELECT prompt_version, week::DATE, labels, correct, missed_risk FROM label_summary ORDER BY 1, 2"
    )
    assert [(v, str(w), n, c, m) for v, w, n, c, m in rows] == [
        ("v0", "2026-01-12", 1, 0, 1),
        ("v1", "2026-01-05", 2, 2, 0),
    ]
    _, rows = wh.query("SELECT count(*), count(label) FROM generation_quality")
    assert rows == [(len(KNOWN), 3)]


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
        seen.add(con.execute("SELECT count(*) FROM feedback_labels").fetchone()[0])
        con.close()
        time.sleep(0.01)
    print(opened, *sorted(seen))
    """
)


@pytest.mark.stress
def test_readers_in_other_processes_during_ingests(tmp_path: Path) -> None:
    """An analyst holds the warehouse read-only while an ingest starts; another polls throughout.
    The ingest waits for the holder, and no reader ever sees part of a file."""
    db = tmp_path / "w.duckdb"
    wh = warehouse(db)
    head = "generation_id,reviewer,label,labeled_at\n"
    files = []
    for n in range(6):
        path = tmp_path / f"batch-{n}.csv"
        path.write_text(
            head + "".join(f"gen-{i:03d},r{n},correct,2026-01-06T10:{i % 60:02d}:{i // 60:02d}Z\n" for i in range(250))
        )
        files.append(path)

    code = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); print('held', flush=True)"
    holder = subprocess.Popen(
        [sys.executable, "-c", code + "; time.sleep(2)", str(db)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout and holder.stdout.readline().strip() == "held"
    poller = subprocess.Popen([sys.executable, "-c", READER, str(db), "8"], stdout=subprocess.PIPE, text=True)
    started = time.monotonic()
    first = ingest_file(files[0], wh)
    assert time.monotonic() - started > 0.5  # it waited for the holder, then went ahead
    holder.wait(timeout=10)
    reports = [first]
    for path in files[1:]:
        reports.append(ingest_file(path, wh))
        time.sleep(0.3)
    out, _ = poller.communicate(timeout=60)
    opened, *counts = (int(x) for x in out.split())
    assert [r.accepted for r in reports] == [250] * 6
    assert opened > 5, "the poller should have got in between ingests"
    assert all(count % 250 == 0 for count in counts), counts


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120)


def test_cli_reports_per_file_and_exits_1_only_for_unreadable_files(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    warehouse(db)
    good_file, bad_rows = tmp_path / "good.csv", tmp_path / "bad-rows.csv"
    good_file.write_text("generation_id,reviewer,label,labeled_at\ngen-001,ana,correct,2026-01-06T10:00:00Z\n")
    bad_rows.write_text("generation_id,reviewer,label,labeled_at\ngen-001,ana,nope,2026-01-06T10:00:00Z\nx\n")
    done = run_cli("feedback", "ingest", str(good_file), str(bad_rows), "--warehouse", str(db))
    assert done.returncode == 0, done.stderr
    assert f"{good_file}: 1 rows: 1 accepted, 0 quarantined, 0 duplicates" in done.stdout
    assert f"{bad_rows}: 2 rows: 0 accepted, 2 quarantined, 0 duplicates" in done.stdout
    assert "1  unknown label" in done.stdout and "1  wrong number of fields" in done.stdout

    done = run_cli("feedback", "ingest", str(good_file), str(tmp_path / "nope.csv"), "--warehouse", str(db), "--json")
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "cannot read" in done.stderr and "Traceback" not in done.stderr
    result = json.loads(done.stdout)
    assert result["files"][0]["already_ingested"] is True and result["files"][0]["duplicates"] == 1
    assert result["errors"] == [
        {
            "file": str(tmp_path / "nope.csv"),
            "error": f"{tmp_path / 'nope.csv'}: cannot read: No such file or directory",
        }
    ]


def test_a_label_key_stays_unique_across_files(tmp_path: Path) -> None:
    wh = warehouse(tmp_path / "w.duckdb")
    head = "generation_id,reviewer,label,labeled_at\n"
    for n in range(3):  # overlapping exports of the same labels, one copy each time more
        rows = "".join(f"gen-{i:03d},ana,correct,2026-01-06T10:00:{i % 60:02d}Z\n" for i in range(10 * (n + 1)))
        (tmp_path / f"export-{n}.csv").write_text(head + rows + rows)
    reports = ingest(sorted(tmp_path.glob("export-*.csv")), wh)
    assert [(r.rows_in, r.accepted, r.duplicates) for r in reports] == [(20, 10, 10), (40, 10, 30), (60, 10, 50)]
    _, rows = wh.query("SELECT count(*), count(DISTINCT (generation_id, reviewer, labeled_at)) FROM feedback_labels")
    assert rows == [(30, 30)]


def test_the_migrations_keep_existing_labels_and_quarantine(tmp_path: Path) -> None:
    """0004 and 0005 rebuild feedback_labels and feedback_quarantine without their primary keys;
    rows written before them survive."""
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    from ai_platform.warehouse import migrations

    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " checksum VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    for m in migrations()[:3]:
        con.execute(m.sql)
        con.execute(
            "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)", [m.version, m.name, m.checksum]
        )
    con.execute(
        "INSERT INTO feedback_labels (generation_id, reviewer, label, labeled_at, source_file)"
        " VALUES ('g', 'r', 'correct', TIMESTAMPTZ '2026-01-06 10:00:00+00', 'old.csv')"
    )
    con.execute(
        "INSERT INTO feedback_quarantine (source_file, source_sha256, source_line, reason, raw)"
        " VALUES ('old.csv', 'abc', 7, 'unknown label', 'g,r,meh,,2026-01-06')"
    )
    con.close()
    assert Warehouse(path).migrate()[:2] == [4, 5]
    _, rows = Warehouse(path).query("SELECT generation_id, source_file, source_sha256 FROM feedback_labels")
    assert rows == [("g", "old.csv", None)]
    columns = "source_file, source_sha256, source_line, reason, raw"
    _, rows = Warehouse(path).query(f"SELECT {columns} FROM feedback_quarantine")
    assert rows == [("old.csv", "abc", 7, "unknown label", "g,r,meh,,2026-01-06")]
    _, rows = Warehouse(path).query(
        "SELECT count(*) FROM duckdb_constraints() WHERE table_name = 'feedback_quarantine'"
        " AND constraint_type = 'PRIMARY KEY'"
    )
    assert rows == [(0,)]
    _, rows = Warehouse(path).query("SELECT count(*) FROM label_summary")  # the views still bind
    assert rows == [(0,)]


@pytest.mark.parametrize(
    ("label", "comment", "labeled_at", "expected"),
    [
        (" Missed_Risk ", " ok", "2026-01-06T10:00:00Z", ("missed_risk", " ok", None)),  # comments kept as written
        ("CORRECT", "\u3000", "2026-01-06t10:00:00z", ("correct", None, None)),  # an ideographic space is blank
        ("correct", "\u00a0 ", "2026-01-06 10:00:00.5+08:00", ("correct", None, None)),
        ("correct", "  ", "2026-01-06T10:00+0800", ("correct", None, None)),
        ("false_positive", "复核", " 2026-01-06T10:00:00Z ", ("false_positive", "复核", None)),
        (" Incorrect", None, "2026-01-06T10:00:00Z", ("incorrect", None, None)),  # a classifier's wrong class
        ("meh", None, "2026-01-06T10:00:00Z", ("meh", None, "unknown label")),
        ("correct", None, "2026-01-06T10:00:0 Z", ("correct", None, "labeled_at is not an ISO 8601 timestamp")),
        ("correct", None, "+026-01-06T10:00:00Z", ("correct", None, "labeled_at is not an ISO 8601 timestamp")),
        ("correct", None, "2026-02-30T10:00:00Z", ("correct", None, "labeled_at is not an ISO 8601 timestamp")),
        ("correct", None, "2026-01-06T10:00:00", ("correct", None, "labeled_at has no time zone")),
        ("correct", None, "2026-01-06t10:00", ("correct", None, "labeled_at has no time zone")),
    ],
)
def test_row_checks(label: str, comment: str | None, labeled_at: str, expected: tuple) -> None:
    """The row checks' shortcuts (no trim, lower or upper where a value needs none; GLOB for the
    usual timestamp shape) give what the plain rules give."""
    rows = pa.table(
        {
            "line": [2],
            "generation_id": ["gen-001"],
            "reviewer": ["ana"],
            "label": [label],
            "comment": [comment],
            "labeled_at": [labeled_at],
            "problem": [None],
            "raw": [None],
        },
        schema=readers.STAGE_SCHEMA,
    )
    con = duckdb.connect()
    con.register("fb_rows", rows)
    [(got_label, got_comment, stamp, reason)] = con.sql(
        f"SELECT label, comment, labeled_at, reason FROM ({row_checks('fb_rows')})"
    ).fetchall()
    con.close()
    assert (got_label, got_comment, reason) == expected
    assert (stamp is None) == (reason is not None and "labeled_at" in reason)


def test_a_parse_started_before_the_file_changed_is_not_used(tmp_path: Path) -> None:
    """The DuckDB parse starts before the file is read and hashed; if the file changes in
    between (here: same size, same layout, other values), the staged rows are those hashed."""
    head = "generation_id,reviewer,label,comment,labeled_at\n"
    path = tmp_path / "labels.csv"
    path.write_text(head + "gen-001,ana,correct,,2026-01-02T10:00:00Z\n")
    early = readers.EarlyParse.start(path)
    assert early is not None
    early.result()  # it has parsed the first version
    path.write_text(head + "gen-002,ana,correct,,2026-01-02T10:00:00Z\n")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # coarse clocks
    staging = readers.stage(formats.read(path), early)
    assert staging.reader == "duckdb"
    assert staging.table.column("generation_id").to_pylist() == ["gen-002"]

    unchanged = readers.EarlyParse.start(path)  # the usual case: its parse is the one used
    assert unchanged is not None and unchanged.parses(formats.read(path), list(FIELDS))
    assert readers.stage(formats.read(path), unchanged).table.column("generation_id").to_pylist() == ["gen-002"]


def random_csv(rng: random.Random) -> bytes:
    """Small CSVs of every awkward kind: quoted commas and line breaks, "" escapes, CRLF/LF/CR
    mixed, blank and whitespace lines, wrong widths, BOM, CJK, and now and then broken quoting."""
    plain = ["gen-001", "ana", "correct", "2026-01-06T10:00:00Z", "", "x y", " ", "复核", "NULL"]
    quoted = ["a,b", "multi\nline", "multi\r\nline", 'q""q', "", "x\ry", "\n", "中,文"]
    broken = ['ab"c', '"unterminated', '"x"y']

    def field() -> str:
        roll = rng.random()
        if roll < 0.55:
            return rng.choice(plain)
        if roll < 0.97:
            return '"' + rng.choice(quoted) + '"'
        return rng.choice(broken)

    out = ["\ufeff" if rng.random() < 0.3 else "", "generation_id,reviewer,label,comment,labeled_at"]
    for _ in range(rng.randint(0, 25)):
        out.append(rng.choice(["\n", "\n", "\r\n", "\r"]) if rng.random() < 0.4 else "\n")
        if rng.random() > 0.1:  # else a blank line
            width = 5 if rng.random() < 0.8 else rng.randint(1, 8)
            out.append(",".join(field() for _ in range(width)))
    if rng.random() < 0.6:
        out.append("\n")
    return "".join(out).encode("utf-8")


@pytest.mark.fuzz
def test_both_csv_readers_agree_on_random_files(tmp_path: Path) -> None:
    """DuckDB's reader, where it takes a file, stages exactly what Python's csv module does."""
    taken = 0
    for seed in range(150):
        path = tmp_path / f"r{seed}.csv"
        path.write_bytes(random_csv(random.Random(seed)))
        file = formats.read(path)
        fast, exact = read_csv(file), read_csv(file, exact=True)
        taken += fast.reader == "duckdb"
        rows = []
        for staged in (fast, exact):
            table = staged.table.to_pylist()
            missing = np.array(sorted(r["line"] for r in table if r["raw"] is None), dtype=np.int64)
            raw = dict(zip(missing.tolist(), staged.raw_of(missing), strict=True))
            for r in table:
                r["raw"] = r["raw"] if r["raw"] is not None else raw[r["line"]]
                r.update({f: r[f] or None for f in FIELDS})  # DuckDB reads an empty field as NULL
                r["k"] = r["k"] if r["reason"] is None else None  # only a good row's key is read
            rows.append(sorted(table, key=lambda r: r["line"]))
        assert rows[0] == rows[1], f"seed {seed}: {path.read_bytes()!r}"
    assert taken > 25  # the fast reader did take a fair share of them
