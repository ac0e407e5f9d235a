"""Label files: which format and encoding a file is, and its fields.

Conventions (docs/stages.md, "feedback_labels"):
- The suffix names the format: `.csv`, `.jsonl` (or `.ndjson`), `.parquet`.
- Text is UTF-8, with or without a BOM. A CSV in another encoding declares it in
  its name, before the suffix: `reviews.gb18030.csv` (`gbk` is read as GB18030, its
  superset). A name travels with the file through mail, shares and the inbox,
  needs no second file, and leaves the bytes for Excel exactly as it saved them.
  An undeclared file that is not UTF-8 is refused whole, so it can be renamed and
  dropped again (a renamed file is still new: nothing of it was ingested).
- CSV has a header on line 1 naming the columns, in any order, case-insensitive:
  generation_id, reviewer, label, labeled_at, and optionally comment.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ai_platform.errors import LabelEncodingError, LabelFormatError, LabelHeaderError, UnreadableLabelFileError

FIELDS = ("generation_id", "reviewer", "label", "comment", "labeled_at")
REQUIRED = ("generation_id", "reviewer", "label", "labeled_at")
# `incorrect`: wrong in a way the other two do not name (a classifier's wrong class, a wrong extracted field)
LABELS = ("correct", "missed_risk", "false_positive", "incorrect")

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
ENCODINGS = {"utf-8": "utf-8", "utf8": "utf-8", "gb18030": "gb18030", "gbk": "gb18030"}


@dataclass(frozen=True)
class LabelFile:
    """One label file as read once: its bytes are what gets hashed and parsed."""

    path: Path
    data: bytes
    sha256: str
    format: str  # csv | jsonl | parquet
    encoding: str | None  # utf-8 | gb18030; None for Parquet
    text: bytes  # the content as UTF-8: the bytes themselves when UTF-8, else transcoded (without BOM)
    text_start: int  # where the content starts in `text`: 3 after a UTF-8 BOM left in place, else 0
    signature: tuple[int, int]  # (size, mtime_ns) when read: was the file changed since?

    def unchanged(self) -> bool:
        try:
            stat = self.path.stat()
        except OSError:
            return False
        return (stat.st_size, stat.st_mtime_ns) == self.signature


def label_format(path: Path) -> tuple[str, str | None]:
    """(format, declared encoding or None) from the file name."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise LabelFormatError(f"{path}: not a label file (the name must end in {known})")
    declared = Path(path.stem).suffix.lower().lstrip(".")
    if declared in ENCODINGS:
        return FORMATS[suffix], ENCODINGS[declared]
    try:
        codecs.lookup(declared)
    except LookupError:  # "2026.01.csv": a dot in the name, not a declaration
        return FORMATS[suffix], None
    raise LabelFormatError(f"{path}: encoding {declared!r} is not supported; save it as UTF-8 or GB18030")


def read(path: Path) -> LabelFile:
    """Read, hash and decode a label file; refuse it whole if its encoding is wrong."""
    fmt, declared = label_format(path)
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            data = handle.read()
    except OSError as exc:
        raise UnreadableLabelFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    signature = (stat.st_size, stat.st_mtime_ns)
    with ThreadPoolExecutor(max_workers=1) as pool:  # hashlib releases the GIL: hash while decoding
        digest = pool.submit(lambda: hashlib.sha256(data).hexdigest())
        return _decoded(path, data, fmt, declared, signature, digest)


def _decoded(
    path: Path, data: bytes, fmt: str, declared: str | None, signature: tuple[int, int], digest: Future[str]
) -> LabelFile:
    if fmt == "parquet":
        return LabelFile(path, data, digest.result(), fmt, None, data, 0, signature)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise LabelFormatError(f"{path}: UTF-16 is not supported; save it as CSV UTF-8")
    encoding = declared or "utf-8"
    if encoding == "gb18030" and fmt != "csv":
        raise LabelFormatError(f"{path}: {fmt} is always UTF-8; only CSV may declare another encoding")
    if encoding == "utf-8":
        start = 3 if data.startswith(codecs.BOM_UTF8) else 0
        try:
            _check_utf8(memoryview(data)[start:])
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, start + exc.start) + 1
            raise LabelEncodingError(
                f"{path}: line {line}: not valid UTF-8; a GB18030 file must say so in its name (NAME.gb18030.csv)"
            ) from None
        return LabelFile(path, data, digest.result(), fmt, encoding, data, start, signature)
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LabelEncodingError(f"{path}: line {line}: not valid GB18030, as its name declares") from None
    text_bytes = text.removeprefix("\ufeff").encode("utf-8")
    return LabelFile(path, data, digest.result(), fmt, encoding, text_bytes, 0, signature)


def _check_utf8(data: memoryview) -> None:
    """Raise UnicodeDecodeError (with the offset in `data`) unless it is UTF-8; the text stays bytes.

    Arrow's validator reads the bytes in place, 5x faster than decoding them; only a file
    that fails it is decoded, once, for the exact offset in the message."""
    offsets = pa.py_buffer(np.array([0, len(data)], dtype=np.int64))
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        codecs.decode(data, "utf-8")  # raises with the offset
        raise AssertionError("Arrow refused text that Python decodes as UTF-8") from None


def header_columns(path: Path, header_line: str) -> list[str]:
    """The CSV header's column names (line 1), checked."""
    return check_columns(path, next(csv.reader([header_line]), []), "line 1: the header")


def check_columns(path: Path, columns: list[str], where: str) -> list[str]:
    """Column names, trimmed and lower-cased: every required field once, optionally comment, nothing else."""
    names = [name.strip().lower() for name in columns]
    unknown = [name for name in names if name not in FIELDS]
    missing = [name for name in REQUIRED if name not in names]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if unknown or missing or repeated:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(repr(n) for n in unknown)}")
        if repeated:
            problems.append(f"repeated {', '.join(repeated)}")
        raise LabelHeaderError(
            f"{path}: {where} must name {', '.join(REQUIRED)} and optionally comment ({'; '.join(problems)})"
        )
    return names
