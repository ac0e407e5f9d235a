"""Ingest label files into the warehouse: validate every row, keep every row.

Per file: read and hash it once, stage its records (readers.py) outside the
warehouse lock, then one short write transaction validates and writes them
(validate.py) and records the file in `feedback_files`. A file whose sha256 is
already there is not staged. DuckDB's parse of a UTF-8 CSV starts from disk
before the file is read (readers.EarlyParse) and counts only if the file did not
change meanwhile. The counts always satisfy
rows_in == accepted + quarantined + duplicates; that is checked here, not hoped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ai_platform.feedback import formats, readers, validate
from ai_platform.warehouse import Warehouse


@dataclass(frozen=True)
class FileReport:
    """What became of one file's rows."""

    file: str
    sha256: str
    format: str
    rows_in: int
    accepted: int
    quarantined: int
    duplicates: int
    reader: str  # duckdb | python (CSV), jsonl, parquet
    already_ingested: bool = False  # same bytes seen before: not read again, every row a duplicate
    reasons: dict[str, int] = field(default_factory=dict)  # quarantine reason -> rows

    def __post_init__(self) -> None:
        if self.rows_in != self.accepted + self.quarantined + self.duplicates:
            raise AssertionError(f"{self.file}: rows are not conserved: {self}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        counts = f"{self.accepted} accepted, {self.quarantined} quarantined, {self.duplicates} duplicates"
        note = " (already ingested)" if self.already_ingested else ""
        return f"{self.file}: {self.rows_in} rows: {counts}{note}"


def ingest(paths: Iterable[Path], warehouse: Warehouse) -> list[FileReport]:
    """Ingest each file in its own transaction; stops at the first file that cannot be read at all."""
    return [ingest_file(Path(path), warehouse) for path in paths]


def ingest_file(path: Path, warehouse: Warehouse, *, exact_csv: bool = False) -> FileReport:
    """One file. `exact_csv` forces the Python CSV reader (the tests compare it with DuckDB's)."""
    early = None if exact_csv or formats.label_format(path) != ("csv", None) else readers.EarlyParse.start(path)
    try:
        file = formats.read(path)
        with warehouse.write() as con:
            seen = _seen(con, path, file.sha256)
        if seen is not None:
            return seen
        staging = readers.read_csv(file, exact=True) if exact_csv else readers.stage(file, early)
    finally:
        if early is not None:
            early.close()
    source = str(path.resolve())
    with warehouse.write() as con:
        seen = _seen(con, path, file.sha256)  # another process may have ingested it meanwhile
        if seen is not None:
            return seen
        counts = validate.write(con, staging, source, file.sha256)
        con.execute(
            "INSERT INTO feedback_files (sha256, source_file, format, encoding, reader, size_bytes,"
            " rows_in, accepted, quarantined, duplicates) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                file.sha256,
                source,
                file.format,
                file.encoding,
                staging.reader,
                len(file.data),
                counts.rows_in,
                counts.accepted,
                counts.quarantined,
                counts.duplicates,
            ],
        )
    return FileReport(
        file=str(path),
        sha256=file.sha256,
        format=file.format,
        rows_in=counts.rows_in,
        accepted=counts.accepted,
        quarantined=counts.quarantined,
        duplicates=counts.duplicates,
        reader=staging.reader,
        reasons=counts.reasons,
    )


def _seen(con: duckdb.DuckDBPyConnection, path: Path, sha256: str) -> FileReport | None:
    row = con.execute("SELECT format, reader, rows_in FROM feedback_files WHERE sha256 = ?", [sha256]).fetchone()
    if row is None:
        return None
    fmt, reader, rows_in = row
    return FileReport(
        file=str(path),
        sha256=sha256,
        format=fmt,
        rows_in=rows_in,
        accepted=0,
        quarantined=0,
        duplicates=rows_in,
        reader=reader,
        already_ingested=True,
    )
