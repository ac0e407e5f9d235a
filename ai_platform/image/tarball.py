"""Reproducible tar layers, streamed: headers from `tarfile`, file bytes copied by the
kernel from disk into the blob (hashed as stored), never staged in a temp file.

Every header is normalized: a fixed mtime (the source commit's time), uid/gid 0,
empty user and group names, mode 0644 for files and 0755 for folders, entries
in the order given (the builder sorts them). Nothing of the build host leaks in.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

BLOCK = 512


class Sink(Protocol):
    def write(self, data: bytes | memoryview) -> int: ...

    def copy_from(self, source: BinaryIO, size: int, also: hashlib._Hash | None = None) -> int: ...


@dataclass(frozen=True)
class Entry:
    """One file of a layer: its path inside the image, and where its bytes come from."""

    name: str  # e.g. "models/contract-reviewer/model.safetensors"
    source: Path | None = None  # a file on disk, or
    data: bytes | None = None  # bytes in memory

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else self.source.stat().st_size  # type: ignore[union-attr]


def _header(name: str, size: int, mtime: int, directory: bool) -> bytes:
    info = tarfile.TarInfo(name.rstrip("/") + ("/" if directory else ""))
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.size = 0 if directory else size
    info.mode = 0o755 if directory else 0o644
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info.tobuf(format=tarfile.PAX_FORMAT, encoding="utf-8", errors="strict")


def parents(names: Iterable[str]) -> list[str]:
    """Every folder above the given paths, outermost first (a tar lists a folder before its files)."""
    found: set[str] = set()
    for name in names:
        parts = name.split("/")[:-1]
        found.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(found)


def write_layer(sink: Sink, entries: list[Entry], mtime: int, hash_contents: bool = True) -> dict[str, str]:
    """Write a whole tar stream; returns each file's content sha256 (hashed in the same pass, if asked)."""
    digests: dict[str, str] = {}
    for folder in parents(e.name for e in entries):
        sink.write(_header(folder, 0, mtime, directory=True))
    for entry in entries:
        size = entry.size
        sink.write(_header(entry.name, size, mtime, directory=False))
        content = hashlib.sha256()
        if entry.data is not None:
            content.update(entry.data)
            sink.write(entry.data)
        else:
            with entry.source.open("rb", buffering=0) as f:  # type: ignore[union-attr]
                copied = sink.copy_from(f, size, content if hash_contents else None)
                now = os.fstat(f.fileno()).st_size
            if copied != size or now != size:
                raise OSError(f"{entry.source}: changed size while being packed ({size} -> {max(copied, now)} bytes)")
        if hash_contents:
            digests[entry.name] = content.hexdigest()
        if size % BLOCK:
            sink.write(b"\0" * (BLOCK - size % BLOCK))
    sink.write(b"\0" * (2 * BLOCK))
    return digests
