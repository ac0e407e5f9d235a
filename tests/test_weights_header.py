"""ai_platform.weights.header: real files are accepted, each broken rule has its own error, fuzzing never crashes it.

Valid files are written by the `safetensors` library itself; malformed ones are built by hand as
`struct.pack('<Q', N) + header + data`, one per rule, and each asserts both the error class and a
fragment of the message. The property tests (hypothesis) feed arbitrary bytes, mutated library files and
random JSON headers, and check that the parser either returns a Header whose tensors tile the data
buffer exactly, or raises a SafetensorsError, never anything else.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import safetensors
import safetensors.numpy
import safetensors.torch
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_platform.errors import (
    HeaderEncodingError,
    HeaderSizeError,
    MetadataError,
    OffsetLayoutError,
    PlatformError,
    SafetensorsError,
    TensorEntryError,
    TensorSizeError,
)
from ai_platform.weights.header import DTYPE_BITS, MAX_HEADER_BYTES, U64_MAX, Header, parse_header, read_header

# --------------------------------------------------------------------------- helpers


def build(header: dict[str, Any] | str | bytes, data: bytes = b"", *, pad: int = 0) -> bytes:
    """A file: u64 little-endian N, N header bytes (JSON, then `pad` spaces), then the data buffer."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    if isinstance(header, str):
        header = header.encode("utf-8")
    header += b" " * pad
    return struct.pack("<Q", len(header)) + header + data


def entry(dtype: str, shape: list[Any], begin: Any, end: Any) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def parse(blob: bytes) -> Header:
    return parse_header(blob, len(blob), "blob")


def raw_header(blob: bytes) -> tuple[int, dict[str, Any]]:
    """(data_start, JSON header) read independently of the module under test."""
    (n,) = struct.unpack("<Q", blob[:8])
    return 8 + n, json.loads(blob[8 : 8 + n])


def check_invariants(hdr: Header) -> None:
    """What every accepted header guarantees: tensors tile [data_start, file_size) in order, sizes match."""
    assert hdr.data_start == 8 + hdr.header_bytes
    assert hdr.header_bytes <= MAX_HEADER_BYTES
    assert hdr.data_start <= hdr.file_size
    cursor = hdr.data_start
    for t in hdr.tensors:
        assert t.begin == cursor, f"{t.name!r} does not start where the previous tensor ended"
        assert t.end >= t.begin
        assert t.dtype in DTYPE_BITS
        assert all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= U64_MAX for d in t.shape)
        assert math.prod(t.shape) * DTYPE_BITS[t.dtype] == 8 * (t.end - t.begin)
        cursor = t.end
    assert cursor == hdr.file_size
    assert len({t.name for t in hdr.tensors}) == len(hdr.tensors)
    assert "__metadata__" not in {t.name for t in hdr.tensors}
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in hdr.metadata.items())


def parses_or_refuses(blob: bytes) -> Header | None:
    """The fuzzing property: a Header (whose invariants hold) or a SafetensorsError, nothing else."""
    try:
        hdr = parse_header(blob, len(blob), "fuzz")
    except SafetensorsError as exc:
        assert str(exc).startswith("fuzz: ")
        return None
    check_invariants(hdr)
    return hdr


def torch_bytes(t: torch.Tensor) -> bytes:
    """The raw little-endian bytes of a CPU tensor (bf16 has no numpy dtype, so go through a same-size int)."""
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.contiguous().numpy().tobytes()


# --------------------------------------------------------------------------- 1. real files are accepted

TORCH_TENSORS = {
    "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "bf16": torch.tensor([1.5, -2.0, 3.25, 0.0], dtype=torch.bfloat16),
    "f16": torch.linspace(-1, 1, 9, dtype=torch.float16).reshape(3, 3),
    "i64": torch.tensor([-(2**62), -1, 0, 1, 2**62], dtype=torch.int64),
    "u8": torch.arange(7, dtype=torch.uint8),
    "bool": torch.tensor([True, False, True]),
    "empty": torch.zeros(0, 4, dtype=torch.float32),
    "scalar": torch.tensor(7.0, dtype=torch.float32),
}
TORCH_DTYPES = {"f32": "F32", "bf16": "BF16", "f16": "F16", "i64": "I64", "u8": "U8", "bool": "BOOL"}
TORCH_DTYPES |= {"empty": "F32", "scalar": "F32"}
METADATA = {"format": "pt", "producer": "tests", "unicode": "权重 ✓", "empty": ""}


