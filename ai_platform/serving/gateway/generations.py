"""The generation log: every reply the gateway gives goes to the warehouse, off the request path."""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from typing import Any

from ai_platform.errors import PlatformError
from ai_platform.warehouse import Warehouse, insert_generations

# DuckDB refuses a second connection to a file in one process when the two differ in
# configuration (read-only vs read-write): every warehouse access of the gateway goes
# through this lock (seen: the trust-model reload and the generation log collided and
# generations were dropped).
WAREHOUSE_LOCK = threading.Lock()


class GenerationLog:
    """Generations go to the warehouse from one background thread, in batches (DuckDB has one writer).

    A batch that cannot be written is kept and retried, never dropped: a generation a
    reviewer may later label must exist when the label arrives.
    """

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, list[Any]]] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="generation-log", daemon=True)
        self.thread.start()

    def add(self, warehouse: str, row: list[Any]) -> None:
        self.queue.put((warehouse, row))

    def flush(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)

    def _run(self) -> None:
        pending: dict[str, list[list[Any]]] = defaultdict(list)
        taken = 0
        while True:
            try:
                db, row = self.queue.get(timeout=0.2 if not pending else 1.0)
                pending[db].append(row)
                taken += 1
                if taken < 500:
                    continue
            except queue.Empty:
                pass
            for db in list(pending):
                try:
                    with WAREHOUSE_LOCK, Warehouse(db).write() as con:
                        insert_generations(con, pending[db])
                except PlatformError as exc:  # keep serving and keep the rows: the next round retries
                    print(f"gateway: {len(pending[db])} generations wait to be logged to {db}: {exc}", flush=True)
                    continue
                for _ in pending.pop(db):
                    self.queue.task_done()
            taken = 0
