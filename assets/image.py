"""model_image: a reproducible, layered OCI image of the model."""

import dagster as dg

from ai_platform.image.stage import build_model_image, record
from ai_platform.records import QuantizedWeights, RawWeights
from assets import versions
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.IMAGE,
    deps=["quantized_weights", "raw_weights"],
    group_name="packaging",
    kinds={"oci"},
    owners=["team:ml-platform"],
    description="OCI image layout, one layer per weight file; its manifest digest is the model's fingerprint.",
)
def model_image(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    records = platform_repo.records(snap)
    quantized, raw = records.read(QuantizedWeights, snap.spec.name), records.read(RawWeights, snap.spec.name)
    image = build_model_image(snap, quantized, raw)
    records.publish(image.record, snap.spec.name)
    record(platform_repo.warehouse(snap), snap, image)
    layers = [
        dg.TableRecord(
            {
                "layer": layer["title"],
                "digest": layer["digest"][7:19],
                "bytes": layer["size"],
                "reused": layer["reused"],
            }
        )
        for layer in image.built.layers
    ]
    metadata: dict[str, dg.RawMetadataValue] = {
        "digest": image.built.digest,
        "ref": image.record.ref,
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
