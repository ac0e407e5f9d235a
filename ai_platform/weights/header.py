"""Strict safetensors header validation, with an error type per broken rule.

Format: 8 bytes little-endian u64 N, then N bytes of UTF-8 JSON (may be padded
with trailing spaces), then the data buffer. The header must start with `{`:
the reference reader also skips leading whitespace, but no writer emits it and
other readers refuse it, so we refuse it too, saying why (a file that loads in
one place and not another is how two readers come to disagree). The JSON maps tensor names to
`{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the data
buffer) plus an optional `"__metadata__"` of string -> string. We enforce at
least every rule the reference reader does, and a few it leaves implicit:
offsets must tile the buffer exactly, in order, with no gap, no overlap and no
trailing bytes (a polyglot file is refused), and JSON keys must be unique.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ai_platform.errors import (
    HeaderEncodingError,
    HeaderSizeError,
    MetadataError,
    OffsetLayoutError,
    SafetensorsError,
    TensorEntryError,
    TensorSizeError,
)
from ai_platform.weights.files import open_regular

MAX_HEADER_BYTES = 100_000_000  # the reference reader's limit
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E5M2FNUZ": 8,  # the AMD (MI300) float8 variants: no negative zero, NaN at 0x80
    "F8_E4M3FNUZ": 8,
    "F8_E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}
U64_MAX = 2**64 - 1
JSON_SPACE = " \t\n\r"
LEADING_SPACE = (
    "header does not start with '{': it starts with whitespace, which the safetensors library skips but its writer"
    " never emits and other readers refuse, so such a file loads in some places and not in others;"
    " only trailing spaces may pad a header"
)


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int  # absolute file offsets of the tensor's bytes
    end: int


@dataclass(frozen=True)
class Header:
    header_bytes: int  # N
    data_start: int  # 8 + N
    file_size: int
    tensors: tuple[TensorInfo, ...]  # in offset order
    metadata: dict[str, str]


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise HeaderEncodingError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _parse_int(literal: str) -> int | float:
    # Negative literals (including "-0") stay floats so they fail the unsigned checks, as the
    # reference reader refuses them; digits past U64 range are refused before int() sees them.
    if literal.startswith("-"):
        return float(literal)
    if len(literal) > 20:
        raise ValueError(f"integer {literal[:20]}... exceeds 64 bits")
    return int(literal)


def _encodable(value: object) -> None:
    """Every string must encode back to UTF-8 (JSON escapes can spell lone surrogates)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise HeaderEncodingError(f"string {value!r} holds a lone surrogate escape") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _encodable(key)
            _encodable(item)
    elif isinstance(value, list):
        for item in value:
            _encodable(item)


