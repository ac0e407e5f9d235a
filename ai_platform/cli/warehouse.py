"""`ai-platform warehouse` and `ai-platform sql`: the DuckDB warehouse."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ai_platform.cli.common import WAREHOUSE_HELP, Areas, command, emit, epilog, warehouse_at
from ai_platform.errors import UsageError


def warehouse_migrate(args: argparse.Namespace) -> None:
    applied = warehouse_at(args).migrate()
    emit(args, {"applied": applied}, f"applied migrations: {applied}" if applied else "warehouse is up to date")


def warehouse_convert(args: argparse.Namespace) -> None:
    from ai_platform.warehouse.convert import cache_dir, convert

    warehouse = warehouse_at(args)
    if warehouse.location.startswith("ducklake:"):
        raise UsageError("convert copies a DuckDB file; a DuckLake needs no conversion")
    counts = convert(Path(warehouse.location), cache_dir())
    emit(args, counts, f"converted {warehouse.location}: " + ", ".join(f"{t} {n}" for t, n in counts.items() if n))


def warehouse_maintain(args: argparse.Namespace) -> None:
    done = warehouse_at(args).maintain(args.keep_days)
    emit(args, done, ", ".join(f"{k}: {v}" for k, v in done.items()))


def warehouse_shell(args: argparse.Namespace) -> None:
    """The `duckdb` CLI (installed with the platform) on the warehouse, read-only; --print: the command only."""
    import os
    import shlex

    cli = Path(sys.executable).with_name("duckdb")
    argv = [str(cli), *warehouse_at(args).shell()]
    if args.print:
        print(shlex.join(argv))
        return
    os.execv(argv[0], argv)


def sql(args: argparse.Namespace) -> None:
    columns, rows = warehouse_at(args).query(args.query)
    if args.json:
        emit(args, [dict(zip(columns, row, strict=True)) for row in rows], "")
        return
    table = [columns, *[["NULL" if v is None else str(v) for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    print("\n".join(lines))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})", file=sys.stderr)


def add(areas: Areas) -> None:
    area = areas.add_parser("warehouse", help="the warehouse (DuckDB file or DuckLake)")
    wh = area.add_subparsers(dest="command", required=True)
    p = command(
        wh,
        "migrate",
        warehouse_migrate,
        "apply pending migrations",
        (
            "ai-platform warehouse migrate --warehouse demo/state/warehouse.duckdb",
            "ai-platform warehouse migrate --warehouse ducklake:postgres:dbname=lake",
        ),
    )
    p.add_argument("--warehouse", help=WAREHOUSE_HELP)

    p = command(
        wh,
        "convert",
        warehouse_convert,
        "copy a warehouse file written by duckdb 2.0 into a current one",
        ("ai-platform warehouse convert --warehouse demo/state/warehouse.duckdb",),
    )
    p.add_argument("--warehouse", help=WAREHOUSE_HELP)

    p = command(
        wh,
        "maintain",
        warehouse_maintain,
        "housekeeping: a DuckLake's small files merged and old snapshots expired; a DuckDB file checkpointed",
        ("ai-platform warehouse maintain", "ai-platform warehouse maintain --keep-days 30 --json"),
    )
    p.add_argument("--warehouse", help=WAREHOUSE_HELP)
    p.add_argument("--keep-days", type=int, default=7, help="how far back time travel reaches (default: 7)")

    p = command(
        wh,
        "shell",
        warehouse_shell,
        "the duckdb CLI on the warehouse, read-only (DuckLake attached)",
        ("ai-platform warehouse shell --warehouse demo/state/warehouse.duckdb", "ai-platform warehouse shell --print"),
    )
    p.add_argument("--warehouse", help=WAREHOUSE_HELP)
    p.add_argument("--print", action="store_true", help="print the duckdb command line instead of running it")

    p = areas.add_parser(
        "sql",
        help="read-only query for analysts",
        description="read-only query for analysts",
        **epilog(
            'ai-platform sql "SELECT model, color, status FROM deployments" --warehouse demo/state/warehouse.duckdb',
            'ai-platform sql "SELECT count(*) AS n FROM generations" --json',
        ),
    )
    p.set_defaults(handler=sql)
    p.add_argument("query", metavar="QUERY", help="one SQL statement, run on a read-only connection")
    p.add_argument("--warehouse", help=WAREHOUSE_HELP)
    p.add_argument("--json", action="store_true", help="rows as a JSON array of objects")
