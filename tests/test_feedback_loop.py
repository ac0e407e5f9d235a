"""The learning loop as Dagster runs it, on a real instance: ingest, train, promote; then what `make ui` finds
when its daemon starts: every sensor's first tick (git, inbox, feedback automation) requests nothing, because
everything is already done. New labels, and only they, make the automation retrain."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import dagster as dg
from conftest import MODEL
from test_trust import seed_warehouse

from ai_platform.warehouse import Warehouse
from assets.resources import PlatformRepoResource
from definitions import defs
from sensors.inbox import inbox_sensor
from sensors.platform_repo import platform_repo_sensor

LOOP = dg.AssetSelection.assets("trust_model", "trust_champion")


def label_file(inbox: Path, name: str, generation_ids: list[str], start_minute: int) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    rows = [
        {"generation_id": g, "reviewer": "ana", "label": "correct", "labeled_at": f"2026-05-01T10:{m % 60:02d}:00Z"}
        for m, g in enumerate(generation_ids, start=start_minute)
    ]
    path = inbox / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    past = time.time() - 120  # settled: the inbox sensor leaves files still being written alone
    os.utime(path, (past, past))


def test_the_loop_runs_once_and_a_restarted_daemon_finds_nothing_to_do(
    instance: dg.DagsterInstance, own_demo_repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    seed_warehouse(Warehouse(home / "warehouse.duckdb"), 200, random.Random(3), model=MODEL)
    running = dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=LOOP)
    assert running.total_requested == 0  # the automation sensor ticking before any labels came in
    label_file(home / "inbox", "first.jsonl", ["g0", "g1"], 0)
    ingest_run = defs.resolve_job_def("ingest_feedback").execute_in_process(instance=instance)
    assert ingest_run.success
    (served,) = ingest_run.asset_materializations_for_node("generations")
    assert served.metadata["generations"].value == 200 and served.metadata["unscored"].value == 200

    ingested = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, asset_selection=LOOP, cursor=running.cursor
    )
    assert ingested.get_requested_partitions(dg.AssetKey("trust_model")) == {MODEL}  # labels ingested: train
    learn = defs.resolve_job_def("learn_from_feedback").execute_in_process(instance=instance, partition_key=MODEL)
    assert learn.success
    (champion,) = learn.asset_materializations_for_node("trust_champion")
    assert champion.metadata["promoted"].value and champion.metadata["backfilled"].value == 200
    trained = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, asset_selection=LOOP, cursor=ingested.cursor
    )
    assert trained.total_requested == 0  # the run did what was asked: nothing left

    # `make ui`: a daemon with fresh cursors. Nothing is new, so no sensor asks for a run.
    resources = {"platform_repo": PlatformRepoResource(path=str(own_demo_repo), home=str(home))}
    inbox_tick = inbox_sensor(dg.build_sensor_context(instance=instance, cursor=None, resources=resources))
    assert not getattr(inbox_tick, "run_requests", None), inbox_tick
    fresh = dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=LOOP)
    assert fresh.total_requested == 0

    # New labels arrive and are ingested: the automation retrains the model's trust model (and only then).
    label_file(home / "inbox", "second.jsonl", [f"g{i}" for i in range(2, 40)], 30)
    new_tick = inbox_sensor(dg.build_sensor_context(instance=instance, cursor=None, resources=resources))
    assert isinstance(new_tick, dg.SensorResult) and len(new_tick.run_requests or []) == 1
    assert defs.resolve_job_def("ingest_feedback").execute_in_process(instance=instance).success
    retrain = dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=LOOP, cursor=fresh.cursor)
    assert retrain.get_requested_partitions(dg.AssetKey("trust_model")) == {MODEL}


def test_the_git_sensor_first_tick_after_the_demo_shipped_requests_nothing(
    instance: dg.DagsterInstance, own_demo_repo: Path, tmp_path: Path
) -> None:
    """What `make demo` leaves: the head shipped. The daemon's first git-sensor tick must not ship it again."""
    instance.report_runless_asset_event(dg.AssetMaterialization("deployment", partition=MODEL))
    resources = {"platform_repo": PlatformRepoResource(path=str(own_demo_repo), home=str(tmp_path / "home"))}
    result = platform_repo_sensor(dg.build_sensor_context(instance=instance, cursor=None, resources=resources))
    assert isinstance(result, dg.SensorResult) and not result.run_requests
