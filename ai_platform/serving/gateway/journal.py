"""The generation log's journal: every row is on disk (fsync'd) before its reply goes out.

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

import json
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ai_platform.serving.vllm import pid_alive

SEGMENT_ROWS = 500


@dataclass
class Segment:
    path: Path
    rows: int = 0
    done: int = 0
    sealed: bool = False  # no more rows will be appended
    size: int = 0


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"__datetime__": value.isoformat()}
    raise TypeError(f"cannot journal a {type(value).__name__}")


def _decode(obj: dict[str, Any]) -> Any:
    return datetime.fromisoformat(obj["__datetime__"]) if set(obj) == {"__datetime__"} else obj


class Journal:
    def __init__(self, folder: Path, max_bytes: int = 256 * 2**20) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.segments: dict[Path, Segment] = {}
        self.current: Segment | None = None
        self.handle: Any = None

    @property
    def pending_bytes(self) -> int:
        return sum(s.size for s in self.segments.values())

    @property
    def full(self) -> bool:
        return self.pending_bytes >= self.max_bytes

    def append(self, entry: dict[str, Any]) -> Path:
        """Write one entry durably; returns its segment (pass it to `done` once the row is stored)."""
        line = (json.dumps(entry, ensure_ascii=False, default=_encode) + "\n").encode("utf-8")
        with self.lock:
            if self.current is None or self.current.rows >= SEGMENT_ROWS:
                self._rotate()
            assert self.current is not None and self.handle is not None
            self.handle.write(line)
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.current.rows += 1
            self.current.size += len(line)
            return self.current.path

    def done(self, path: Path, count: int = 1) -> None:
        """`count` rows of segment `path` are in the warehouse."""
        with self.lock:
            segment = self.segments.get(path)
            if segment is None:
                return
            segment.done += count
            self._collect(segment)

    def close(self) -> None:
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
        self.current = Segment(path)
        self.segments[path] = self.current

    def _collect(self, segment: Segment) -> None:
        if segment.sealed and segment.done >= segment.rows:
            segment.path.unlink(missing_ok=True)
            self.segments.pop(segment.path, None)
