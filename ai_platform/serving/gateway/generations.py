"""The generation log: every reply the gateway gives goes to the warehouse, off the request path.

Each row is first appended to the journal (fsync'd) on the request's way out, then
written to the warehouse in batches by one thread; rows a dead gateway left in its
journal are replayed when the next one starts. A batch is written after `quiet_s`
without a new row, at 500 rows, or once its first row has waited `max_wait_s`: each
write opens the warehouse, checks its migrations and checkpoints (~40 ms of CPU whatever
its size), so batches stay large under load, and rows still reach the warehouse within
seconds when the traffic never pauses. The thread is not woken for each row: it sleeps
until the next of those moments (each row carries the time it came), then takes
every row waiting at once; 500 waiting rows, or a flush, wake it early.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Final

from ai_platform import warehouse
from ai_platform.serving.gateway.journal import Journal
from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.warehouse import insert_rows

LOG = logging.getLogger("ai_platform.gateway")

# DuckDB refuses a second connection to a file in one process when the two differ in
# configuration (read-only vs read-write): every warehouse access of the gateway goes
# through this lock (seen: the trust-model reload and the generation log collided and
# generations were dropped).
WAREHOUSE_LOCK = threading.Lock()
BATCH_ROWS = 500
_FLUSH: Final = object()  # put on the queue by flush(): write what is pending now


class GenerationLog:
    """Generations go to the warehouse from one background thread, in batches (DuckDB has one writer).

    A batch that cannot be written is kept and retried with backoff, never dropped, whatever
    the failure (a held lock, a full disk, an I/O error): a generation a reviewer may later
    label must exist when the label arrives. Waiting rows, written rows and failed writes
    are on /metrics; each failure is also logged.
    """

    def __init__(
        self,
        metrics: Metrics,
        journal: Journal | None = None,
        backoff_s: tuple[float, float] = (0.5, 30.0),
        quiet_s: float = 1.0,
        max_wait_s: float = 5.0,
    ) -> None:
        self.metrics = metrics
        self.journal = journal
        self.backoff_s = backoff_s
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self.queue: queue.Queue[Any] = queue.Queue()  # (target, row, segment, monotonic time it came) or _FLUSH
        self.wake = threading.Event()  # set by a flush, or once BATCH_ROWS rows wait: the writer takes them now
        for segment, entries in journal.orphans() if journal else []:
            LOG.warning("replaying %d journaled rows of a gateway that stopped: %s", len(entries), segment.name)
            for entry in entries:
                self._put((entry["db"], entry["table"]), entry["row"], segment)
        self.thread = threading.Thread(target=self._run, name="generation-log", daemon=True)
        self.thread.start()

    @property
    def full(self) -> bool:
        """Too many journaled rows wait for the warehouse: refuse new requests rather than lose one."""
        return self.journal is not None and self.journal.full

    def add(self, warehouse: str, row: list[Any], table: str = "generations") -> None:
        """Journal one row for `table` (generations, or guard_actions) of `warehouse`, then queue it.
        Returns once the row is on disk: call it before the reply goes out."""
        segment = self.journal.append({"db": warehouse, "table": table, "row": row}) if self.journal else None
        self._put((warehouse, table), row, segment)

    async def add_async(self, warehouse: str, row: list[Any], table: str = "generations") -> None:
        """`add` for the event loop: awaits the journal's fsync that covers the row without taking a thread."""
        entry = {"db": warehouse, "table": table, "row": row}
        segment = await self.journal.append_async(entry) if self.journal else None
        self._put((warehouse, table), row, segment)

    def _put(self, target: tuple[str, str], row: list[Any], segment: Path | None) -> None:
        self.queue.put((target, row, segment, time.monotonic()))
        self.metrics.log_pending.inc()
        if self.queue.qsize() >= BATCH_ROWS:
            self.wake.set()

    def flush(self, timeout_s: float = 10.0) -> None:
        """Write what is pending now, and wait (at most `timeout_s`) until it is in the warehouse."""
        self.queue.put(_FLUSH)
        self.wake.set()
        deadline = time.monotonic() + timeout_s
        while self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)

    def _run(self) -> None:
        pending: dict[tuple[str, str], list[tuple[list[Any], Path | None]]] = defaultdict(list)
        taken, delay, retry_at = 0, self.backoff_s[0], 0.0
        due = math.inf  # the latest the pending rows wait: max_wait_s after the first of them came
        last = -math.inf  # when the latest pending row came: quiet_s after it, the batch is written
        urgent = False
        while True:
            now = time.monotonic()
            if not pending:
                # a row that comes now is found in time for the earlier of its two deadlines
                wait = min(self.quiet_s, self.max_wait_s)
            elif urgent or now >= due:
                wait = max(0.0, retry_at - now)
            else:
                wait = max(min(last + self.quiet_s, due) - now, retry_at - now)
            if wait > 0:
                self.wake.wait(wait)
            self.wake.clear()  # before taking the rows: a row put after this sets it again
            flushed = False
            while True:
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is _FLUSH:
                    self.queue.task_done()
                    flushed = True
                else:
                    target, row, segment, came = item
                    pending[target].append((row, segment))
                    taken += 1
                    due, last = min(due, came + self.max_wait_s), max(last, came)
            urgent = urgent or (flushed and bool(pending))
            now = time.monotonic()
            if not pending or now < retry_at:
                continue
            quiet = now - last >= self.quiet_s
            if taken < BATCH_ROWS and not (quiet or urgent) and now < due:
                continue
            taken = 0
            for target in list(pending):
                db, table = target
                try:
                    with WAREHOUSE_LOCK, warehouse.at(db).write() as con:
                        insert_rows(con, table, [row for row, _ in pending[target]], idempotent=True)
                except Exception as exc:  # any failure at all: keep the rows and the thread, retry later
                    self.metrics.log_failures.inc()
                    LOG.warning(
                        "%d rows wait to be logged to %s (retry in %.1f s): %s: %s",
                        len(pending[target]),
                        db,
                        delay,
                        type(exc).__name__,
                        exc,
                    )
                    retry_at, delay = time.monotonic() + delay, min(delay * 2, self.backoff_s[1])
                    continue
                written = pending.pop(target)
                self.metrics.log_written.inc(len(written))
                self.metrics.log_pending.dec(len(written))
                for segment, count in Counter(segment for _, segment in written).items():
                    if self.journal and segment:
                        self.journal.done(segment, count)
                for _ in written:
                    self.queue.task_done()
            if not pending:
                delay, due, last, urgent = self.backoff_s[0], math.inf, -math.inf, False
