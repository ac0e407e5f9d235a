"""The DuckDB warehouse: one schema, numbered migrations applied on open.

DuckDB allows one read-write process per file at a time, and an analyst's
read-only session holds a shared lock. So writers keep transactions short:
open, one transaction, close. Opening retries with backoff while another
process (or, with duckdb 1.5, another thread in another mode) holds the file, and gives
up with a clear error after `lock_timeout_s`.
A reader sees either all of a write transaction or none of it.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from ai_platform.errors import (
    AppliedMigrationChangedError,
    MigrationConflictError,
    MigrationError,
    NewerWarehouseFile,
    NoWarehouseYetError,
    WarehouseBusyError,
    WarehouseError,
    WarehouseQueryError,
)

TABLES = (
    "weight_files",
    "tensor_hashes",
    "quantizations",
    "prompt_versions",
    "images",
    "eval_runs",
    "eval_cases",
    "deployments",
    "generations",
    "canary_generations",
    "feedback_labels",
    "feedback_quarantine",
    "trust_models",
    "serving_preflights",
    "guard_actions",
)
VIEWS = ("label_summary", "generation_quality")

# One row per reply a model gave, from the canary or the gateway: what reviewers label.
GENERATION_COLUMNS = (
    "generation_id",
    "model",
    "prompt_name",
    "prompt_version",
    "image_digest",
    "source",
    "input",
    "output",
    "metrics",
    "finish_reason",
    "latency_s",
    "trust_score",
    "needs_review",
    "created_at",  # when the request came in, not when the row was written
)


# One row per time a gateway guard acted: scores, never raw text or a secret.
GUARD_ACTION_COLUMNS = (
    "action_id",
    "occurred_at",
    "key_name",
    "model",
    "prompt_name",
    "route",
    "guard",
    "action",
    "reason",
    "scores",
)
COLUMNS = {"generations": GENERATION_COLUMNS, "guard_actions": GUARD_ACTION_COLUMNS}


KEYS = {"generations": "generation_id", "guard_actions": "action_id"}
INSERT_CHUNK = 200  # rows per INSERT statement of insert_new
ARROW_ROWS = 20  # from this many rows insert_new hands DuckDB one Arrow table instead of bound parameters


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[list[Any]], *, idempotent: bool = False) -> None:
    """Insert rows into `table`, each row's values in COLUMNS[table] order (inside the caller's transaction).

    `idempotent`: a row whose key is already there is skipped (a replayed journal)."""
    columns = COLUMNS[table]
    if idempotent:
        insert_new(con, table, columns, KEYS[table], rows)
        return
    marks = ", ".join("?" * len(columns))
    con.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def insert_new(
    con: duckdb.DuckDBPyConnection, table: str, columns: Sequence[str], key: str, rows: Sequence[Sequence[Any]]
) -> None:
    """Insert the rows whose `key` is not in `table` yet, once each: what a primary key's conflict clause did,
    written out, because the DuckLake profile holds no keys. One anti-join per batch, not per row."""
    if not rows:
        return
    names = ", ".join(columns)
    con.execute(f"CREATE OR REPLACE TEMP TABLE incoming AS SELECT {names} FROM {table} LIMIT 0")
    try:
        _fill_incoming(con, columns, rows)
        con.execute(
            f"INSERT INTO {table} ({names}) SELECT DISTINCT ON ({key}) {names} FROM incoming"
            f" WHERE {key} NOT IN (SELECT {key} FROM {table} WHERE {key} IS NOT NULL)"
        )
    finally:
        con.execute("DROP TABLE IF EXISTS temp.incoming")


def _fill_incoming(con: duckdb.DuckDBPyConnection, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """The rows into the temp table `incoming` (cast to its column types): as one Arrow table where there are
    ARROW_ROWS or more and every column converts (~0.02 ms of CPU a row of `generations`), else as bound
    parameters, many rows per statement (~0.13 ms a row: DuckDB binds each value from Python; its executemany
    runs one INSERT per row, ~0.4 ms each)."""
    names = ", ".join(columns)
    if len(rows) >= ARROW_ROWS:
        import pyarrow as pa  # only where a batch is this large: the gateway's generation log

        try:
            arrived = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
            pass  # a column Arrow cannot hold as one type (mixed values): DuckDB casts each bound value instead
        else:
            con.register("incoming_arrow", arrived)
            try:
                con.execute(f"INSERT INTO incoming ({names}) SELECT {names} FROM incoming_arrow")
            finally:
                con.unregister("incoming_arrow")
            return
    marks = ", ".join("?" * len(columns))
    for start in range(0, len(rows), INSERT_CHUNK):
        chunk = rows[start : start + INSERT_CHUNK]
        values = ", ".join([f"({marks})"] * len(chunk))
        con.execute(f"INSERT INTO incoming ({names}) VALUES {values}", [v for r in chunk for v in r])


def generation_row(**values: Any) -> list[Any]:
    """A `generations` row in GENERATION_COLUMNS order from named values; the columns not named are NULL."""
    unknown = set(values) - set(GENERATION_COLUMNS)
    if unknown:
        raise WarehouseError(f"generations has no column {sorted(unknown)}")
    return [values.get(c) for c in GENERATION_COLUMNS]


def insert_generations(con: duckdb.DuckDBPyConnection, rows: list[list[Any]]) -> None:
    """Insert generations, each row's values in GENERATION_COLUMNS order (inside the caller's transaction)."""
    insert_rows(con, "generations", rows)


# Earlier texts of migrations whose comments, and nothing else, were reworded after release
# (0001's header named a design file outside the repository): a warehouse migrated with one of
# them is current, and its recorded checksum is brought up to date.
REWORDED = {1: {"4785696eff050dd0645d91e5d1b57f9feb9fd4ed90a56a06d48d82046a3869d0"}}


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def migrations() -> list[Migration]:
    """`ai_platform/migrations/NNNN_name.sql`, in order; numbers must be 1..n without gaps."""
    found = []
    for entry in resources.files("ai_platform.migrations").iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append(Migration(int(number), name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise MigrationError(f"migrations are not numbered 1..n: {[m.version for m in found]}")
    return found


def write_conflict(exc: duckdb.Error) -> bool:
    """Another transaction wrote the same rows first (DuckLake's optimistic commits); duckdb says so only in its
    text, here and nowhere else."""
    return "conflict" in str(exc).lower()


def _is_lock_conflict(exc: duckdb.Error) -> bool:
    """Another connection holds the file: another process (a lock), or, since duckdb 1.5, another thread of this
    one that opened it read-only while we want to write, or the reverse. Both pass when it closes."""
    text = str(exc)
    return (
        "Could not set lock" in text
        or "Conflicting lock" in text
        or "different configuration than existing connections" in text
    )


class Warehouse:
    """A DuckDB file. `write()` and `read()` open a connection for one short unit of work.

    The production profile, DuckLake with a PostgreSQL catalog, is `ducklake.Lake`: the same
    interface, schema and migrations. `ai_platform.warehouse.at()` picks the profile from a location."""

    def __init__(self, path: Path | str, *, lock_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.lock_timeout_s = lock_timeout_s

    @property
    def location(self) -> str:
        """What a rollout state or a log names this warehouse by (`at()` opens it again)."""
        return str(self.path)

    # -- connections

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.02
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only)
                if not read_only:
                    # Every commit checkpoints straight into the file. Left to the default, a commit
                    # under 16 MB goes to the WAL and the close copies it into the file again.
                    con.execute("SET checkpoint_threshold = '0 bytes'")
                return con
            except duckdb.Error as exc:
                if "created with a" in str(exc) and "newer version of DuckDB" in str(exc):
                    raise NewerWarehouseFile(
                        f"{self.path} was written by a newer DuckDB (2.0, the platform's before DuckLake) than this"
                        f" platform's {duckdb.__version__}; `ai-platform warehouse convert --warehouse {self.path}`"
                        " copies it into a current file and keeps the original beside it"
                    ) from None
                if not _is_lock_conflict(exc):
                    raise WarehouseError(f"{self.path}: cannot open warehouse: {exc}") from None
                if time.monotonic() >= deadline:
                    raise WarehouseBusyError(
                        f"{self.path}: another process held the warehouse for over "
                        f"{self.lock_timeout_s:.0f}s; close long-lived sessions (e.g. an open duckdb CLI) "
                        "or query through `ai-platform sql`"
                    ) from None
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)

    def _exists(self) -> bool:
        return self.path.is_file()

    def shell(self) -> list[str]:
        """The `duckdb` command line that opens this warehouse read-only for an analyst."""
        return ["-readonly", str(self.path)]

    def _ddl(self, sql: str) -> list[str]:
        """The statements that apply schema SQL here (a DuckDB file holds every constraint as written)."""
        return [sql]

    @contextmanager
    def write(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction: committed if the block returns, rolled back if it raises."""
        con = self._connect(read_only=False)
        try:
            self._migrate(con)
            con.begin()
            try:
                yield con
            except BaseException:
                con.rollback()
                raise
            con.commit()
        finally:
            con.close()

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if not self._exists():
            raise NoWarehouseYetError(f"{self.location}: no warehouse here yet (nothing has been written)")
        con = self._connect(read_only=True)
        try:
            yield con
        finally:
            con.close()

    def migrate(self) -> list[int]:
        """Apply pending migrations now; returns the versions applied."""
        con = self._connect(read_only=False)
        try:
            return self._migrate(con)
        finally:
            con.close()

    def maintain(self, keep_days: int = 7) -> dict[str, Any]:
        """Housekeeping: a DuckDB file only checkpoints (its WAL into the file); nothing is kept to expire."""
        con = self._connect(read_only=False)
        try:
            con.execute("CHECKPOINT")
        finally:
            con.close()
        return {"checkpointed": self.location}

    def query(self, sql: str, params: list[Any] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A read-only query: column names and rows."""
        with self.read() as con:
            try:
                cursor = con.execute(sql, params or [])
            except duckdb.Error as exc:
                raise WarehouseQueryError(f"query failed: {exc}") from None
            columns = [d[0] for d in cursor.description or []]
            return columns, cursor.fetchall()

    # -- migrations

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> list[int]:
        for statement in self._ddl(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL,"
            " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        ):
            con.execute(statement)
        applied = dict(con.execute("SELECT version, checksum FROM schema_migrations").fetchall())
        done = []
        for migration in migrations():
            if migration.version in applied:
                if applied[migration.version] in REWORDED.get(migration.version, set()):
                    con.execute(
                        "UPDATE schema_migrations SET checksum = ? WHERE version = ?",
                        [migration.checksum, migration.version],
                    )
                elif applied[migration.version] != migration.checksum:
                    raise AppliedMigrationChangedError(
                        f"migration {migration.version:04d}_{migration.name} was changed after it was applied; "
                        "add a new migration instead of editing an old one"
                    )
                continue
            con.begin()
            try:
                for statement in self._ddl(migration.sql):
                    con.execute(statement)
                con.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
                    [migration.version, migration.name, migration.checksum],
                )
            except duckdb.Error as exc:
                con.rollback()
                failed = MigrationConflictError if write_conflict(exc) else MigrationError
                raise failed(f"migration {migration.version:04d}_{migration.name} failed: {exc}") from None
            con.commit()
            done.append(migration.version)
        return done
