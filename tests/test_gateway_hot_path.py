"""What the gateway's request path must not do: start a thread per admission, or hold rows back from the
warehouse while traffic never pauses."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ai_platform.config import Admission
from ai_platform.serving.gateway.admission import Windows
from ai_platform.serving.gateway.generations import BATCH_ROWS, WAREHOUSE_LOCK, GenerationLog
from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.warehouse import Warehouse, generation_row


def gateway_row(i: int) -> list[Any]:
    """The warehouse row of a gateway generation `gen-<i>`, received at one fixed time."""
    received = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    return generation_row(
        generation_id=f"gen-{i}", model="m", prompt_name="p", prompt_version="v", source="gateway", created_at=received
    )


def test_admission_in_memory_starts_no_thread_per_request() -> None:
    """limits' memory storage started a timer thread on nearly every hit (~0.45 ms of CPU each)."""
    windows = Windows()
    policy = Admission.model_validate({"budget": 1000, "key_share": 1.0, "window_s": 10})
    before = set(threading.enumerate())
    for _ in range(5):
        time.sleep(0.02)  # requests ~20 ms apart, as at a gateway's rates
        assert windows.admit("m", "k", policy, 300, 16).kind == "admitted"
        started = [t for t in threading.enumerate() if t not in before]
        assert not started, f"an admission started {started}"


def test_admission_window_frees_room_as_weights_age_out() -> None:
    windows = Windows()
    policy = Admission.model_validate({"budget": 2, "key_share": 1.0, "window_s": 1})
    assert windows.admit("m", "k", policy, 300, 16).kind == "admitted"
    assert windows.admit("m", "k", policy, 300, 16).kind == "admitted"
    refused = windows.admit("m", "k", policy, 300, 16)
    assert refused.kind == "rejected" and refused.retry_after_s == 1
    time.sleep(1.05)
    assert windows.admit("m", "k", policy, 300, 16).kind == "admitted"


def test_rows_reach_the_warehouse_while_traffic_never_pauses(tmp_path: Path) -> None:
    """The writer waited for 1 s without a row (or 500 rows): under steady traffic rows sat in memory."""
    db = str(tmp_path / "wh.duckdb")
    log = GenerationLog(Metrics(), max_wait_s=1.5)
    first_seen: float | None = None
    started = time.monotonic()
    for i in range(50):  # a row every 0.1 s for 5 s, never a lull
        log.add(db, gateway_row(i))
        time.sleep(0.1)
        if first_seen is None and Path(db).is_file():
            _, rows = Warehouse(db).query("SELECT count(*) FROM generations")
            first_seen = time.monotonic() - started if rows[0][0] else None
    assert first_seen is not None, "no row reached the warehouse in 5 s of steady traffic"
    log.flush()


def test_a_full_batch_is_written_at_once_without_waiting_for_a_lull(tmp_path: Path) -> None:
    """The writer sleeps until its next deadline rather than waking per row; 500 waiting rows wake it early."""
    db = str(tmp_path / "wh.duckdb")
    log = GenerationLog(Metrics(), quiet_s=3600, max_wait_s=3600)
    for i in range(BATCH_ROWS):
        log.add(db, gateway_row(i))
    deadline, stored = time.monotonic() + 60, 0  # a generous bound on a loaded machine, not a latency claim
    while stored < BATCH_ROWS and time.monotonic() < deadline:
        time.sleep(0.1)
        if Path(db).is_file():
            with WAREHOUSE_LOCK:
                stored = Warehouse(db).query("SELECT count(*) FROM generations")[1][0][0]
    assert stored == BATCH_ROWS, "a full batch waits for neither a lull nor max_wait_s"


def test_a_row_is_written_max_wait_s_after_it_came_when_quiet_s_is_longer(tmp_path: Path) -> None:
    """An idle writer sleeps for the earlier of the two deadlines, so max_wait_s holds for the first row too."""
    db = str(tmp_path / "wh.duckdb")
    log = GenerationLog(Metrics(), quiet_s=3600, max_wait_s=0.2)
    log.add(db, gateway_row(0))
    deadline, stored = time.monotonic() + 60, 0  # a generous bound on a loaded machine, not a latency claim
    while not stored and time.monotonic() < deadline:
        time.sleep(0.1)
        if Path(db).is_file():
            with WAREHOUSE_LOCK:
                stored = Warehouse(db).query("SELECT count(*) FROM generations")[1][0][0]
    assert stored == 1, "written within max_wait_s, not after quiet_s"
