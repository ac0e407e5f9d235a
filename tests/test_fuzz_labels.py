"""Label files from outside, fuzzed through `ingest`: a FeedbackError for a file refused whole, else a report
in which every row read is accepted, quarantined or a duplicate; never another exception, never half a file.

Arbitrary bytes under every label suffix, near-valid CSV and JSONL (a real header, then lines drawn from
field soup or random JSON values), real Parquet files with random columns and types, and Parquet files
truncated or with bytes flipped. One warehouse per test: each example checks what its file added to it.
"""

from __future__ import annotations

import io
import json
import string
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from ai_platform.errors import PlatformError
from ai_platform.feedback.ingest import FileReport, ingest
from ai_platform.warehouse import Warehouse

pytestmark = pytest.mark.fuzz

TABLES = ("feedback_labels", "feedback_quarantine", "feedback_pending", "feedback_files")
KNOWN = [f"gen-{i}" for i in range(5)]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    wh = Warehouse(tmp_path_factory.mktemp("wh") / "warehouse.duckdb", lock_timeout_s=30)
    with wh.write() as con:
        con.executemany(
            "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, created_at)"
            " VALUES (?, 'contract-reviewer', 'contract_review', 'v1', TIMESTAMPTZ '2026-01-01 00:00:00+00')",
            [[gid] for gid in KNOWN],
        )
    return wh


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("labels")


def counts(wh: Warehouse) -> dict[str, int]:
    with wh.read() as con:
        return {table: (con.execute(f"SELECT count(*) FROM {table}").fetchone() or (0,))[0] for table in TABLES}


_serial = iter(range(10**9))


def note(outcome: str) -> None:
    """Count an outcome in hypothesis's statistics (--hypothesis-show-statistics), inside a property test."""
    if currently_in_test_context():
        event(outcome)


def check(wh: Warehouse, folder: Path, name: str, data: bytes) -> FileReport | None:
    """Ingest `data` as a file called `name`: refused whole with a PlatformError, or conserved row by row."""
    path = folder / f"{next(_serial)}-{name}"
    path.write_bytes(data)
    before = counts(wh)
    try:
        (report,) = ingest([path], wh)
    except PlatformError as exc:
        assert str(exc), "an error without a message"
        note(f"refused: {type(exc).__name__}")
        assert counts(wh) == before, f"a refused file left rows behind: {exc}"
        return None
    after = counts(wh)
    note("some accepted" if report.accepted else "some duplicates" if report.duplicates else "none kept")
    assert report.rows_in == report.accepted + report.quarantined + report.duplicates
    if report.already_ingested:
        assert after == before
        return report
    assert after["feedback_files"] == before["feedback_files"] + 1
    assert after["feedback_labels"] - before["feedback_labels"] == report.accepted
    assert after["feedback_quarantine"] - before["feedback_quarantine"] == report.quarantined
    assert sum(report.reasons.values()) == report.quarantined
    return report


SUFFIXES = ["x.csv", "x.jsonl", "x.ndjson", "x.parquet", "x.gb18030.csv", "x.gbk.csv", "x.utf8.jsonl"]


@FUZZ
@given(st.sampled_from(SUFFIXES), st.binary(max_size=600))
def test_arbitrary_bytes(warehouse: Warehouse, folder: Path, name: str, data: bytes) -> None:
    check(warehouse, folder, name, data)


@FUZZ
@given(st.sampled_from(SUFFIXES), st.binary(max_size=300))
def test_arbitrary_bytes_after_a_bom(warehouse: Warehouse, folder: Path, name: str, data: bytes) -> None:
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        check(warehouse, folder, name, bom + data)


# ----------------------------------------------------------------------------- CSV

HEADERS = [
    "generation_id,reviewer,label,comment,labeled_at",
    "labeled_at,label,reviewer,generation_id",
    " Generation_ID , REVIEWER ,Label,labeled_at",
    '"generation_id","reviewer","label","comment","labeled_at"',
    "generation_id,reviewer,label,labeled_at,labeled_at",
    "generation_id,reviewer,label",
    "generation_id,reviewer,label,comment,labeled_at,extra",
    "",
    '"generation_id,reviewer',
]
FIELD = st.one_of(
    st.sampled_from([*KNOWN, "gen-unknown", "", "ana", "bo"]),
    st.sampled_from(["correct", "missed_risk", "false_positive", "CORRECT", "wrong", "correct "]),
    st.sampled_from(["2026-01-02T09:00:00Z", "2026-01-02", "2026-13-40T99:00:00Z", "yesterday", "0", "9" * 30]),
    st.sampled_from(['"a,b"', '"multi\nline"', '"q""q"', '"unterminated', 'ab"c', '"x"y', "\x00", "中文"]),
    st.text(alphabet=string.printable + "é中\u2028\ufeff", max_size=12),
)
# What each column holds in a good row; a drawn row mixes these with FIELD's hostile values.
GOOD = {
    "generation_id": st.sampled_from([*KNOWN, "gen-unknown"]),
    "reviewer": st.sampled_from(["ana", "bo", " ana ", "李"]),
    "label": st.sampled_from(["correct", "missed_risk", "false_positive"]),
    "comment": st.one_of(st.none(), st.text(max_size=10)),
    "labeled_at": st.sampled_from(["2026-01-02T09:00:00Z", "2026-01-03 10:04+08:00", "2026-01-02T09:00:00.5Z"]),
}
LINE_END = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])


