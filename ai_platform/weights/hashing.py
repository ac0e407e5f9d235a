"""File and per-tensor sha256 from the bytes on disk, without materializing tensors.

Each file is mapped read-only and walked in fixed windows; hashlib releases the
GIL for large updates, so the whole-file hash and the per-tensor hashes run as
two jobs on a thread pool, in parallel across hashers and files. After each
window the pages are dropped from this process's mapping (MADV_DONTNEED: they
stay in the page cache), so resident memory stays flat whatever the model size.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ai_platform.weights.files import open_regular
from ai_platform.weights.header import Header, read_header

WINDOW = 16 * 1024 * 1024


def _walk(path: Path, spans: Iterable[tuple[str, int, int]]) -> dict[str, str]:
    """sha256 of each (key, begin, end) byte span of the file, in one forward pass."""
    with open_regular(path) as f:  # a FIFO or device is refused, never read from
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return {key: hashlib.sha256().hexdigest() for key, _, _ in spans}
        return _walk_mapped(f, size, spans)


def _walk_mapped(f: BinaryIO, size: int, spans: Iterable[tuple[str, int, int]]) -> dict[str, str]:
    digests: dict[str, str] = {}
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        try:
            for key, begin, end in spans:
                h = hashlib.sha256()
                pos = begin
                while pos < end:
                    stop = min(end, (pos // WINDOW + 1) * WINDOW)  # window-aligned chunks
                    h.update(view[pos:stop])
                    if stop % WINDOW == 0 or stop == size:
                        start = (stop - 1) // WINDOW * WINDOW
                        mm.madvise(mmap.MADV_DONTNEED, start, stop - start)
                    pos = stop
                digests[key] = h.hexdigest()
        finally:
            view.release()
    return digests


def sha256_file(path: Path) -> str:
    return _walk(path, [("", 0, path.stat().st_size)])[""]


def git_blob_id(path: Path) -> str:
    """The git object id of the file's bytes: sha1 of `blob <size>\\0<bytes>` (what a hub listing names)."""
    with open_regular(path) as f:
        h = hashlib.sha1(b"blob %d\x00" % os.fstat(f.fileno()).st_size)
        while chunk := f.read(WINDOW):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class FileHashes:
    path: Path
    size: int
    sha256: str
    header: Header | None  # None for files that are not safetensors
    tensors: dict[str, str]  # tensor name -> sha256 of its bytes


def hash_files(
    paths: list[Path],
    *,
    workers: int | None = None,
    on_done: Callable[[Path, int], None] | None = None,
) -> list[FileHashes]:
    """Hash every file; `.safetensors` headers are validated first (a bad header fails fast)."""
    headers = {p: read_header(p) if p.suffix == ".safetensors" else None for p in paths}
    workers = workers or min(8, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sha256") as pool:
        jobs: list[tuple[Path, Future[str], Future[dict[str, str]] | None]] = []
        for p in sorted(paths, key=lambda q: -q.stat().st_size):  # big files first: better packing
            whole = pool.submit(sha256_file, p)
            header = headers[p]
            spans = [(t.name, t.begin, t.end) for t in header.tensors] if header else None
            jobs.append((p, whole, pool.submit(_walk, p, spans) if spans else None))
        results = {}
        for p, digest, tensors in jobs:
            results[p] = FileHashes(
                p, p.stat().st_size, digest.result(), headers[p], tensors.result() if tensors else {}
            )
            if on_done:
                on_done(p, results[p].size)
    return [results[p] for p in paths]
