"""model_image: a reproducible, layered OCI image of the model."""

import dagster as dg

from ai_platform.image.stage import build_model_image, record
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

# Bump when this stage's logic (here or in the ai_platform code it calls) changes: the UI then
# marks its materializations stale, as it does when an upstream data version changes.
CODE_VERSION = "1"


@dg.asset(
    partitions_def=models_partitions,
    code_version=CODE_VERSION,
    deps=["quantized_weights"],
    group_name="packaging",
    kinds={"oci"},
    owners=["team:ml-platform"],
    description="OCI image layout, one layer per weight file; its manifest digest is the model's fingerprint.",
)
def model_image(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    image = build_model_image(snap)
    record(platform_repo.warehouse(snap), snap, image)
    layers = [dg.TableRecord({"layer": layer["title"], "digest": layer["digest"][7:19], "bytes": layer["size"],
                              "reused": layer["reused"]}) for layer in image.built.layers]  # fmt: skip
    metadata = {
        "digest": image.built.digest,
        "ref": image.ref,
        "weights_digest": f"sha256:{image.weights_digest}",
        "bytes_written": image.built.bytes_written,
        "layers": dg.MetadataValue.table(layers),
        "annotations": dg.MetadataValue.json(image.built.manifest["annotations"]),
    }
    if image.pushed:
        metadata["pushed_blobs"] = image.pushed.blobs_sent
        metadata["skipped_blobs"] = image.pushed.blobs_skipped
    version = dg.DataVersion(image.built.digest.removeprefix("sha256:"))
    return dg.MaterializeResult(metadata=metadata, data_version=version)
