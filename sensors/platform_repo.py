"""The git sensor: each new commit on the platform repo's branch runs exactly the stages it feeds.

One run per commit per affected model (run key `<sha>:<model>`), oldest commit
first, at most MAX_COMMITS_PER_TICK commits a tick; the cursor is the last
commit processed. It also keeps the `models` dynamic partitions equal to the
model specs (it replaces the partitions-only sensor: two sensors reading the
branch at different moments could add and delete the same partition).

A tick that cannot read the repo (unreachable remote, corrupt objects) skips
with the reason and keeps the cursor, so the next tick retries the same commits.
"""

from __future__ import annotations

from dataclasses import replace

import dagster as dg

from ai_platform.changes import (
    COMMIT_TAG,
    LEARNING,
    SPEC_ONLY,
    CommitPlan,
    Plan,
    fetch_due,
    local_repo,
    plan,
    shown,
    sync,
)
from ai_platform.errors import PlatformError
from assets import SHIP_CHAIN, all_assets, learn_from_feedback, ship_model
from assets.partitions import MODELS, models_partitions
from assets.resources import PlatformRepoResource

# 100 commits plan in well under a second (benchmarks/sensor_tick.py); a backlog drains over ticks.
MAX_COMMITS_PER_TICK = 100
# A tick every 5 s is cheap: a folder costs one `git rev-parse`, a remote is fetched only when a push was marked
# or POLL_S has passed (`changes.fetch_due`), so the push receiver's webhook cuts the wait to this interval.
TICK_S = 5
TAG_CHARS = 200  # author and message are for people scanning the runs list, not an archive


ASSETS = [a for a in all_assets if isinstance(a, dg.AssetsDefinition)]


def _onward() -> dict[str, tuple[str, ...]]:
    """Each stage of the ship chain with every stage downstream of it, from the real asset graph."""
    chain = dg.AssetSelection.assets(*SHIP_CHAIN)
    onward = {}
    for stage in SHIP_CHAIN:
        keys = (dg.AssetSelection.assets(stage).downstream() & chain).resolve(ASSETS)
        names = {key.to_user_string() for key in keys}
        onward[stage] = tuple(s for s in SHIP_CHAIN if s in names)
    return onward


ONWARD = _onward()


def stages_to_run(roots: frozenset[str]) -> tuple[str, ...]:
    """The ship-chain stages a change feeding `roots` re-runs, in pipeline order (the learning job aside)."""
    exact = {SPEC_ONLY: ("model_spec",), LEARNING: ()}
    wanted = {stage for root in roots for stage in exact.get(root, ONWARD.get(root, ()))}
    return tuple(s for s in SHIP_CHAIN if s in wanted)


def _clip(text: str) -> str:
    return text if len(text) <= TAG_CHARS else text[: TAG_CHARS - 1] + "…"


def run_request(change: CommitPlan, model: str, note: str) -> list[dg.RunRequest]:
    """The model's run of the ship chain for the commit, and its learning run when the commit feeds it."""
    commit = change.commit
    tags = {
        COMMIT_TAG: commit.sha,
        "ai_platform/author": _clip(commit.author),
        "ai_platform/message": _clip(commit.message),
        "ai_platform/model": model,
    }
    if note:  # first tick, rewritten history: the run says why it was planned so
        tags["ai_platform/plan_note"] = _clip(note)
    key = f"{commit.sha}:{model}" + (f":replaces:{change.replaces}" if change.replaces else "")
    stages = stages_to_run(change.stages[model])
    requests = []
    if stages:
        selection = [dg.AssetKey(s) for s in stages]
        requests.append(
            dg.RunRequest(
                run_key=key, job_name=ship_model.name, partition_key=model, asset_selection=selection, tags=tags
            )
        )
    if LEARNING in change.stages[model]:
        learning = dg.RunRequest(
            run_key=f"{key}:{LEARNING}", job_name=learn_from_feedback.name, partition_key=model, tags=tags
        )
        requests.append(learning)
    return requests


