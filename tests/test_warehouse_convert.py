"""A warehouse file written by duckdb 2.0 (the platform's version before DuckLake): refused with the way out,
then converted with nothing lost. Installs duckdb 2.0 from PyPI once into $AI_PLATFORM_CACHE."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ai_platform.errors import NewerWarehouseFile, WarehouseError
from ai_platform.warehouse import Warehouse
from ai_platform.warehouse.convert import cache_dir, old_duckdb

ROOT = Path(__file__).resolve().parent.parent
WRITE_WITH_2_0 = """
import sys
import duckdb
assert duckdb.__version__ == "2.0.0", duckdb.__version__
from ai_platform.warehouse import Warehouse
with Warehouse(sys.argv[1]).write() as con:
    con.execute("INSERT INTO generations (generation_id, model, prompt_name, prompt_version)"
                " VALUES ('g1', 'm', 'p', 'v')")
    con.execute("INSERT INTO feedback_labels (generation_id, reviewer, label, labeled_at, source_file, source_line)"
                " VALUES ('g1', 'ana', 'correct', now(), 'f.csv', 2)")
"""


@pytest.mark.slow
def test_a_duckdb_2_file_is_refused_with_the_way_out_then_converted(tmp_path: Path) -> None:
    try:
        old = old_duckdb(cache_dir())
    except WarehouseError as exc:
        pytest.skip(f"PyPI not reachable: {exc}")
    path = tmp_path / "warehouse.duckdb"
    env = {**os.environ, "PYTHONPATH": f"{old}:{ROOT}"}
    subprocess.run([sys.executable, "-c", WRITE_WITH_2_0, str(path)], check=True, env=env, cwd=ROOT)

    with pytest.raises(NewerWarehouseFile, match="ai-platform warehouse convert"):
        Warehouse(path).query("SELECT 1")
    done = subprocess.run(
        [sys.executable, "-m", "ai_platform.cli", "warehouse", "convert", "--warehouse", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "warehouse.duckdb-2.0").is_file(), "the original is kept"
    _, rows = Warehouse(path).query(
        "SELECT g.generation_id, l.label FROM generations g JOIN feedback_labels l USING (generation_id)"
    )
    assert rows == [("g1", "correct")]