def test_torch_file_with_all_dtypes_and_metadata_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    safetensors.torch.save_file(TORCH_TENSORS, path, metadata=METADATA)
    blob = path.read_bytes()

    hdr = read_header(path)

    check_invariants(hdr)
    assert hdr == parse_header(blob, len(blob), str(path))
    assert hdr.file_size == len(blob)
    assert hdr.metadata == METADATA
    data_start, doc = raw_header(blob)
    assert hdr.data_start == data_start
    assert hdr.data_start % 8 == 0  # the reference writer pads the header to 8-byte alignment
    assert [t.begin for t in hdr.tensors] == sorted(t.begin for t in hdr.tensors)
    by_name = {t.name: t for t in hdr.tensors}
    assert set(by_name) == set(TORCH_TENSORS)
    for name, tensor in TORCH_TENSORS.items():
        info = by_name[name]
        assert info.dtype == TORCH_DTYPES[name]
        assert info.shape == tuple(tensor.shape)
        assert info.end - info.begin == tensor.numel() * tensor.element_size()
        begin, end = doc[name]["data_offsets"]
        assert (info.begin, info.end) == (data_start + begin, data_start + end)  # absolute offsets
        assert blob[info.begin : info.end] == torch_bytes(tensor)
    assert by_name["empty"].begin == by_name["empty"].end
    assert by_name["scalar"].shape == ()


def test_numpy_file_with_more_dtypes_and_no_metadata_is_accepted(tmp_path: Path) -> None:
    arrays = {
        "i8": np.array([-128, 0, 127], dtype=np.int8),
        "i16": np.arange(5, dtype=np.int16),
        "u16": np.arange(3, dtype=np.uint16),
        "i32": np.arange(4, dtype=np.int32).reshape(2, 2),
        "u32": np.arange(2, dtype=np.uint32),
        "u64": np.array([2**64 - 1], dtype=np.uint64),
        "f64": np.linspace(0, 1, 3),
        "f16": np.ones((1, 1, 2), dtype=np.float16),
        "zero": np.zeros((3, 0, 2), dtype=np.int64),
        "bool": np.array([[True], [False]]),
    }
    expected = {"i8": "I8", "i16": "I16", "u16": "U16", "i32": "I32", "u32": "U32", "u64": "U64", "f64": "F64"}
    expected |= {"f16": "F16", "zero": "I64", "bool": "BOOL"}
    path = tmp_path / "arrays.safetensors"
    safetensors.numpy.save_file(arrays, path)
    blob = path.read_bytes()

    hdr = read_header(path)

    check_invariants(hdr)
    assert hdr.metadata == {}
    by_name = {t.name: t for t in hdr.tensors}
    for name, array in arrays.items():
        info = by_name[name]
        assert (info.dtype, info.shape) == (expected[name], array.shape)
        assert blob[info.begin : info.end] == array.tobytes()


def test_empty_library_file_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "empty.safetensors"
    safetensors.torch.save_file({}, path)
    hdr = read_header(path)
    assert hdr.tensors == ()
    assert hdr.metadata == {}
    assert hdr.file_size == hdr.data_start == path.stat().st_size


def test_library_pads_header_with_trailing_spaces_and_it_is_accepted() -> None:
    blob = safetensors.torch.save({"x": torch.zeros(3, dtype=torch.uint8)})  # 56-byte JSON, padded to 64
    (n,) = struct.unpack("<Q", blob[:8])
    assert blob[8 : 8 + n].endswith(b" ")
    assert (8 + n) % 8 == 0
    hdr = parse(blob)
    assert hdr.header_bytes == n
    assert [(t.name, t.begin, t.end) for t in hdr.tensors] == [("x", 8 + n, 8 + n + 3)]


@pytest.mark.parametrize("pad", [0, 1, 7, 8, 1000])
def test_hand_built_header_with_any_space_padding_is_accepted(pad: int) -> None:
    blob = build({"a": entry("F32", [2], 0, 8), "__metadata__": {"k": "v"}}, b"\0" * 8, pad=pad)
    hdr = parse(blob)
    check_invariants(hdr)
    assert hdr.metadata == {"k": "v"}
    assert hdr.tensors[0].end == len(blob)


def test_offsets_given_in_reverse_order_are_accepted_and_sorted() -> None:
    header = {
        "c": entry("U8", [4], 6, 10),
        "b": entry("F16", [2], 2, 6),
        "z": entry("F32", [0], 2, 2),
        "a": entry("U8", [2], 0, 2),
    }
    blob = build(header, bytes(range(10)))
    assert list(raw_header(blob)[1]) == ["c", "b", "z", "a"]  # reversed in the JSON itself
    hdr = parse(blob)
    check_invariants(hdr)
    assert [t.name for t in hdr.tensors] == ["a", "z", "b", "c"]
    start = hdr.data_start
    assert [(t.begin - start, t.end - start) for t in hdr.tensors] == [(0, 2), (2, 2), (2, 6), (6, 10)]