def describe(change: CommitPlan) -> str:
    what = "; ".join(
        f"{m}: {', '.join(stages_to_run(s) + ((LEARNING,) if LEARNING in s else ()))}"
        for m, s in sorted(change.stages.items())
    )
    return f"{change.commit.sha[:12]} {change.commit.message[:60]!r}: {what or 'feeds no model, nothing to run'}"


def summary(branch: str, done: Plan, runs: int) -> str:
    parts = [done.note] if done.note else []
    if done.commits:
        count = len(done.commits)
        outcome = f"{runs} run{'s' * (runs != 1)} requested" if runs else "nothing any model reads changed"
        parts.append(f"{count} commit{'s' * (count != 1)} on {branch} up to {done.last[:12]}: {outcome}")
    parts.append(f"cursor advanced to {done.last[:12]}")
    if done.remaining:
        parts.append(f"{done.remaining} more commits wait for the next tick")
    return "; ".join(parts)


def _unshipped(instance: dg.DagsterInstance, done: Plan) -> Plan:
    """The first tick's plan without the models whose deployment this instance already materialized.

    `make demo` ships the head before `dagster dev` starts this sensor: shipping it again would redo
    every stage for nothing. A model never shipped here still gets its whole chain.
    """
    (change,) = done.commits
    deployed = [(m, dg.AssetRecordsFilter(dg.AssetKey("deployment"), asset_partitions=[m])) for m in change.stages]
    shipped = {model for model, where in deployed if instance.fetch_materializations(where, limit=1).records}
    if not shipped:
        return done
    stages = {model: roots for model, roots in change.stages.items() if model not in shipped}
    note = f"{done.note}, except {', '.join(sorted(shipped))}: already shipped by this instance"
    return replace(done, commits=(replace(change, stages=stages),), note=note)


@dg.sensor(
    jobs=[ship_model, learn_from_feedback],
    minimum_interval_seconds=TICK_S,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Runs the stages each new platform-repo commit feeds, per model; keeps the models partitions.",
)
def platform_repo_sensor(
    context: dg.SensorEvaluationContext, platform_repo: PlatformRepoResource
) -> dg.SensorResult | dg.SkipReason:
    here, cursor = platform_repo.location, context.cursor
    branch = here.branch
    try:
        home = here.need_home()
        due = fetch_due(platform_repo.path, home)
        repo = sync(platform_repo.path, home, branch) if due else local_repo(platform_repo.path, home)
        done = plan(repo, branch, cursor, MAX_COMMITS_PER_TICK)
    except PlatformError as exc:  # keep the cursor: the next tick retries the same commits
        kept = cursor[:12] if cursor else "none yet"
        return dg.SkipReason(f"cannot read {shown(platform_repo.path)}@{branch}: {exc} (cursor kept: {kept})")
    if done.last == cursor:
        return dg.SkipReason(f"{branch} still at {done.head.sha[:12]}")

    if cursor is None:  # a first tick takes what this instance already shipped as current
        done = _unshipped(context.instance, done)
    if done.note:
        context.log.warning(done.note)
    for change in done.commits:
        for warning in change.warnings:
            context.log.warning(f"{change.commit.sha[:12]}: {warning}")
        context.log.info(describe(change))
    live = set(done.models)  # a model whose spec is gone by the last commit planned is not built
    runs = [
        request
        for change in done.commits
        for model in sorted(change.stages)
        if model in live
        for request in run_request(change, model, done.note)
    ]
    existing = set(context.instance.get_dynamic_partitions(MODELS))
    partitions: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if live - existing:
        partitions.append(models_partitions.build_add_request(sorted(live - existing)))
    if existing - live:
        partitions.append(models_partitions.build_delete_request(sorted(existing - live)))
    message = summary(branch, done, len(runs))
    context.log.info(message)
    if runs:
        return dg.SensorResult(run_requests=runs, cursor=done.last, dynamic_partitions_requests=partitions)
    return dg.SensorResult(skip_reason=message, cursor=done.last, dynamic_partitions_requests=partitions)
