"""What the warehouse's writes cost, in both profiles.

1. The DuckDB file: Warehouse.write() per batch vs one long-lived connection.
   The warehouse reopens the file for every unit of work so that an analyst's
   session can get in between writes (DuckDB allows one writing process).
2. The production profile side by side with the file (--profiles): DuckLake with
   its catalog in a real PostgreSQL (started here, on a free port) vs the DuckDB
   file, both through Warehouse.write(), batches of 50 generations:
   - writes per second with 1 writer process and with 3 at once;
   - the latency an analyst's long read (a read transaction held --hold-s) adds
     to a writer: the writer's slowest batch during the hold, minus its median
     batch without one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from ai_platform.warehouse import Warehouse, at, generation_row, insert_generations
from benchmarks.support import SKIP, SMOKE_HELP
from benchmarks.support.postgres import PostgresUnavailable, running_postgres

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


def generations(prefix: str, size: int) -> list[list[Any]]:
    now = datetime.now(UTC)
    return [
        generation_row(
            generation_id=f"{prefix}-{i}",
            model="m",
            prompt_name="p",
            prompt_version="v",
            source="gateway",
            output="x" * 200,
            created_at=now,
        )
        for i in range(size)
    ]


def writer(location: str, name: str, batches: int, out: Any, go: Any = None) -> None:
    """`batches` transactions of 50 generations; each one's seconds, to `out`. With `go`: after the first
    (which attaches), say "warm" and wait for it."""
    warehouse = at(location)
    times = []
    for b in range(batches):
        if b == 1 and go is not None:
            out.put("warm")
            go.wait()
        started = time.perf_counter()
        with warehouse.write() as con:
            insert_generations(con, generations(f"{name}-{b}-{uuid.uuid4().hex[:6]}", 50))
        times.append(time.perf_counter() - started)
    out.put(times)


def analyst(location: str, hold_s: float, out: Any) -> None:
    """A read transaction held `hold_s` seconds."""
    with at(location).read() as con:
        con.begin()
        con.execute("SELECT count(*) FROM generations").fetchall()
        out.put("holding")
        time.sleep(hold_s)
        con.commit()


def writes_per_s(location: str, writers: int, batches: int) -> float:
    spawn = multiprocessing.get_context("spawn")
    out = spawn.Queue()
    procs = [spawn.Process(target=writer, args=(location, f"w{w}", batches, out)) for w in range(writers)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    for _ in procs:
        out.get(timeout=600)
    elapsed = time.perf_counter() - started
    for p in procs:
        p.join()
    return writers * batches / elapsed


def added_latency(location: str, hold_s: float, batches: int) -> tuple[float, float]:
    """(median batch seconds with no reader, slowest batch while a reader holds its transaction)."""
    spawn = multiprocessing.get_context("spawn")
    out = spawn.Queue()
    alone = spawn.Process(target=writer, args=(location, "alone", batches, out))
    alone.start()
    quiet = statistics.median(out.get(timeout=600)[1:])  # the first batch of a process attaches: not counted
    alone.join()
    go = spawn.Event()
    busy = spawn.Process(target=writer, args=(location, "busy", batches, out, go))
    busy.start()
    assert out.get(timeout=120) == "warm"
    reader = spawn.Process(target=analyst, args=(location, hold_s, out))
    reader.start()
    assert out.get(timeout=120) == "holding"
    go.set()
    during = max(out.get(timeout=600)[1:])
    busy.join()
    reader.join()
    return quiet, during


def profiles(hold_s: float, batches: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, running_postgres() as postgres:
        lake = at(f"ducklake:postgres:{postgres.create_database('bench')}", str(Path(tmp) / "lake"))
        file = Warehouse(Path(tmp) / "w.duckdb")
        for warehouse in (lake, file):
            warehouse.migrate()
        figures = {}
        for name, warehouse in (("DuckLake on PostgreSQL", lake), ("DuckDB file", file)):
            one = writes_per_s(warehouse.location, 1, batches)
            three = writes_per_s(warehouse.location, 3, batches)
            quiet, during = added_latency(warehouse.location, hold_s, max(5, batches // 4))
            figures[name] = (one, three, quiet, during)
        print(f"\nbatches of 50 generations through Warehouse.write(); analyst holds a read for {hold_s:.0f} s")
        print(f"{'profile':24} {'1 writer tx/s':>13} {'3 writers tx/s':>15} {'median tx s':>12} {'slowest tx s':>13}")
        for name, (one, three, quiet, during) in figures.items():
            print(f"{name:24} {one:13.1f} {three:15.1f} {quiet:12.3f} {during:13.3f}   (during the analyst's read)")
        (l1, l3, lq, ld), (f1, f3, fq, fd) = figures.values()
        print(
            f"lake / file: 1 writer {l1 / f1:.2f}x, 3 writers {l3 / f3:.2f}x; latency the analyst adds: "
            f"lake {ld - lq:.3f} s, file {fd - fq:.3f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", action="store_true", help="only the DuckLake vs DuckDB file comparison")
    parser.add_argument("--file-only", action="store_true", help="only the DuckDB file's short transactions")
    parser.add_argument("--hold-s", type=float, default=10.0)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    repeats = 3
    if args.smoke:
        args.hold_s, args.batches, repeats = 0.5, 4, 1
    print(f"duckdb {duckdb.__version__}")
    if not args.profiles:
        short_transactions(args.batches, repeats)
    if not args.file_only:
        try:
            profiles(args.hold_s, args.batches)
        except PostgresUnavailable as exc:
            print(exc, file=sys.stderr)
            sys.exit(SKIP)


def short_transactions(batches: int, repeats: int) -> None:
    print(f"{'batch rows':>10} {'ours ms/batch':>14} {'baseline ms/batch':>18} {'ratio':>6}")
    for size in (1, 50, 1000):
        mine, base = [], []
        for repeat in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                mine.append(ours(Path(tmp) / f"a{repeat}.duckdb", batches, size) / batches * 1000)
                base.append(baseline(Path(tmp) / f"b{repeat}.duckdb", batches, size) / batches * 1000)
        m, b = statistics.median(mine), statistics.median(base)
        print(f"{size:>10} {m:>14.2f} {b:>18.2f} {m / b:>6.1f}")


if __name__ == "__main__":
    main()
