"""`ai-platform`: exit 0 / exit 1 with `error: ...` and no traceback; --json on stdout."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ai_platform.warehouse import migrations

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv/bin/ai-platform"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=120)


def test_config_validate(demo_repo: Path) -> None:
    done = run("config", "validate", str(demo_repo), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {k: v for k, v in result.items() if k != "gates"} == {
        "ok": True,
        "platform": "demo",
        "target": "embedded",
        "models": ["contract-reviewer"],
    }
    assert len(result["gates"]) == 8  # what each gate's eval set can show (tests/test_config_validate.py)


def test_config_validate_error_names_file_field_and_choices(tmp_path: Path) -> None:
    (tmp_path / "platform.yaml").write_text("name: demo\nexecution: {target: mainframe}\n")
    done = run("config", "validate", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert "execution.target: must be one of 'embedded' or 'kubernetes' (got 'mainframe')" in done.stderr


def test_sql_and_migrate(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    assert run("warehouse", "migrate", "--warehouse", str(db)).returncode == 0
    done = run("sql", "SELECT version, name FROM schema_migrations", "--warehouse", str(db), "--json")
    assert done.returncode == 0, done.stderr
    applied = json.loads(done.stdout)
    assert applied[0] == {"version": 1, "name": "initial"} and [m["version"] for m in applied] == [
        m.version for m in migrations()
    ]
    table = run("sql", "SELECT count(*) AS n FROM generations", "--warehouse", str(db))
    assert table.stdout.splitlines()[0].strip() == "n" and table.stdout.splitlines()[2].strip() == "0"


def test_sql_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    run("warehouse", "migrate", "--warehouse", str(db))
    done = run("sql", "DROP TABLE generations", "--warehouse", str(db))
    assert done.returncode == 1 and done.stderr.startswith("error: query failed") and "read-only" in done.stderr


def test_the_duckdb_cli_reads_a_warehouse_file(tmp_path: Path) -> None:
    """The README's analyst CLI is installed (PyPI duckdb-cli, the library's version) and reads the file; no
    PostgreSQL needed (test_warehouse_lake.py also opens a DuckLake with it)."""
    import duckdb

    db = tmp_path / "w.duckdb"
    assert run("warehouse", "migrate", "--warehouse", str(db)).returncode == 0
    duckdb_cli = CLI.with_name("duckdb")
    version = subprocess.run([str(duckdb_cli), "--version"], capture_output=True, text=True, check=True).stdout
    assert version.split()[0] == f"v{duckdb.__version__}"
    query = "SELECT count(*) FROM schema_migrations"
    done = subprocess.run(
        [str(duckdb_cli), "-readonly", "-csv", "-noheader", str(db), "-c", query], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(len(migrations()))


def test_sql_without_a_warehouse(tmp_path: Path) -> None:
    done = run("sql", "SELECT 1", "--warehouse", str(tmp_path / "none.duckdb"))
    assert done.returncode == 1 and "no warehouse here yet" in done.stderr


def test_demo_init_refuses_non_empty(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    done = run("demo", "init", str(tmp_path))
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "not empty" in done.stderr
