"""model_spec: the model's validated spec, pinned to a platform-repo commit."""

import dagster as dg

from assets import versions
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.MODEL_SPEC,
    group_name="platform_repo",
    kinds={"git", "yaml"},
    owners=["team:ml-platform"],
    description="models/<name>.yaml at the tracked commit, validated with every other spec in the repo.",
)
def model_spec(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.snapshot(context.partition_key)
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
        data_version=dg.DataVersion(snap.digest),
    )
