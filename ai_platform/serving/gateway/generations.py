"""The generation log: every reply the gateway gives goes to the warehouse, off the request path."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import defaultdict
from typing import Any

from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.warehouse import Warehouse, insert_rows

LOG = logging.getLogger("ai_platform.gateway")

# DuckDB refuses a second connection to a file in one process when the two differ in
# configuration (read-only vs read-write): every warehouse access of the gateway goes
# through this lock (seen: the trust-model reload and the generation log collided and
# generations were dropped).
WAREHOUSE_LOCK = threading.Lock()


class GenerationLog:
    """Generations go to the warehouse from one background thread, in batches (DuckDB has one writer).

    A batch that cannot be written is kept and retried with backoff, never dropped, whatever
    the failure (a held lock, a full disk, an I/O error): a generation a reviewer may later
    label must exist when the label arrives. Waiting rows, written rows and failed writes
    are on /metrics; each failure is also logged.
    """

    def __init__(self, metrics: Metrics, backoff_s: tuple[float, float] = (0.5, 30.0)) -> None:
        self.metrics = metrics
        self.backoff_s = backoff_s
        self.queue: queue.Queue[tuple[tuple[str, str], list[Any]]] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="generation-log", daemon=True)
        self.thread.start()

    def add(self, warehouse: str, row: list[Any], table: str = "generations") -> None:
        """Queue one row for `table` (generations, or guard_actions) of `warehouse`."""
        self.queue.put(((warehouse, table), row))
        self.metrics.log_pending.inc()

    def flush(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)

    def _run(self) -> None:
        pending: dict[tuple[str, str], list[list[Any]]] = defaultdict(list)
        taken, delay, retry_at = 0, self.backoff_s[0], 0.0
        while True:
            try:
                target, row = self.queue.get(timeout=0.2 if not pending else 1.0)
                pending[target].append(row)
                taken += 1
                if taken < 500:
                    continue
            except queue.Empty:
                pass
            taken = 0
            if time.monotonic() < retry_at:
                continue
            for target in list(pending):
                db, table = target
                try:
                    with WAREHOUSE_LOCK, Warehouse(db).write() as con:
                        insert_rows(con, table, pending[target])
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
                for _ in written:
                    self.queue.task_done()
            if not pending:
                delay = self.backoff_s[0]