@st.composite
def value(draw: st.DrawFn, column: str) -> Any:
    """Mostly a good value for the column, sometimes a hostile one."""
    if column in GOOD and draw(st.integers(0, 4)):
        return draw(GOOD[column])
    return draw(FIELD)


def csv_field(text: Any) -> str:
    text = "" if text is None else str(text)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text


@st.composite
def near_valid_csv(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from(HEADERS[:1] * 6 + HEADERS))
    columns = [name.strip(' "').lower() for name in header.split(",")]
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 5)):
            line = ",".join(csv_field(draw(value(column))) for column in columns)
        else:
            line = ",".join(draw(st.lists(FIELD, max_size=8)))  # raw, unquoted: any width, any quoting
        lines.append(draw(LINE_END) + line)
    text = header + "".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig"]))
    return text.encode(encoding, "surrogatepass")


@FUZZ
@given(near_valid_csv())
def test_near_valid_csv(warehouse: Warehouse, folder: Path, data: bytes) -> None:
    check(warehouse, folder, "labels.csv", data)


@FUZZ
@given(near_valid_csv(), st.integers(0, 10**6), st.binary(min_size=1, max_size=4) | st.sampled_from(list(',"\r\n\x00')))
def test_near_valid_csv_with_bytes_spliced_in(
    warehouse: Warehouse, folder: Path, data: bytes, at: int, splice: bytes | str
) -> None:
    at %= len(data) + 1
    splice = splice.encode() if isinstance(splice, str) else splice
    check(warehouse, folder, "labels.csv", data[:at] + splice + data[at:])


@FUZZ
@given(near_valid_csv())
def test_near_valid_csv_declared_gb18030(warehouse: Warehouse, folder: Path, data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    check(warehouse, folder, "labels.gb18030.csv", text.encode("gb18030", "replace"))


# ----------------------------------------------------------------------------- JSONL

JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=10), FIELD)
JSON_VALUE = st.recursive(
    JSON_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
)
KEYS = st.sampled_from(["generation_id", "reviewer", "label", "comment", "labeled_at", "extra", "Label", ""])


@st.composite
def near_valid_row(draw: st.DrawFn) -> dict[str, Any]:
    row = {column: draw(value(column)) for column in GOOD if draw(st.integers(0, 9))}
    for key in draw(st.lists(KEYS, max_size=2)):
        row[key] = draw(st.one_of(FIELD, JSON_VALUE))
    return row


@st.composite
def near_valid_jsonl(draw: st.DrawFn) -> bytes:
    lines = []
    for kind in draw(st.lists(st.sampled_from(["row"] * 6 + ["value", "text"]), max_size=10)):
        if kind == "row":
            lines.append(json.dumps(draw(near_valid_row()), ensure_ascii=draw(st.booleans())))
        elif kind == "value":
            lines.append(json.dumps(draw(JSON_VALUE)))
        else:
            lines.append(draw(st.text(max_size=20)))
    end = draw(LINE_END)
    return end.join(lines).encode("utf-8", "surrogatepass")


@FUZZ
@given(near_valid_jsonl())
def test_near_valid_jsonl(warehouse: Warehouse, folder: Path, data: bytes) -> None:
    check(warehouse, folder, "labels.jsonl", data)


# ----------------------------------------------------------------------------- Parquet