def _is_uint(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U64_MAX


def parse_header(prefix: bytes, file_size: int, name: str = "<bytes>") -> Header:
    """Validate a header given the file's first bytes (at least 8 + N of them) and its size."""
    try:
        return _parse(prefix, file_size)
    except SafetensorsError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _parse(prefix: bytes, file_size: int) -> Header:
    if file_size < 8 or len(prefix) < 8:
        raise HeaderSizeError(f"file is {file_size} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n > MAX_HEADER_BYTES:
        raise HeaderSizeError(f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
    if 8 + n > file_size:
        raise HeaderSizeError(f"header length {n} runs past the end of the {file_size}-byte file")
    if len(prefix) < 8 + n:
        raise HeaderSizeError(f"need {8 + n} bytes to read the header, got {len(prefix)}")
    raw = prefix[8 : 8 + n]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HeaderEncodingError(f"header is not UTF-8 (byte {8 + exc.start})") from None
    if text[:1] in JSON_SPACE and text.lstrip(JSON_SPACE).startswith("{"):
        raise HeaderEncodingError(LEADING_SPACE)
    if not text.startswith("{"):
        raise HeaderEncodingError("header does not start with '{'")
    try:
        doc = json.loads(text.rstrip(" "), object_pairs_hook=_no_duplicates, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise HeaderEncodingError(f"header is not valid JSON: {exc.msg} at header byte {exc.pos}") from None
    except RecursionError:
        raise HeaderEncodingError("header JSON nests too deeply") from None
    except ValueError as exc:  # e.g. an integer literal past Python's digit limit
        raise HeaderEncodingError(f"header JSON has an unreadable value: {exc}") from None
    _encodable(doc)  # a starting "{" and a successful parse make `doc` an object

    metadata = doc.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise MetadataError("__metadata__ must map strings to strings")

    data_start, data_len = 8 + n, file_size - 8 - n
    tensors = [_tensor(tensor_name, entry, data_start) for tensor_name, entry in doc.items()]
    tensors.sort(key=lambda t: (t.begin, t.end))
    cursor = data_start
    for tensor in tensors:
        if tensor.begin < cursor:
            raise OffsetLayoutError(f"tensor {tensor.name!r} overlaps the tensor before it")
        if tensor.begin > cursor:
            raise OffsetLayoutError(f"gap of {tensor.begin - cursor} bytes before tensor {tensor.name!r}")
        cursor = tensor.end
    if cursor != file_size:
        covered = cursor - data_start
        raise OffsetLayoutError(
            f"tensors cover {covered} bytes of a {data_len}-byte data buffer"
            + (" (trailing bytes after the last tensor)" if covered < data_len else "")
        )
    return Header(n, data_start, file_size, tuple(tensors), dict(metadata))


def _tensor(name: str, entry: object, data_start: int) -> TensorInfo:
    if not isinstance(entry, dict):
        raise TensorEntryError(f"tensor {name!r}: entry is not an object")
    if set(entry) != {"dtype", "shape", "data_offsets"}:
        raise TensorEntryError(f"tensor {name!r}: fields must be dtype, shape, data_offsets (got {sorted(entry)})")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise TensorEntryError(f"tensor {name!r}: unknown dtype {dtype!r} (known: {', '.join(DTYPE_BITS)})")
    if not isinstance(shape, list) or not all(_is_uint(d) for d in shape):
        raise TensorEntryError(f"tensor {name!r}: shape must be a list of non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_uint(o) for o in offsets)):
        raise TensorEntryError(f"tensor {name!r}: data_offsets must be [begin, end] non-negative integers")
    begin, end = offsets
    if end < begin:
        raise OffsetLayoutError(f"tensor {name!r}: data_offsets end {end} < begin {begin}")
    elements = 1
    for dim in shape:  # left to right, checked at each step, as the reference reader does
        elements *= dim
        if elements > U64_MAX:
            shown = f"{shape[:8]}{'...' if len(shape) > 8 else ''}"
            raise TensorSizeError(f"tensor {name!r}: shape {shown} x {dtype} overflows 64 bits")
    bits = elements * DTYPE_BITS[dtype]
    if bits > U64_MAX:
        raise TensorSizeError(f"tensor {name!r}: {elements} x {dtype} overflows 64 bits")
    if bits % 8:
        raise TensorSizeError(f"tensor {name!r}: {elements} x {dtype} is not a whole number of bytes")
    if bits // 8 != end - begin:
        raise TensorSizeError(
            f"tensor {name!r}: shape {shape} x {dtype} is {bits // 8} bytes but data_offsets span {end - begin}"
        )
    return TensorInfo(name, dtype, tuple(shape), data_start + begin, data_start + end)


def read_header(path: Path) -> Header:
    """Validate the header of the file at `path` (reads only the header bytes)."""
    path = Path(path)
    with open_regular(path) as f:  # a FIFO or device is refused, never read from
        size = os.fstat(f.fileno()).st_size
        first = f.read(8)
        n = struct.unpack("<Q", first)[0] if len(first) == 8 else 0
        # Read the header only when its length is plausible; parse_header names the problem otherwise.
        prefix = first + (f.read(n) if n <= MAX_HEADER_BYTES and 8 + n <= size else b"")
    return parse_header(prefix, size, str(path))
