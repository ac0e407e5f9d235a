"""A DuckDB-file warehouse written by duckdb 2.0 (the platform's version before DuckLake), copied into this one's.

duckdb 1.5 cannot open a 2.0 file (storage version 999), and the platform moved
to 1.5.5 because the DuckLake extensions exist only for it. `convert` installs
duckdb 2.0 on the side (pip, into $AI_PLATFORM_CACHE, else ~/.cache/ai-platform), has it export every
table to Parquet, creates a fresh warehouse with this version's migrations, loads
each table by column name, checks every row count, and swaps the files: the
original stays beside it as `<name>.duckdb-2.0`. Nothing is lost if any step fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ai_platform import usercache
from ai_platform.errors import WarehouseError
from ai_platform.warehouse.file import Warehouse

OLD = "2.0.0"
EXPORT = """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
tables = [r[0] for r in con.execute(
    "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema = 'main'"
).fetchall()]
counts = {}
for table in tables:
    con.execute(f"COPY {table} TO '{sys.argv[2]}/{table}.parquet' (FORMAT parquet)")
    counts[table] = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
print(json.dumps(counts))
"""


def cache_dir() -> Path:
    """Where the side install of duckdb 2.0 goes: the machine's cache (`usercache.base`)."""
    return usercache.base()


def old_duckdb(cache: Path) -> Path:
    """A folder holding duckdb 2.0 for PYTHONPATH (installed once, from PyPI)."""
    target = cache / f"duckdb-{OLD}"
    if not (target / "duckdb").is_dir():
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), f"duckdb=={OLD}"],
            capture_output=True,
            text=True,
        )
        if done.returncode:
            raise WarehouseError(f"cannot install duckdb {OLD} to read the old warehouse: {done.stderr.strip()[-500:]}")
    return target


def convert(path: Path, cache: Path) -> dict[str, int]:
    """Copy the duckdb-2.0 file at `path` into a current warehouse there; the rows per table."""
    path = Path(path)
    kept = path.with_name(path.name + "-2.0")
    if kept.exists():
        raise WarehouseError(f"{kept} exists: a conversion ran before; move it away to convert again")
    with tempfile.TemporaryDirectory(prefix="ai-platform-convert-", dir=path.parent) as tmp:
        exported = subprocess.run(
            [sys.executable, "-c", EXPORT, str(path), tmp],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(old_duckdb(cache)), "PATH": "/usr/bin:/bin"},
        )
        if exported.returncode:
            raise WarehouseError(f"{path}: duckdb {OLD} could not export it: {exported.stderr.strip()[-500:]}")
        counts: dict[str, int] = json.loads(exported.stdout)
        fresh = Path(tmp) / "warehouse.duckdb"
        with Warehouse(fresh).write() as con:
            for table, rows in counts.items():
                if table == "schema_migrations":
                    continue  # the fresh file has this version's, every migration applied
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet('{tmp}/{table}.parquet')")
                (loaded,) = con.execute(f"SELECT count(*) FROM {table}").fetchone() or (0,)
                if loaded != rows:
                    raise WarehouseError(f"{table}: {rows} rows exported, {loaded} loaded; nothing was changed")
        path.rename(kept)
        fresh.rename(path)
    counts.pop("schema_migrations", None)
    return counts
