"""A real gateway process (`ai-platform serve`) on a free port of 127.0.0.1, for tests that need more than one
(started by benchmarks/support/gateway.py, which the benchmarks use too), and what such a gateway stored."""

from __future__ import annotations

from pathlib import Path

from ai_platform.errors import WarehouseError
from ai_platform.warehouse import at
from benchmarks.support.gateway import answering, start

__all__ = ["answering", "start", "stored"]


def stored(location: Path | str) -> set[str]:
    """The generation ids in a warehouse, a DuckDB file or a DuckLake (none before its first write)."""
    if not str(location).startswith("ducklake:") and not Path(location).is_file():
        return set()
    try:
        _, rows = at(location).query("SELECT generation_id FROM generations")
    except WarehouseError:
        return set()  # a new lake: no table yet
    return {r[0] for r in rows}
