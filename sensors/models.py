"""Keep the `models` dynamic partitions equal to the model specs on the tracked branch."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from ai_platform.errors import PlatformError
from ai_platform.platform_repo import model_names, resolve
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource


@dg.sensor(
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a partition for each models/<name>.yaml on the branch and removes deleted ones.",
)
def model_partitions_sensor(
    context: dg.SensorEvaluationContext, platform_repo: PlatformRepoResource
) -> dg.SensorResult | dg.SkipReason:
    repo, branch = Path(platform_repo.path), platform_repo.branch
    try:
        head = resolve(repo, branch)
        wanted = set(model_names(repo, head.sha))
    except PlatformError as exc:  # keep the cursor: the next tick retries
        return dg.SkipReason(f"cannot read {repo}@{branch}: {exc}")
    if context.cursor == head.sha:
        return dg.SkipReason(f"{branch} still at {head.sha[:12]}")
    existing = set(context.instance.get_dynamic_partitions(models_partitions.name))
    requests = []
    if wanted - existing:
        requests.append(models_partitions.build_add_request(sorted(wanted - existing)))
    if existing - wanted:
        requests.append(models_partitions.build_delete_request(sorted(existing - wanted)))
    return dg.SensorResult(cursor=head.sha, dynamic_partitions_requests=requests)