def test_sub_byte_dtypes_that_fill_whole_bytes_are_accepted() -> None:
    blob = build({"f4": entry("F4", [2, 3], 0, 3), "f6": entry("F6_E2M3", [4], 3, 6)}, b"\0" * 6)
    hdr = parse(blob)
    check_invariants(hdr)
    assert [(t.name, t.end - t.begin) for t in hdr.tensors] == [("f4", 3), ("f6", 3)]


@pytest.mark.parametrize("dtype", ["F8_E4M3FNUZ", "F8_E5M2FNUZ"])
def test_fnuz_float8_dtypes_are_one_byte_each(dtype: str) -> None:
    blob = build({"a": entry(dtype, [2, 3], 0, 6)}, bytes(6))
    hdr = parse(blob)
    check_invariants(hdr)
    assert hdr.tensors[0].dtype == dtype
    assert dict(safetensors.deserialize(blob))["a"]["dtype"] == dtype  # the reference reader agrees


@pytest.mark.parametrize("space", [b" ", b"\n", b"\t", b"\r\n  "])
def test_leading_whitespace_is_refused_and_the_error_says_why(space: bytes) -> None:
    blob = build(space + b'{"a":' + json.dumps(U8_1).encode() + b"}", b"x")
    assert set(dict(safetensors.deserialize(blob))) == {"a"}  # the reference reader skips it: we refuse on purpose
    with pytest.raises(HeaderEncodingError, match="starts with whitespace") as refused:
        parse(blob)
    assert "only trailing spaces may pad a header" in str(refused.value)


def test_zero_dimension_makes_any_other_dimension_legal() -> None:
    hdr = parse(build({"a": entry("F64", [0, U64_MAX], 0, 0)}))
    assert hdr.tensors[0].shape == (0, U64_MAX)


# --------------------------------------------------------------------------- 2. one malformed file per rule

U8_1 = entry("U8", [1], 0, 1)

