"""What short write transactions cost: Warehouse.write() per batch vs one long-lived connection.

The warehouse reopens the file for every unit of work so that an analyst's
session can get in between writes (DuckDB allows one writing process). This
measures the price of that choice on typical batch sizes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ai_platform.warehouse import Warehouse

INSERT = "INSERT INTO eval_cases (run_id, case_id, output) VALUES (?, ?, ?)"


def rows(batch: int, size: int) -> list[list[str]]:
    return [[f"r{batch}", f"c{i}", "x" * 200] for i in range(size)]


def ours(path: Path, batches: int, size: int) -> float:
    wh = Warehouse(path)
    wh.migrate()
    started = time.perf_counter()
    for b in range(batches):
        with wh.write() as con:
            con.executemany(INSERT, rows(b, size))
    return time.perf_counter() - started


def baseline(path: Path, batches: int, size: int) -> float:
    Warehouse(path).migrate()
    con = duckdb.connect(str(path))
    started = time.perf_counter()
    for b in range(batches):
        con.begin()
        con.executemany(INSERT, rows(b, size))
        con.commit()
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed


def main() -> None:
    print(f"{'batch rows':>10} {'ours ms/batch':>14} {'baseline ms/batch':>18} {'ratio':>6}")
    for size in (1, 50, 1000):
        batches = 40
        mine, base = [], []
        for repeat in range(3):
            with tempfile.TemporaryDirectory() as tmp:
                mine.append(ours(Path(tmp) / f"a{repeat}.duckdb", batches, size) / batches * 1000)
                base.append(baseline(Path(tmp) / f"b{repeat}.duckdb", batches, size) / batches * 1000)
        m, b = statistics.median(mine), statistics.median(base)
        print(f"{size:>10} {m:>14.2f} {b:>18.2f} {m / b:>6.1f}")


if __name__ == "__main__":
    main()
