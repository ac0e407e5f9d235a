"""model_spec: the model's validated spec, pinned to a platform-repo commit."""

import dagster as dg

from ai_platform.validate import review
from assets import versions
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

SPEC_VALID = dg.AssetCheckSpec(
    "spec_valid",
    asset="model_spec",
    blocking=True,
    description="Every prompt the spec uses compiles, every gate names a metric the canary measures and can pass "
    "on its eval set, every eval set loads (`ai-platform config validate` runs the same); `gate_sizes` says what "
    "each gate's eval set can show.",
)


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.MODEL_SPEC,
    group_name="platform_repo",
    kinds={"git", "yaml"},
    owners=["team:ml-platform"],
    check_specs=[SPEC_VALID],
    description="models/<name>.yaml at the tracked commit, validated with every other spec in the repo.",
)
def model_spec(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.snapshot(context.partition_key)
    found, notes = review(snap.platform, [snap.spec.name])
    check = dg.AssetCheckResult(
        check_name=SPEC_VALID.name,
        passed=not found,
        metadata={"problems": "\n".join(found) or "none", "gate_sizes": "\n".join(notes) or "none"},
    )
    return dg.MaterializeResult(
        metadata={
            "commit": snap.commit.sha,
            "author": snap.commit.author,
            "message": snap.commit.message,
            "spec_digest": snap.digest,
            "source": snap.spec.source.model_dump(mode="json"),
            "quantization": snap.spec.quantization.method,
            "prompts": ", ".join(snap.spec.prompts),
            "spec": dg.MetadataValue.json(snap.spec.model_dump(mode="json")),
        },
        check_results=[check],
        data_version=dg.DataVersion(snap.digest),
    )
