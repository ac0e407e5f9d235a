"""The journal's group commit: concurrent appends share fsyncs, and none returns before the fsync covering it."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from ai_platform.serving.gateway import journal as journal_module
from ai_platform.serving.gateway.journal import Journal

CLIENTS, EACH = 16, 25


class SlowDisk:
    """os.fsync made slow (so appends pile up behind it), recording which bytes each fsync covered."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.real = os.fsync
        self.covered: list[int] = []  # the segment's size on disk at each fsync of a segment file
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        threading.Event().wait(self.delay_s)
        self.real(fd)
        size = os.fstat(fd).st_size
        if os.path.isfile(f"/proc/self/fd/{fd}"):
            with self.lock:
                self.covered.append(size)


def durable_lines(folder: Path, disk: SlowDisk) -> set[str]:
    """The entries' ids that the fsyncs so far covered (one segment: the bytes up to the last fsync)."""
    (segment,) = folder.glob("*.jsonl")
    with disk.lock:
        synced = max(disk.covered, default=0)
    return {json.loads(line)["id"] for line in segment.read_bytes()[:synced].splitlines()}


def test_concurrent_appends_share_fsyncs_and_each_waits_for_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = SlowDisk(0.01)
    monkeypatch.setattr(journal_module.os, "fsync", disk)
    journal = Journal(tmp_path / "journal")
    early: list[str] = []  # appends that returned before an fsync covered their entry

    def client(n: int) -> None:
        for i in range(EACH):
            entry_id = f"{n}-{i}"
            journal.append({"id": entry_id, "row": ["x" * 50]})
            if entry_id not in durable_lines(tmp_path / "journal", disk):
                early.append(entry_id)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = CLIENTS * EACH
    assert not early, f"{len(early)} appends returned before the fsync that covers them"
    assert journal.current is not None and journal.current.rows == records
    assert journal.fsyncs < records / 2, f"{journal.fsyncs} fsyncs for {records} concurrent appends: not grouped"
    journal.close()


def test_async_appends_are_grouped_and_durable_when_awaited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = SlowDisk(0.01)
    monkeypatch.setattr(journal_module.os, "fsync", disk)
    journal = Journal(tmp_path / "journal")
    early: list[str] = []

    async def client(n: int) -> None:
        for i in range(EACH):
            await journal.append_async({"id": f"{n}-{i}", "row": []})
            if f"{n}-{i}" not in durable_lines(tmp_path / "journal", disk):
                early.append(f"{n}-{i}")

    async def load() -> None:
        await asyncio.gather(*(client(n) for n in range(CLIENTS)))

    asyncio.run(load())
    assert not early
    assert journal.fsyncs < CLIENTS * EACH / 2
    journal.close()


def test_a_failed_fsync_fails_every_append_it_would_have_covered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply must not go out on a row the disk refused: the caller gets the error, and later rows go to a
    fresh segment (the old one may end in a torn line)."""
    journal = Journal(tmp_path / "journal")
    first = journal.append({"id": "a", "row": []})

    def refuse(fd: int) -> Any:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(journal_module.os, "fsync", refuse)
    with pytest.raises(OSError, match="Input/output"):
        journal.append({"id": "b", "row": []})
    monkeypatch.undo()
    second = journal.append({"id": "c", "row": []})
    assert second != first, "after a failed fsync, rows go to a new segment"
    journal.done(first, 1)
    assert not first.exists(), "the sealed segment goes once its one durable row is stored"
    journal.close()
