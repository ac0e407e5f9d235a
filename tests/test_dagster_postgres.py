"""The production instance: Dagster's run, event-log and schedule storage in a real PostgreSQL, as
deploy/dagster-instance.kubernetes.yaml configures it, with the warehouse a DuckLake on that server too."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import dagster as dg
import pytest
import yaml
from conftest import MODEL
from test_platform_repo_sensor import commit, runs, tick
from test_trust import seed_warehouse

from ai_platform.warehouse.ducklake import Lake
from assets.partitions import models_partitions
from benchmarks.support.postgres import PostgresServer
from definitions import defs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def pg_instance(postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A DagsterInstance from the deploy file's `storage` section, its database new on the test server."""
    name = f"dagster_{uuid.uuid4().hex[:12]}"
    postgres.create_database(name)
    settings = dict(part.split("=", 1) for part in postgres.dsn.split())
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", "")  # as the chart sets it, from its postgresql Secret
    deployed = yaml.safe_load((ROOT / "deploy" / "dagster-instance.kubernetes.yaml").read_text())
    # the file names the cluster's server (the Helm values' postgresql): this test's server instead
    deployed["storage"]["postgres"]["postgres_db"].update(
        hostname=settings["host"], port=int(settings["port"]), username=settings["user"], db_name=name
    )
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        yaml.safe_dump({"storage": deployed["storage"], "telemetry": {"enabled": False}})
    )
    with dg.DagsterInstance.from_config(str(home)) as created:
        yield created


def test_the_instance_keeps_runs_events_and_partitions_in_postgres(pg_instance: dg.DagsterInstance) -> None:
    assert type(pg_instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(pg_instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert type(pg_instance.schedule_storage).__name__ == "PostgresScheduleStorage"


def test_learn_from_feedback_runs_on_postgres_with_a_ducklake_warehouse(
    pg_instance: dg.DagsterInstance, postgres: PostgresServer, own_demo_repo: Path, tmp_path: Path, monkeypatch
) -> None:
    catalog = postgres.create_database(f"lake_{uuid.uuid4().hex[:12]}")
    config = (own_demo_repo / "platform.yaml").read_text()
    lake_storage = f"warehouse: 'ducklake:postgres:{catalog}'\n  warehouse_data: {tmp_path / 'lake'}"
    commit(
        own_demo_repo,
        "warehouse on DuckLake",
        {"platform.yaml": config.replace("warehouse: warehouse.duckdb", lake_storage)},
    )
    monkeypatch.setenv("AI_PLATFORM_REPO", str(own_demo_repo))
    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "home"))
    lake = Lake(f"ducklake:postgres:{catalog}", str(tmp_path / "lake"))
    seed_warehouse(lake, 200, random.Random(7), model=MODEL)
    pg_instance.add_dynamic_partitions("models", [MODEL])

    result = defs.resolve_job_def("learn_from_feedback").execute_in_process(instance=pg_instance, partition_key=MODEL)
    assert result.success
    (record,) = pg_instance.get_run_records()
    assert record.dagster_run.job_name == "learn_from_feedback"
    promoted = pg_instance.get_latest_materialization_event(dg.AssetKey("trust_champion"))
    assert promoted and promoted.asset_materialization
    assert promoted.asset_materialization.metadata["backfilled"].value == 200
    trained = pg_instance.get_latest_materialization_event(dg.AssetKey("trust_model"))
    assert trained and trained.asset_materialization
    assert trained.asset_materialization.metadata["labels"].value == 200
    _, rows = lake.query("SELECT count(*) FROM trust_models WHERE champion")
    assert rows == [(1,)]


def test_a_git_sensor_tick_on_postgres(pg_instance: dg.DagsterInstance, own_demo_repo: Path, tmp_path: Path) -> None:
    result = tick(pg_instance, own_demo_repo, None, tmp_path / "home")
    assert MODEL in runs(result)
    for request in result.dynamic_partitions_requests or []:
        assert isinstance(request, dg.AddDynamicPartitionsRequest)
        pg_instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    assert pg_instance.get_dynamic_partitions(models_partitions.name) == [MODEL]
