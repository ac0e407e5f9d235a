"""deployment: blue/green rollout of a candidate whose every blocking check passed."""

import dagster as dg

from ai_platform.artifacts import ArtifactStore, canonical_json, sha256_hex
from ai_platform.rollout import local
from ai_platform.rollout.kubernetes import apply_rollout
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

# Bump when this stage's logic (here or in the ai_platform code it calls) changes: the UI then
# marks its materializations stale, as it does when an upstream data version changes.
CODE_VERSION = "1"


@dg.asset(
    partitions_def=models_partitions,
    code_version=CODE_VERSION,
    deps=["canary_eval"],
    group_name="release",
    kinds={"vllm", "kubernetes"},
    owners=["team:ml-platform"],
    # eager() alone ignores blocking checks (Dagster issue 17332)
    automation_condition=dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed(),
    description="The idle color started, health-checked and warmed, then traffic switched atomically.",
)
def deployment(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    passed = ArtifactStore(snap.platform.artifacts_path).ref("canary_eval", snap.spec.name)  # set only on a pass
    if snap.platform.config.execution.target == "kubernetes":
        metadata = apply_rollout(snap, passed["image"], passed["bundle"], log=context.log.info)
    else:
        rollout = local.deploy(snap, passed["image"], passed["bundle"], log=context.log.info)
        live = rollout.state.live
        assert live is not None
        metadata = {"kind": rollout.kind, "color": live.color, "image": live.image, "bundle": live.bundle,
                    "upstream": live.base_url, "gateway": local.gateway_url(snap.platform.home) or "not running",
                    "drained": rollout.drained}  # fmt: skip
        if rollout.switch_s is not None:
            metadata["switch_ms"] = round(rollout.switch_s * 1000, 1)
    version = sha256_hex(canonical_json([passed["image"], passed["bundle"]]))
    return dg.MaterializeResult(metadata=metadata, data_version=dg.DataVersion(version))
