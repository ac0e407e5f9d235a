"""deployment: blue/green rollout of a candidate whose every blocking check passed."""

import dagster as dg

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.records import CanaryPass
from assets import versions
from assets.execution import ExecutionBackend
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.ROLLOUT,
    deps=["canary_eval"],
    group_name="release",
    kinds={"vllm", "kubernetes"},
    owners=["team:ml-platform"],
    # eager() alone ignores blocking checks (Dagster issue 17332)
    automation_condition=dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed(),
    description="The idle color started, health-checked and warmed, then traffic switched atomically.",
)
def deployment(
    context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource, execution: ExecutionBackend
) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    passed = platform_repo.records(snap).read(CanaryPass, snap.spec.name)  # published only on a pass
    done = execution.for_run(snap).rollout(snap, passed.image, passed.bundle, context.log.info)  # the records
    metadata = {
        "kind": done.kind,
        "color": done.color,
        "image": done.image,
        "bundle": done.bundle,
        "endpoint": done.endpoint,
        **done.details,
    }
    version = sha256_hex(canonical_json([passed.image.digest, passed.bundle.digest]))
    return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(version))
