"""The generation log's journal: every row is on disk (fsync'd) before its reply goes out.

Rows are made durable in groups: one writer thread writes every row waiting, fsyncs
once, then releases each caller (a thread, or an awaiting request on the event loop),
so concurrent requests share one fsync and none is answered before the fsync that
covers its own row.

Rows are appended as JSON lines to segments under `<home>/gateway/journal/`, named
`<pid>-<start ns>.jsonl`, one process's segments at a time. A segment is deleted
once it is full (or its process is done with it) and every row in it is in the
warehouse. When a gateway starts, the segments of processes that are no longer
alive (a kill -9, a crash, a shutdown that could not flush) are replayed: their
rows are queued again, and inserting them is idempotent (by primary key). The
journal is bounded: over `max_bytes` of rows not yet in the warehouse, the
gateway refuses new requests (503) rather than lose one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ai_platform.errors import ServingError
from ai_platform.serving.vllm import pid_alive

SEGMENT_ROWS = 500


@dataclass
class Segment:
    path: Path
    rows: int = 0
    done: int = 0
    sealed: bool = False  # no more rows will be appended
    size: int = 0


def _line(entry: dict[str, Any]) -> bytes:
    return (json.dumps(entry, ensure_ascii=False, default=_encode) + "\n").encode("utf-8")


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"__datetime__": value.isoformat()}
    raise TypeError(f"cannot journal a {type(value).__name__}")


def _decode(obj: dict[str, Any]) -> Any:
    return datetime.fromisoformat(obj["__datetime__"]) if set(obj) == {"__datetime__"} else obj


class _Waiter:
    """One appended entry waiting for the fsync that covers it: a thread's event, or an event loop's future."""

    __slots__ = ("error", "event", "future", "line", "loop", "path")

    def __init__(self, line: bytes, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.line = line
        self.path: Path | None = None
        self.error: BaseException | None = None
        self.loop = loop
        self.event = None if loop else threading.Event()
        self.future: asyncio.Future[Path] | None = loop.create_future() if loop else None

    def _settle(self) -> None:
        assert self.future is not None
        if self.future.done():
            return
        if self.error is not None:
            self.future.set_exception(self.error)
        else:
            assert self.path is not None
            self.future.set_result(self.path)


def _release(group: list[_Waiter]) -> None:
    """Release each waiter of a group: a thread's event at once; an event loop's futures with one callback per loop
    (each call_soon_threadsafe wakes the loop), not one per entry."""
    settle: dict[asyncio.AbstractEventLoop, list[_Waiter]] = {}
    for waiter in group:
        if waiter.event is not None:
            waiter.event.set()
        elif waiter.loop is not None:
            settle.setdefault(waiter.loop, []).append(waiter)
    for loop, waiters in settle.items():
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            loop.call_soon_threadsafe(_settle_all, waiters)


def _settle_all(waiters: list[_Waiter]) -> None:
    for waiter in waiters:
        waiter._settle()


class Journal:
    """Appends are made durable in groups: one writer thread takes every entry waiting, writes them, fsyncs once
    and only then releases each of their callers, so concurrent requests share an fsync and none returns
    before the fsync that covers its own entry."""

    def __init__(self, folder: Path, max_bytes: int = 256 * 2**20) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.lock = threading.Lock()  # segments, current, handle
        self.segments: dict[Path, Segment] = {}
        self.current: Segment | None = None
        self.handle: Any = None
        self.fsyncs = 0  # how many fsyncs covered the entries so far (one per group)
        self._pending_bytes = 0
        # What waits for the writer (a C queue: putting one wakes the writer without Python-level locking); None,
        # put by close() and never followed by anything, stops it
        self._waiting: queue.SimpleQueue[_Waiter | None] = queue.SimpleQueue()
        self._submitting = threading.Lock()  # closed, the writer's start, and the put happen together
        self._closed = False
        self._writer: threading.Thread | None = None

    @property
    def pending_bytes(self) -> int:
        """Bytes of journaled rows not yet in the warehouse (read without the lock: the event loop asks)."""
        return self._pending_bytes

    @property
    def full(self) -> bool:
        return self.pending_bytes >= self.max_bytes

    def append(self, entry: dict[str, Any]) -> Path:
        """Write one entry durably; returns its segment (pass it to `done` once the row is stored). Blocks until
        the fsync that covers the entry is done; an OSError of the write or the fsync is raised here."""
        waiter = self._submit(_Waiter(_line(entry)))
        assert waiter.event is not None
        waiter.event.wait()
        if waiter.error is not None:
            raise waiter.error
        assert waiter.path is not None
        return waiter.path

    async def append_async(self, entry: dict[str, Any]) -> Path:
        """`append` for an event loop: awaits the fsync that covers the entry without holding a thread."""
        waiter = self._submit(_Waiter(_line(entry), asyncio.get_running_loop()))
        assert waiter.future is not None
        return await waiter.future

    def _submit(self, waiter: _Waiter) -> _Waiter:
        with self._submitting:
            if self._closed:
                raise ServingError(f"{self.folder}: the journal is closed")
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_groups, name="journal", daemon=True)
                self._writer.start()
            self._waiting.put(waiter)
        return waiter

    def _write_groups(self) -> None:
        while True:
            group = [self._waiting.get()]
            with contextlib.suppress(queue.Empty):
                while True:
                    group.append(self._waiting.get_nowait())
            closed = group[-1] is None  # close()'s None is the last thing ever put
            entries = [waiter for waiter in group if waiter is not None]
            if entries:
                self._write(entries)
                _release(entries)
            if closed:
                return

    def _write(self, group: list[_Waiter]) -> None:
        """Write a group of entries and fsync each segment it touched once; on a failure every entry of the group
        not yet durable carries the error, and the segment is sealed (a torn line may end it)."""
        with self.lock:
            written: list[_Waiter] = []
            try:
                for waiter in group:
                    if self.current is None or self.current.rows >= SEGMENT_ROWS:
                        self._sync(written)
                        written = []
                        self._rotate()
                    assert self.current is not None and self.handle is not None
                    self.handle.write(waiter.line)
                    waiter.path = self.current.path
                    written.append(waiter)
                self._sync(written)
            except OSError as exc:
                for waiter in group:
                    if waiter.path is None or waiter in written:
                        waiter.error = exc
                if self.current is not None:  # nothing more goes after a line that may be torn
                    self.current.sealed = True
                    with contextlib.suppress(OSError):
                        self.handle.close()
                    self._collect(self.current)
                    self.current, self.handle = None, None

    def _sync(self, written: list[_Waiter]) -> None:
        """Flush and fsync the current segment; then its `written` entries count as journaled."""
        if not written:
            return
        assert self.current is not None and self.handle is not None
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.fsyncs += 1
        self.current.rows += len(written)
        size = sum(len(w.line) for w in written)
        self.current.size += size
        self._pending_bytes += size
        written.clear()

    def done(self, path: Path, count: int = 1) -> None:
        """`count` rows of segment `path` are in the warehouse."""
        with self.lock:
            segment = self.segments.get(path)
            if segment is None:
                return
            segment.done += count
            self._collect(segment)

    def close(self) -> None:
        """Write what is waiting, stop the writer, seal the current segment."""
        with self._submitting:
            writer = self._writer if not self._closed else None
            self._closed = True
            if writer is not None:
                self._waiting.put(None)
        if writer is not None:
            writer.join()
        with self.lock:
            if self.current is not None:
                self.current.sealed = True
                self.handle.close()
                self._collect(self.current)
                self.current, self.handle = None, None

    def orphans(self) -> list[tuple[Path, list[dict[str, Any]]]]:
        """Segments of gateway processes that are gone, with their entries, adopted by this journal."""
        found = []
        for path in sorted(self.folder.glob("*.jsonl")):
            pid = int(path.name.split("-", 1)[0]) if path.name.split("-", 1)[0].isdigit() else -1
            if pid == os.getpid() or pid_alive(pid):
                continue
            entries = []
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entries.append(json.loads(line, object_hook=_decode))
                except ValueError:
                    break  # a line cut short by the crash: its reply never went out
            with self.lock:
                self.segments[path] = Segment(path, rows=len(entries), sealed=True, size=path.stat().st_size)
                self._pending_bytes += self.segments[path].size
                self._collect(self.segments[path])
            found.append((path, entries))
        return found

    def _rotate(self) -> None:
        if self.current is not None:
            self.current.sealed = True
            self.handle.close()
            self._collect(self.current)
        path = self.folder / f"{os.getpid()}-{time.time_ns()}.jsonl"
        self.handle = path.open("ab")
        _fsync_folder(self.folder)  # the new segment's name survives a power cut too, not only its bytes
        self.current = Segment(path)
        self.segments[path] = self.current

    def _collect(self, segment: Segment) -> None:
        if segment.sealed and segment.done >= segment.rows:
            segment.path.unlink(missing_ok=True)
            if self.segments.pop(segment.path, None) is not None:
                self._pending_bytes -= segment.size