COLUMN_NAMES = st.sampled_from(
    [
        "generation_id",
        "reviewer",
        "label",
        "comment",
        "labeled_at",
        "LABEL",
        "extra",
        "",
        "a b",
        'q"',
        "file_row_number",
    ],
)
COLUMN_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "string": st.one_of(st.none(), FIELD),
    "int64": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    "float64": st.one_of(st.none(), st.floats()),
    "bool": st.one_of(st.none(), st.booleans()),
    "binary": st.one_of(st.none(), st.binary(max_size=8)),
    "timestamp": st.one_of(st.none(), st.integers(-(2**62), 2**62)),
    "list": st.one_of(st.none(), st.lists(st.text(max_size=3), max_size=2)),
    "struct": st.one_of(st.none(), st.fixed_dictionaries({"x": st.one_of(st.none(), st.integers(0, 9))})),
    "map": st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=3), st.integers(0, 9)), max_size=2)),
    "decimal": st.one_of(st.none(), st.integers(-(10**30), 10**30).map(lambda i: Decimal(i).scaleb(-2))),
    "date": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
    "time": st.one_of(st.none(), st.integers(0, 86_399_999_999)),
    "dictionary": st.one_of(st.none(), FIELD),
    "null": st.none(),
}
ARROW_TYPES = {
    "string": pa.string(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "list": pa.list_(pa.string()),
    "struct": pa.struct([("x", pa.int64())]),
    "map": pa.map_(pa.string(), pa.int64()),
    "decimal": pa.decimal128(34, 2),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
    "null": pa.null(),
}


@st.composite
def parquet_files(draw: st.DrawFn) -> bytes:
    good = draw(st.booleans())  # the label columns as text, mostly good values; else anything
    names = list(GOOD) if good else draw(st.lists(COLUMN_NAMES, max_size=7))
    rows = draw(st.integers(0, 6))
    columns = {}
    for name in names:
        kind = "string" if good and draw(st.integers(0, 6)) else draw(st.sampled_from(sorted(COLUMN_VALUES)))
        strategy = value(name) if kind == "string" else COLUMN_VALUES[kind]
        values = draw(st.lists(strategy, min_size=rows, max_size=rows))
        if kind == "dictionary":
            columns[name] = pa.array(values, pa.string()).dictionary_encode()
        else:
            columns[name] = pa.array(values, ARROW_TYPES[kind])
    table = pa.Table.from_arrays(list(columns.values()), names=list(columns)) if columns else pa.table({})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


@FUZZ
@given(parquet_files())
def test_parquet_with_random_columns(warehouse: Warehouse, folder: Path, data: bytes) -> None:
    check(warehouse, folder, "labels.parquet", data)


@FUZZ
@given(parquet_files(), st.data())
def test_parquet_truncated_or_flipped(warehouse: Warehouse, folder: Path, data: bytes, draw: st.DataObject) -> None:
    if draw.draw(st.booleans()):
        data = data[: draw.draw(st.integers(0, len(data)))]
    else:
        mutable = bytearray(data)
        for _ in range(draw.draw(st.integers(1, 4))):
            mutable[draw.draw(st.integers(0, len(mutable) - 1))] ^= draw.draw(st.integers(1, 255))
        data = bytes(mutable)
    check(warehouse, folder, "labels.parquet", data)


@FUZZ
@given(st.sampled_from([1, 100, 5_000, 100_000]), st.sampled_from(["[", '{"a":', '{"generation_id":']))
def test_deeply_nested_json_lines_are_quarantined(warehouse: Warehouse, folder: Path, depth: int, opener: str) -> None:
    closer = {"[": "]"}.get(opener, "}")
    line = opener * depth + "null" + closer * depth
    report = check(warehouse, folder, "deep.jsonl", (line + "\n").encode())
    assert report is not None and report.rows_in == 1
    if not report.already_ingested:
        assert report.quarantined == 1, report


@pytest.mark.parametrize(
    ("stamp", "accepted"),
    [
        ("2026-01-02T09:00:00+14:00", True),
        ("2026-01-02T09:00:00-12:00", True),
        ("2026-01-02T09:00:00+0530", True),
        ("2026-01-02T09:00:00+23:59", True),
        ("2026-01-02T09:00:00+24:00", False),
        ("2026-01-02T09:00:00+99:00", False),
        ("2026-01-02T09:00:00+00:60", False),
        ("2026-01-02T09:00:00+00:99", False),
    ],
)
def test_a_zone_offset_beyond_a_day_is_not_a_time(
    warehouse: Warehouse, folder: Path, stamp: str, accepted: bool
) -> None:
    """RFC 3339 offsets are at most 23:59; DuckDB reads +99:00 as 99 hours and would shift the label by four days."""
    row = {"generation_id": KNOWN[0], "reviewer": f"tz-{stamp}", "label": "correct", "labeled_at": stamp}
    report = check(warehouse, folder, "zone.jsonl", json.dumps(row).encode())
    assert report is not None
    assert (report.accepted, report.reasons) == (
        (1, {}) if accepted else (0, {"labeled_at is not an ISO 8601 timestamp": 1})
    )