MALFORMED = [
    # the 8-byte length prefix
    pytest.param(b"", HeaderSizeError, "file is 0 bytes, shorter than the 8-byte header length", id="empty-file"),
    pytest.param(b"\x02\0\0\0\0\0\0", HeaderSizeError, "file is 7 bytes, shorter than the 8-byte", id="7-bytes"),
    pytest.param(
        struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}",
        HeaderSizeError,
        f"header length {MAX_HEADER_BYTES + 1} exceeds the {MAX_HEADER_BYTES}-byte limit",
        id="header-over-limit",
    ),
    pytest.param(
        struct.pack("<Q", U64_MAX) + b"{}", HeaderSizeError, f"header length {U64_MAX} exceeds", id="header-u64-max"
    ),
    pytest.param(
        struct.pack("<Q", 100) + b"{}" + b" " * 20,
        HeaderSizeError,
        "header length 100 runs past the end of the 30-byte file",
        id="header-past-eof",
    ),
    # encoding and JSON
    pytest.param(build(b'{"\xff":1}'), HeaderEncodingError, "header is not UTF-8 (byte 10)", id="invalid-utf8"),
    pytest.param(build(b'{"a":"\xc3"}'), HeaderEncodingError, "header is not UTF-8", id="truncated-utf8"),
    pytest.param(build(b" {}"), HeaderEncodingError, "header does not start with '{'", id="leading-space"),
    pytest.param(build(b"\xef\xbb\xbf{}"), HeaderEncodingError, "does not start with '{'", id="utf8-bom"),
    pytest.param(build(b""), HeaderEncodingError, "does not start with '{'", id="zero-length-header"),
    pytest.param(build(b"[]"), HeaderEncodingError, "does not start with '{'", id="json-array-top-level"),
    pytest.param(build(b'[{"a":1}]'), HeaderEncodingError, "does not start with '{'", id="array-of-objects"),
    pytest.param(build(b'{"a": }'), HeaderEncodingError, "header is not valid JSON: Expecting value", id="bad-json"),
    pytest.param(build(b"{"), HeaderEncodingError, "header is not valid JSON", id="unterminated-object"),
    pytest.param(build(b"{}{}"), HeaderEncodingError, "header is not valid JSON: Extra data", id="two-objects"),
    pytest.param(build(b"{}\0\0"), HeaderEncodingError, "header is not valid JSON", id="nul-padding"),
    pytest.param(build(b'{"a":' + b"[" * 100_000), HeaderEncodingError, "nests too deeply", id="deep-nesting"),
    pytest.param(
        build(b'{"a":' + json.dumps(U8_1).encode() + b',"a":' + json.dumps(U8_1).encode() + b"}", b"x"),
        HeaderEncodingError,
        "duplicate key 'a'",
        id="duplicate-tensor",
    ),
    pytest.param(
        build('{"a":{"dtype":"U8","shape":[1],"dtype":"U8","data_offsets":[0,1]}}', b"x"),
        HeaderEncodingError,
        "duplicate key 'dtype'",
        id="duplicate-field",
    ),
    pytest.param(
        build('{"__metadata__":{"k":"v","k":"v"}}'), HeaderEncodingError, "duplicate key 'k'", id="duplicate-metadata"
    ),
    pytest.param(
        build('{"__metadata__":{},"__metadata__":{}}'),
        HeaderEncodingError,
        "duplicate key '__metadata__'",
        id="duplicate-metadata-block",
    ),
    # tensor entries
    pytest.param(build({"a": 1}), TensorEntryError, "tensor 'a': entry is not an object", id="entry-not-object"),
    pytest.param(build({"a": [0, 1]}), TensorEntryError, "entry is not an object", id="entry-is-list"),
    pytest.param(
        build({"a": entry("F128", [1], 0, 16)}, b"\0" * 16),
        TensorEntryError,
        "tensor 'a': unknown dtype 'F128'",
        id="unknown-dtype",
    ),
    pytest.param(build({"a": entry("u8", [1], 0, 1)}, b"x"), TensorEntryError, "unknown dtype 'u8'", id="lower-dtype"),
    pytest.param(build({"a": entry(8, [1], 0, 1)}, b"x"), TensorEntryError, "unknown dtype 8", id="int-dtype"),
    pytest.param(
        build({"a": {"dtype": "U8", "shape": [1]}}, b"x"),
        TensorEntryError,
        "fields must be dtype, shape, data_offsets (got ['dtype', 'shape'])",
        id="missing-field",
    ),
    pytest.param(
        build({"a": {}}), TensorEntryError, "fields must be dtype, shape, data_offsets (got [])", id="empty-entry"
    ),
    pytest.param(
        build({"a": {**U8_1, "offset": 0}}, b"x"),
        TensorEntryError,
        "(got ['data_offsets', 'dtype', 'offset', 'shape'])",
        id="extra-field",
    ),
    *[
        pytest.param(
            build({"a": entry("U8", shape, 0, 2)}, b"xx"),
            TensorEntryError,
            "tensor 'a': shape must be a list of non-negative integers",
            id=f"shape-{label}",
        )
        for label, shape in [
            ("negative", [-2]),
            ("negative-inner", [2, -1]),
            ("float", [2.0]),
            ("fraction", [1.5]),
            ("bool", [True, True]),
            ("string", ["2"]),
            ("null", [None]),
            ("nested", [[2]]),
            ("not-list", 2),
            ("object", {"0": 2}),
            ("over-u64", [U64_MAX + 1, 0]),
        ]
    ],
    *[
        pytest.param(
            build({"a": {"dtype": "U8", "shape": [1], "data_offsets": offsets}}, b"x"),
            TensorEntryError,
            "tensor 'a': data_offsets must be [begin, end] non-negative integers",
            id=f"offsets-{label}",
        )
        for label, offsets in [
            ("one", [1]),
            ("three", [0, 1, 1]),
            ("empty", []),
            ("not-list", 1),
            ("negative", [-1, 0]),
            ("float", [0, 1.0]),
            ("bool", [False, True]),
            ("string", ["0", "1"]),
            ("over-u64", [0, U64_MAX + 1]),
        ]
    ],
    pytest.param(
        build({"a": entry("U8", [0], 4, 2)}, b"xxxx"),
        OffsetLayoutError,
        "tensor 'a': data_offsets end 2 < begin 4",
        id="end-before-begin",
    ),
    # shape x dtype against the span
    pytest.param(
        build({"a": entry("F32", [2], 0, 4)}, b"xxxx"),
        TensorSizeError,
        "tensor 'a': shape [2] x F32 is 8 bytes but data_offsets span 4",
        id="span-too-small",
    ),
    pytest.param(
        build({"a": entry("BF16", [2, 2], 0, 16)}, b"x" * 16),
        TensorSizeError,
        "shape [2, 2] x BF16 is 8 bytes but data_offsets span 16",
        id="span-too-large",
    ),
    pytest.param(
        build({"a": entry("U8", [], 0, 0)}), TensorSizeError, "is 1 bytes but data_offsets span 0", id="scalar-empty"
    ),
    pytest.param(
        build({"a": entry("U8", [2**40, 2**40], 0, 0)}),
        TensorSizeError,
        f"shape [{2**40}, {2**40}] x U8 overflows 64 bits",
        id="shape-overflows-u64",
    ),
    pytest.param(
        build({"a": entry("F64", [2**61], 0, 0)}), TensorSizeError, "x F64 overflows 64 bits", id="bits-overflow-u64"
    ),
    pytest.param(
        build({"a": entry("F4", [3], 0, 2)}, b"xx"),
        TensorSizeError,
        "tensor 'a': 3 x F4 is not a whole number of bytes",
        id="f4-odd-count",
    ),
    pytest.param(
        build({"a": entry("F6_E3M2", [3], 0, 2)}, b"xx"), TensorSizeError, "3 x F6_E3M2 is not a whole", id="f6-partial"
    ),
    # layout of the data buffer
    pytest.param(
        build({"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 2, 6)}, b"x" * 6),
        OffsetLayoutError,
        "tensor 'b' overlaps the tensor before it",
        id="overlap",
    ),
    pytest.param(
        build({"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 0, 4)}, b"x" * 4),
        OffsetLayoutError,
        "overlaps the tensor before it",
        id="same-span-twice",
    ),
    pytest.param(
        build({"a": entry("U8", [4], 0, 4), "b": entry("U8", [4], 6, 10)}, b"x" * 10),
        OffsetLayoutError,
        "gap of 2 bytes before tensor 'b'",
        id="gap",
    ),
    pytest.param(
        build({"a": entry("U8", [4], 3, 7)}, b"x" * 7), OffsetLayoutError, "gap of 3 bytes before tensor 'a'", id="lead"
    ),
    pytest.param(
        build({"a": entry("U8", [4], 0, 4)}, b"x" * 6),
        OffsetLayoutError,
        "tensors cover 4 bytes of a 6-byte data buffer (trailing bytes after the last tensor)",
        id="trailing-bytes",
    ),
    pytest.param(
        build({}, b"x"), OffsetLayoutError, "tensors cover 0 bytes of a 1-byte data buffer (trailing", id="no-tensors"
    ),
    pytest.param(
        build({"a": entry("U8", [8], 0, 8)}, b"x" * 4),
        OffsetLayoutError,
        "tensors cover 8 bytes of a 4-byte data buffer",
        id="tensor-past-eof",
    ),
    # __metadata__
    *[
        pytest.param(
            build({"__metadata__": metadata}),
            MetadataError,
            "__metadata__ must map strings to strings",
            id=f"metadata-{label}",
        )
        for label, metadata in [
            ("int-value", {"k": 1}),
            ("null-value", {"k": None}),
            ("bool-value", {"k": True}),
            ("object-value", {"k": {"a": "b"}}),
            ("list-value", {"k": ["v"]}),
            ("string", "format=pt"),
            ("list", [["k", "v"]]),
            ("null", None),
            ("number", 0),
        ]
    ],
]


@pytest.mark.parametrize(("blob", "error", "fragment"), MALFORMED)
def test_malformed_file_is_refused_with_its_own_error(
    tmp_path: Path, blob: bytes, error: type[SafetensorsError], fragment: str
) -> None:
    with pytest.raises(error, match=re.escape(fragment)) as parsed:
        parse_header(blob, len(blob), "mem.safetensors")
    assert type(parsed.value) is error
    assert isinstance(parsed.value, SafetensorsError)
    assert isinstance(parsed.value, PlatformError)
    assert str(parsed.value).startswith("mem.safetensors: ")

    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(error, match=re.escape(fragment)) as read:
        read_header(path)
    assert type(read.value) is error
    assert str(read.value).startswith(f"{path}: ")


def test_every_error_class_is_a_safetensors_and_platform_error() -> None:
    for error in (HeaderSizeError, HeaderEncodingError, TensorEntryError, TensorSizeError, OffsetLayoutError):
        assert issubclass(error, SafetensorsError)
    assert issubclass(MetadataError, SafetensorsError)
    assert issubclass(SafetensorsError, PlatformError)
    # every class has at least one case in the corpus
    covered = {param.values[1] for param in MALFORMED}
    assert covered == {
        HeaderSizeError,
        HeaderEncodingError,
        TensorEntryError,
        TensorSizeError,
        OffsetLayoutError,
        MetadataError,
    }


def _library_file(tmp_path: Path) -> Path:
    path = tmp_path / "lib.safetensors"
    tensors = {"w": torch.arange(12, dtype=torch.float32).reshape(3, 4), "b": torch.ones(5, dtype=torch.bfloat16)}
    safetensors.torch.save_file(tensors, path, metadata={"format": "pt"})
    return path


def test_polyglot_with_bytes_appended_to_a_library_file_is_refused(tmp_path: Path) -> None:
    path = _library_file(tmp_path)
    good = read_header(path)
    data_len = good.file_size - good.data_start
    payload = b"PK\x03\x04" + b"\0" * 26 + b"evil.py"  # e.g. a zip local header glued on the end
    path.write_bytes(path.read_bytes() + payload)
    with pytest.raises(OffsetLayoutError) as exc:
        read_header(path)
    assert f"tensors cover {data_len} bytes of a {data_len + len(payload)}-byte data buffer" in str(exc.value)
    assert "(trailing bytes after the last tensor)" in str(exc.value)


@pytest.mark.parametrize("cut", [1, 3, 7])
def test_library_file_cut_short_is_refused(tmp_path: Path, cut: int) -> None:
    path = _library_file(tmp_path)
    good = read_header(path)
    data_len = good.file_size - good.data_start
    path.write_bytes(path.read_bytes()[:-cut])
    with pytest.raises(OffsetLayoutError) as exc:
        read_header(path)
    assert f"tensors cover {data_len} bytes of a {data_len - cut}-byte data buffer" in str(exc.value)
    assert "trailing" not in str(exc.value)


def test_library_file_cut_inside_the_header_is_refused(tmp_path: Path) -> None:
    path = _library_file(tmp_path)
    (n,) = struct.unpack("<Q", path.read_bytes()[:8])
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(HeaderSizeError, match=f"header length {n} runs past the end of the 40-byte file"):
        read_header(path)


def test_parse_header_needs_the_whole_header_in_the_prefix() -> None:
    blob = build({"a": U8_1}, b"x")
    with pytest.raises(HeaderSizeError, match=f"need {len(blob) - 1} bytes to read the header, got 20"):
        parse_header(blob[:20], len(blob))
    with pytest.raises(HeaderSizeError, match="shorter than the 8-byte header length"):
        parse_header(blob[:5], len(blob))


# --------------------------------------------------------------------------- 3. data corruption is not a header matter


def test_flipped_byte_in_tensor_data_leaves_header_valid(tmp_path: Path) -> None:
    path = _library_file(tmp_path)
    before = read_header(path)
    w = next(t for t in before.tensors if t.name == "w")
    original = path.read_bytes()
    blob = bytearray(original)
    middle = (w.begin + w.end) // 2
    blob[middle] ^= 0xFF
    path.write_bytes(bytes(blob))
    assert path.read_bytes() != original
    assert path.read_bytes()[: w.begin] == original[: w.begin]  # the header region is untouched
    after = read_header(path)
    assert after == before  # same offsets, shapes, dtypes, metadata: only hashing can catch this
    assert [(t.name, t.begin, t.end) for t in after.tensors] == [(t.name, t.begin, t.end) for t in before.tensors]


# --------------------------------------------------------------------------- bugs the fuzzing found (now fixed)


@pytest.mark.parametrize("where", ["shape", "metadata"])
def test_huge_integer_literal_is_refused_not_crashing(where: str) -> None:
    digits = "9" * 5000
    if where == "shape":
        header = '{"a":{"dtype":"U8","shape":[' + digits + '],"data_offsets":[0,0]}}'
    else:
        header = '{"__metadata__":{"k":' + digits + "}}"
    with pytest.raises(SafetensorsError):
        parse(build(header))


def _parse_in_child(blob: bytes) -> None:
    try:
        parse(blob)
    except TensorSizeError:
        return
    raise AssertionError("expected TensorSizeError")


def test_shape_with_many_huge_dimensions_is_refused_quickly() -> None:
    dims = ",".join([str(U64_MAX)] * 60_000)
    blob = build('{"a":{"dtype":"U8","shape":[' + dims + '],"data_offsets":[0,0]}}')
    child = multiprocessing.get_context("fork").Process(target=_parse_in_child, args=(blob,))
    child.start()
    child.join(2.0)  # a linear check takes ~50 ms here
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("parsing a 1.3 MB header took more than 2 s")
    assert child.exitcode == 0


@pytest.mark.parametrize(
    "header",
    [
        '{"\\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}',
        '{"__metadata__":{"k":"\\udc00"}}',
    ],
    ids=["tensor-name", "metadata-value"],
)
def test_lone_surrogate_escape_is_refused(header: str) -> None:
    blob = build(header)
    with pytest.raises(safetensors.SafetensorError):
        safetensors.deserialize(blob)  # the reference reader refuses it ...
    with pytest.raises(HeaderEncodingError):
        parse(blob)  # ... so must we


def test_intermediate_shape_overflow_is_refused_like_the_reference() -> None:
    blob = build({"a": entry("U8", [U64_MAX, U64_MAX, 0], 0, 0)})
    with pytest.raises(safetensors.SafetensorError, match="overflow"):
        safetensors.deserialize(blob)
    with pytest.raises(TensorSizeError):
        parse(blob)


def test_negative_zero_is_refused_like_the_reference() -> None:
    blob = build('{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}}')
    with pytest.raises(safetensors.SafetensorError):
        safetensors.deserialize(blob)
    with pytest.raises(TensorEntryError):
        parse(blob)


# --------------------------------------------------------------------------- 4. property-based fuzzing

FUZZ = settings(
    max_examples=300,
    deadline=2000,
    database=None,  # leave no .hypothesis/ folder in the work tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

_prefixed_body = st.binary(max_size=256).map(lambda body: struct.pack("<Q", len(body)) + body)
_brace_body = st.tuples(st.binary(max_size=200), st.binary(max_size=16)).map(
    lambda p: struct.pack("<Q", 1 + len(p[0])) + b"{" + p[0] + p[1]
)
_any_length = st.tuples(st.integers(0, U64_MAX), st.binary(max_size=64)).map(lambda p: struct.pack("<Q", p[0]) + p[1])


@FUZZ
@given(st.binary(max_size=512) | _prefixed_body | _brace_body | _any_length)
def test_fuzz_arbitrary_bytes_never_crash(blob: bytes) -> None:
    parses_or_refuses(blob)


BASE = safetensors.torch.save(
    {
        "embed": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        "norm": torch.ones(4, dtype=torch.bfloat16),
        "ids": torch.tensor([1, 2], dtype=torch.int64),
        "mask": torch.tensor([True, False, True]),
        "empty": torch.zeros(0, dtype=torch.float16),
    },
    metadata={"format": "pt", "note": "base"},
)
BASE_N = struct.unpack("<Q", BASE[:8])[0]
BASE_END = 8 + BASE_N

_position = st.integers(0, BASE_END) | st.integers(0, len(BASE))  # biased towards the header region
_mutation = st.tuples(st.sampled_from(["flip", "set", "insert", "delete"]), _position, st.integers(0, 255))
_json_bytes = st.sampled_from(list(b'{}[]",:0123456789-.e tfnul\\'))


def apply_mutations(blob: bytes, mutations: list[tuple[str, int, int]], fix_length: bool) -> bytes:
    data = bytearray(blob)
    n = BASE_N
    for op, pos, value in mutations:
        pos = min(pos, len(data))
        if op == "insert":
            data.insert(pos, value)
            n += 8 <= pos <= 8 + n
        elif pos >= len(data):
            continue
        elif op == "delete":
            del data[pos]
            n -= 8 <= pos < 8 + n
        elif op == "flip":
            data[pos] ^= 1 << (value % 8)
        else:
            data[pos] = value
    if fix_length and len(data) >= 8:  # keep N in step with the header so deeper rules get exercised
        data[:8] = struct.pack("<Q", max(n, 0))
    return bytes(data)


def test_base_file_for_mutation_is_valid() -> None:
    hdr = parse(BASE)
    check_invariants(hdr)
    assert len(hdr.tensors) == 5


@FUZZ
@given(st.lists(_mutation, min_size=1, max_size=6), st.booleans())
def test_fuzz_mutated_library_file_never_crashes(mutations: list[tuple[str, int, int]], fix_length: bool) -> None:
    parses_or_refuses(apply_mutations(BASE, mutations, fix_length))


@FUZZ
@given(st.lists(st.tuples(st.integers(8, BASE_END - 1), _json_bytes), min_size=1, max_size=4))
def test_fuzz_json_punctuation_in_header_never_crashes(edits: list[tuple[int, int]]) -> None:
    data = bytearray(BASE)
    for pos, value in edits:
        data[pos] = value
    parses_or_refuses(bytes(data))


_dtype = st.sampled_from(list(DTYPE_BITS)) | st.sampled_from(["F128", "f32", "", "BOOL ", "Q4"])
_dim = st.integers(0, 5) | st.integers(0, U64_MAX) | st.integers(-3, -1)
_odd_value = st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=3) | st.integers(-(2**70), 2**70)
_metadata = st.dictionaries(st.text(max_size=8), st.text(max_size=8) | _odd_value, max_size=3) | _odd_value


@st.composite
def layouts(draw: Any) -> tuple[bytes, bool]:
    """A header of random tensors, laid out contiguously, in random JSON order, then maybe perturbed.

    Returns the file and whether it was left valid by construction.
    """
    names = draw(st.lists(st.text(min_size=1, max_size=6).filter(lambda s: s != "__metadata__"), max_size=5))
    names = list(dict.fromkeys(names))
    tensors: dict[str, Any] = {}
    cursor = 0
    for name in names:
        dtype = draw(st.sampled_from(list(DTYPE_BITS)))
        shape = draw(st.lists(st.integers(0, 4), max_size=3))
        bits = math.prod(shape) * DTYPE_BITS[dtype]
        if bits % 8:
            shape = [*shape, 8]  # whole bytes for the sub-byte dtypes
            bits *= 8
        tensors[name] = entry(dtype, shape, cursor, cursor + bits // 8)
        cursor += bits // 8
    order = draw(st.permutations(list(tensors)))
    doc: dict[str, Any] = {name: tensors[name] for name in order}
    if draw(st.booleans()):
        doc["__metadata__"] = draw(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3))
    data_len = cursor
    valid = True
    perturbation = draw(st.sampled_from(["none", "none", "entry", "shape", "data", "metadata", "field"]))
    if perturbation == "shape" and names:  # same dtype and offsets, another shape: valid only if the size agrees
        name = draw(st.sampled_from(names))
        old = doc[name]
        shape = draw(st.lists(st.integers(0, 6), max_size=3))
        doc[name] = {**old, "shape": shape}
        valid = math.prod(shape) * DTYPE_BITS[old["dtype"]] == math.prod(old["shape"]) * DTYPE_BITS[old["dtype"]]
    elif perturbation == "entry" and names:
        name = draw(st.sampled_from(names))
        doc[name] = {
            "dtype": draw(_dtype),
            "shape": draw(st.lists(_dim | _odd_value, max_size=3) | _odd_value),
            "data_offsets": draw(st.lists(st.integers(0, cursor + 2) | _odd_value, max_size=3) | _odd_value),
        }
        valid = False
    elif perturbation == "data":
        data_len = draw(st.integers(0, cursor + 8))
        valid = data_len == cursor
    elif perturbation == "metadata":
        doc["__metadata__"] = draw(_metadata)
        valid = False
    elif perturbation == "field" and names:
        name = draw(st.sampled_from(names))
        key = draw(st.sampled_from(["dtype", "shape", "data_offsets", "extra"]))
        if key == "extra":
            doc[name] = {**doc[name], "extra": 0}
        else:
            doc[name] = {k: v for k, v in doc[name].items() if k != key}
        valid = False
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([None, (",", ":")])))
    pad = draw(st.integers(0, 9))
    return build(text, bytes(i % 251 for i in range(data_len)), pad=pad), valid


@FUZZ
@given(layouts())
def test_fuzz_random_json_headers_never_crash(case: tuple[bytes, bool]) -> None:
    blob, valid = case
    hdr = parses_or_refuses(blob)
    if valid:
        assert hdr is not None, "a header valid by construction was refused"
        _, doc = raw_header(blob)
        assert {t.name for t in hdr.tensors} == set(doc) - {"__metadata__"}
        assert hdr.metadata == doc.get("__metadata__", {})
    if hdr is not None:  # whatever we accept, the reference reader accepts too
        reference = dict(safetensors.deserialize(blob))
        assert set(reference) == {t.name for t in hdr.tensors}
        for t in hdr.tensors:
            assert (reference[t.name]["dtype"], tuple(reference[t.name]["shape"])) == (t.dtype, t.shape)
            assert bytes(reference[t.name]["data"]) == blob[t.begin : t.end]


_entry_values = st.fixed_dictionaries(
    {"dtype": _dtype, "shape": st.lists(_dim, max_size=4), "data_offsets": st.lists(st.integers(0, 64), max_size=3)}
)


@FUZZ
@given(
    st.dictionaries(st.text(max_size=4), _entry_values | _odd_value, max_size=4),
    st.integers(0, 96),
    st.booleans(),
)
def test_fuzz_unconstrained_entries_never_crash(doc: dict[str, Any], data_len: int, odd_json: bool) -> None:
    text = json.dumps(doc)
    if odd_json:  # constants Python's json accepts but the format does not
        text = text.replace("0", "NaN", 1) if "0" in text else text.replace("}", ', "x": Infinity}', 1)
    parses_or_refuses(build(text, b"\0" * data_len))


def test_fuzz_helpers_accept_a_known_good_file() -> None:
    assert parses_or_refuses(BASE) is not None
    assert parses_or_refuses(b"short") is None
