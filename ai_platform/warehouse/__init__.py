"""The warehouse: one schema (numbered migrations, the analysts' views) in one of two profiles.

- `file.Warehouse`: a DuckDB file, the embedded default; one writer at a time, short transactions.
- `ducklake.Lake`: DuckLake with its catalog in PostgreSQL, the production profile; writers and
  analysts at once, from any number of processes and machines.

`at(location)` picks the profile: a `ducklake:` catalog string or a file path.
"""

from __future__ import annotations

from pathlib import Path

from ai_platform.warehouse.file import (
    COLUMNS,
    GENERATION_COLUMNS,
    GUARD_ACTION_COLUMNS,
    TABLES,
    VIEWS,
    Migration,
    Warehouse,
    generation_row,
    insert_generations,
    insert_new,
    insert_rows,
    migrations,
)

__all__ = [
    "COLUMNS",
    "GENERATION_COLUMNS",
    "GUARD_ACTION_COLUMNS",
    "TABLES",
    "VIEWS",
    "Migration",
    "Warehouse",
    "at",
    "generation_row",
    "insert_generations",
    "insert_new",
    "insert_rows",
    "migrations",
]


def at(location: str | Path, data_path: str | None = None, *, lock_timeout_s: float = 60.0) -> Warehouse:
    """The warehouse at `location`: a DuckLake catalog (`ducklake:postgres:...`, created under `data_path`)
    or a DuckDB file."""
    from ai_platform.warehouse.ducklake import SCHEME, Lake

    text = str(location)
    if text.startswith(SCHEME):
        return Lake(text, data_path, lock_timeout_s=lock_timeout_s)
    return Warehouse(Path(text), lock_timeout_s=lock_timeout_s)
