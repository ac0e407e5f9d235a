"""The production warehouse profile: DuckLake, its catalog in PostgreSQL, its data files under a data path.

Same interface, schema, migrations and views as the DuckDB file (`Warehouse`), but
no file lock: PostgreSQL holds the catalog, so writers (gateway replicas, pipeline
stages, label ingest) and analysts run at once, each transaction on its own
snapshot, and no writer waits for a reader. Analysts attach with plain DuckDB:

    LOAD ducklake; LOAD postgres;
    ATTACH 'ducklake:postgres:dbname=lake host=HOST user=USER' AS lake (READ_ONLY); USE lake;

DuckLake holds no PRIMARY KEY, UNIQUE or CHECK constraint, so the migrations are
applied with those removed (`ddl`), and every writer that relied on a key states
it (`insert ... where not exists`). The extensions come from the PyPI packages
`duckdb-extension-ducklake` and `duckdb-extension-postgres-scanner`, loaded by path:
nothing is downloaded at run time. The PostgreSQL password, if any, comes from
libpq's environment (PGPASSWORD, PGPASSFILE), never platform.yaml.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from ai_platform.errors import MigrationConflictError, WarehouseError
from ai_platform.warehouse.file import Warehouse, write_conflict

SCHEME = "ducklake:"
INLINE_ROWS = 100  # an insert this small lives in the catalog until `maintain` writes it out as Parquet
ALIAS = "lake"
_ATTACHED: dict[tuple[int, str, bool], duckdb.DuckDBPyConnection] = {}
_MIGRATED: set[tuple[int, str]] = set()
_OPENING = threading.Lock()
CONSTRAINTS = (exp.PrimaryKeyColumnConstraint, exp.PrimaryKey, exp.UniqueColumnConstraint, exp.CheckColumnConstraint)


def extension(package: str) -> Path:
    """The `.duckdb_extension` file a PyPI extension package carries (for this duckdb version)."""
    module = importlib.import_module(package)
    found = sorted(Path(str(module.__file__)).parent.glob(f"extensions/v{duckdb.__version__}/*.duckdb_extension"))
    if not found:
        raise WarehouseError(
            f"{package} has no extension for duckdb {duckdb.__version__}; install {package}=={duckdb.__version__}"
        )
    return found[0]


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def ddl(sql: str) -> list[str]:
    """Schema SQL as DuckLake takes it: every statement, with its PRIMARY KEY, UNIQUE and CHECK constraints
    removed (a table-level constraint too). Comments are dropped with them."""
    statements = []
    for statement in sqlglot.parse(sql, read="duckdb"):
        if statement is None:
            continue
        for node in list(statement.find_all(*CONSTRAINTS)):
            parent = node.parent
            (parent if isinstance(parent, exp.ColumnConstraint) else node).pop()
        statements.append(statement.sql(dialect="duckdb", comments=False))
    return statements


class Lake(Warehouse):
    """A DuckLake: `catalog` is its ATTACH string (`ducklake:postgres:dbname=... host=...`); `data_path`, a
    folder every writer reaches, is needed only to create it (the catalog remembers it)."""

    def __init__(self, catalog: str, data_path: str | None = None, *, lock_timeout_s: float = 60.0) -> None:
        if not catalog.startswith(SCHEME):
            raise WarehouseError(f"{catalog!r}: a DuckLake catalog starts with {SCHEME}")
        super().__init__(Path("."), lock_timeout_s=lock_timeout_s)
        self.catalog = catalog
        self.data_path = data_path

    @property
    def location(self) -> str:
        return self.catalog

    def attach(self, read_only: bool) -> list[str]:
        """The statements that attach this lake in a DuckDB session (ours, or an analyst's `duckdb`)."""
        options = ["READ_ONLY"] if read_only else [f"DATA_INLINING_ROW_LIMIT {INLINE_ROWS}"]
        if self.data_path and not read_only:
            options.append(f"DATA_PATH {_quoted(self.data_path)}")
        return [
            *(f"LOAD '{extension(p)}'" for p in ("duckdb_extension_ducklake", "duckdb_extension_postgres_scanner")),
            f"ATTACH {_quoted(self.catalog)} AS {ALIAS} ({', '.join(options)})",
            f"USE {ALIAS}",
        ]

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """A cursor on this process's one attached database (per catalog, read-only or not): attaching costs
        a PostgreSQL round trip per catalog table, so it happens once. Each cursor is its own connection
        with its own transactions; closing it leaves the database attached."""
        key = (os.getpid(), self.catalog, read_only)
        with _OPENING:
            database = _ATTACHED.get(key)
            if database is None:
                database = duckdb.connect()
                try:
                    for statement in self.attach(read_only):
                        database.execute(statement)
                except duckdb.Error as exc:
                    database.close()
                    raise WarehouseError(f"{self.catalog}: cannot attach the DuckLake: {exc}") from None
                _ATTACHED[key] = database
        cursor = database.cursor()
        cursor.execute(f"USE {ALIAS}")
        return cursor

    def shell(self) -> list[str]:
        return ["-cmd", "; ".join(self.attach(read_only=True))]

    def _exists(self) -> bool:
        return True  # an empty lake answers "no such table", which says as much

    def _ddl(self, sql: str) -> list[str]:
        return ddl(sql)

    def migrate(self) -> list[int]:
        _MIGRATED.discard((os.getpid(), self.catalog))  # asked for: check again
        return super().migrate()

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> list[int]:
        """Checked once per process (a new migration comes with new code, so a new process). Two processes
        that open a new lake at once both try its migrations; one commits, the other's commit conflicts,
        and it reads the schema again and finds it current."""
        if (os.getpid(), self.catalog) in _MIGRATED:
            return []
        for attempt in range(6):
            try:
                applied = super()._migrate(con)
                _MIGRATED.add((os.getpid(), self.catalog))
                return applied
            except (duckdb.Error, MigrationConflictError) as exc:  # at commit, or wrapped by a statement's
                conflict = isinstance(exc, MigrationConflictError) or write_conflict(exc)
                if not conflict or attempt == 5:
                    raise
                time.sleep(0.1 * (attempt + 1))
        raise AssertionError("unreachable")

    def maintain(self, keep_days: int = 7) -> dict[str, Any]:
        """Housekeeping, run daily by the `maintain_warehouse` schedule: inlined rows are written out as
        Parquet, small adjacent files merged (time travel still sees every snapshot), snapshots older than
        `keep_days` expired, and the files only they used deleted."""
        older = f"now() - INTERVAL '{int(keep_days)} days'"
        steps = {
            "flushed": f"CALL ducklake_flush_inlined_data('{ALIAS}')",
            "merged": f"CALL ducklake_merge_adjacent_files('{ALIAS}')",
            "expired": f"CALL ducklake_expire_snapshots('{ALIAS}', older_than => {older})",
            "deleted": f"CALL ducklake_cleanup_old_files('{ALIAS}', older_than => {older})",
        }
        con = self._connect(read_only=False)
        try:
            return {name: len(con.execute(sql).fetchall()) for name, sql in steps.items()}
        finally:
            con.close()
