"""Debian's PostgreSQL, started with initdb + pg_ctl on a free port of 127.0.0.1 (as the `postgres` user when
root), for the warehouse benchmark and the tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


class PostgresUnavailable(Exception):
    """What is missing to start a server here."""


@dataclass(frozen=True)
class PostgresServer:
    dsn: str  # libpq key=value, without dbname
    psql: Path

    def create_database(self, name: str) -> str:
        """A new empty database; its libpq connection string."""
        subprocess.run([str(self.psql), f"{self.dsn} dbname=postgres", "-qc", f'CREATE DATABASE "{name}"'], check=True)
        return f"{self.dsn} dbname={name}"


def _bin() -> Path | None:
    """Debian's server binaries (/usr/lib/postgresql/VERSION/bin), else initdb on the PATH."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "initdb").is_file():
            return candidate
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    bindir = _bin()
    if bindir is None:
        raise PostgresUnavailable("PostgreSQL is not installed (apt-get install postgresql; `make test` installs it)")
    as_user: list[str] = []
    folder = Path(
        tempfile.mkdtemp(prefix="ai-platform-pg-", dir="/tmp")
    )  # the postgres user must reach it: not $TMPDIR
    if os.geteuid() == 0:
        if shutil.which("runuser") is None or subprocess.run(["id", "postgres"], capture_output=True).returncode:
            shutil.rmtree(folder)
            raise PostgresUnavailable("running as root without a `postgres` user to run PostgreSQL as")
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = folder / "data"

    def run(*argv: object) -> None:
        subprocess.run([*as_user, *map(str, argv)], check=True, capture_output=True)

    try:
        run(bindir / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        run(bindir / "pg_ctl", "-D", data, "-l", folder / "server.log", "-w", "-o", options, "start")
        yield PostgresServer(f"host=127.0.0.1 port={port} user=postgres", bindir / "psql")
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)
