"""Where each CSV record starts, as a physical line number, without parsing in Python.

DuckDB's CSV reader is fast but numbers *records*: a quoted field spanning lines
counts once, and it mishandles some line ends (a lone CR eats the next byte; a
blank CRLF line merges into the next record). So we find record boundaries
ourselves, vectorized: a line break is inside a quoted field exactly when an odd
number of quote characters precede it. That holds for RFC 4180 quoting (a quote
opens a field, `""` stands for one quote inside it, a quote closes it right
before a delimiter or line break), which `analyze` checks first; a file that
breaks the rule goes to the exact Python reader instead.

A physical line ends at LF, CRLF or a lone CR (Python's universal newlines);
that is what an editor shows as line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LF, CR, QUOTE, COMMA = 10, 13, 34, 44
BLOCK = 1 << 22  # scan in 4 MiB blocks through one reused mask: fresh 100 MB arrays cost more in page faults


@dataclass(frozen=True)
class Layout:
    """The chunks of a CSV file: records and blank lines, in order, as DuckDB numbers them."""

    starts: np.ndarray  # byte offset where each chunk starts
    ends: np.ndarray  # byte offset just past its content (before its line break)
    lines: np.ndarray  # 1-based physical line where it starts
    # The bytes DuckDB should read: LF line breaks only (the original's CRs outside quotes
    # removed or turned into LF, BOM dropped), or None when the content already is that.
    normalized: bytes | None

    def __len__(self) -> int:
        return len(self.starts)


def analyze(data: bytes, start: int) -> Layout | None:
    """The chunk layout of `data` (content from byte `start`, after any BOM), or None if not RFC 4180."""
    if data.find(b"\x00") >= 0:  # DuckDB stops at NUL; the Python reader copes
        return None
    n = len(data)
    arr = np.frombuffer(data, dtype=np.uint8)
    breaks = positions(arr, LF)
    cr = positions(arr, CR) if data.find(b"\r") >= 0 else np.empty(0, dtype=np.int64)
    if len(cr):
        followed = np.zeros(len(cr), dtype=bool)
        inner = cr + 1 < n
        followed[inner] = arr[cr[inner] + 1] == LF
        if not followed.all():  # a lone CR is a line break of its own
            breaks = np.union1d(breaks, cr[~followed])
    quotes = positions(arr, QUOTE)
    if len(quotes):
        if len(quotes) % 2 or not _rfc4180_quotes(arr, quotes, start):
            return None
        outside = (np.searchsorted(quotes, breaks) & 1) == 0
        record_break_index = np.flatnonzero(outside)
    else:
        record_break_index = np.arange(len(breaks))
    record_breaks = breaks[record_break_index]

    starts = np.concatenate((np.array([start], dtype=np.int64), record_breaks + 1))
    ends = np.concatenate((record_breaks, np.array([n], dtype=np.int64)))
    lines = np.concatenate((np.array([1], dtype=np.int64), record_break_index + 2))
    crlf = np.zeros(len(record_breaks), dtype=bool)
    lone_cr = np.zeros(len(record_breaks), dtype=bool)
    if len(cr) and len(record_breaks):
        is_lf = arr[record_breaks] == LF
        before = np.maximum(record_breaks - 1, 0)
        crlf = is_lf & (record_breaks > start) & (arr[before] == CR)
        lone_cr = ~is_lf
        ends[:-1] -= crlf
    if starts[-1] >= n:  # the file ends with a line break: no chunk after it
        starts, ends, lines = starts[:-1], ends[:-1], lines[:-1]

    normalized = None
    if crlf.any() or lone_cr.any():
        buffer = arr[start:].copy()
        buffer[record_breaks[lone_cr] - start] = LF
        normalized = np.delete(buffer, record_breaks[crlf] - 1 - start).tobytes()
    return Layout(starts=starts, ends=ends, lines=lines, normalized=normalized)


def positions(arr: np.ndarray, byte: int) -> np.ndarray:
    """Offsets of every `byte` in `arr`, ascending."""
    mask = np.empty(min(BLOCK, len(arr)), dtype=bool)
    found = [np.empty(0, dtype=np.int64)]
    for offset in range(0, len(arr), BLOCK):
        part = arr[offset : offset + BLOCK]
        np.equal(part, byte, out=mask[: len(part)])
        hits = np.flatnonzero(mask[: len(part)])
        if len(hits):
            found.append(hits + offset)
    return np.concatenate(found) if len(found) > 1 else found[0]


def _rfc4180_quotes(arr: np.ndarray, quotes: np.ndarray, start: int) -> bool:
    """Every quote opens a field, closes one, or is half of a `""` inside one."""
    n = len(arr)
    opening, closing = quotes[0::2], quotes[1::2]
    previous_close = np.concatenate(([-2], closing[:-1]))
    before = arr[np.maximum(opening - 1, 0)]
    opens_field = (opening == start) | _field_edge(before) | (opening - 1 == previous_close)
    next_open = np.concatenate((opening[1:], [-2]))
    after = arr[np.minimum(closing + 1, n - 1)]
    closes_field = (closing == n - 1) | _field_edge(after) | (closing + 1 == next_open)
    return bool(opens_field.all() and closes_field.all())


def _field_edge(chars: np.ndarray) -> np.ndarray:
    edge: np.ndarray = (chars == COMMA) | (chars == LF) | (chars == CR)
    return edge
