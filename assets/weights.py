"""raw_weights (pinned download) and verified_weights (every byte checked)."""

import dagster as dg

from ai_platform.records import RawWeights
from ai_platform.weights.stage import fetch_raw, record, verify
from assets import versions
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

VERIFIED = dg.AssetCheckSpec(
    "weights_match_trusted_hashes",
    asset="verified_weights",
    blocking=True,
    description="Headers valid; every file and tensor hash equals the trusted one.",
)


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.WEIGHTS,
    deps=["model_spec"],
    group_name="weights",
    kinds={"huggingface", "safetensors"},
    owners=["team:ml-platform"],
    description="The spec's source downloaded at exactly one commit, with per-file sha256.",
)
def raw_weights(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    raw = fetch_raw(snap)
    platform_repo.records(snap).publish(raw, snap.spec.name)
    table = [dg.TableRecord({"path": f.path, "size": f.size, "sha256": f.sha256}) for f in raw.files]
    return dg.MaterializeResult(
        metadata={
            "commit": raw.commit,
            "folder": raw.folder,  # where the artifact store keeps the files for the next stage
            "files": len(raw.files),
            "bytes": sum(f.size for f in raw.files),
            "file_hashes": dg.MetadataValue.table(table),
        },
        data_version=dg.DataVersion(raw.digest),
    )


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.WEIGHTS,
    deps=["raw_weights"],
    group_name="weights",
    kinds={"safetensors", "duckdb"},
    owners=["team:ml-platform"],
    check_specs=[VERIFIED],
    description="Strict safetensors header validation and per-tensor sha256 against the trusted manifest.",
)
def verified_weights(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    records = platform_repo.records(snap)
    result = verify(snap, records.read(RawWeights, snap.spec.name))
    records.publish(result.record, snap.spec.name, passed=result.passed)
    record(platform_repo.warehouse(snap), snap, result)
    tensors = sum(len(f.get("tensors", [])) for f in result.manifest["files"])
    check = dg.AssetCheckResult(
        check_name=VERIFIED.name,
        passed=result.passed,
        metadata={"against": result.against, "problems": "\n".join(result.problems) or "none"},
    )
    metadata: dict[str, dg.RawMetadataValue] = {
        "manifest_digest": f"sha256:{result.digest}",
        "tensors": tensors,
        "against": result.against,
        # the OpenSSF model-signing statement, stored as an artifact under this digest, ready to sign
        "signing_manifest": f"sha256:{result.signing_digest}",
        "signing_subject": f"sha256:{result.signing_manifest['subject'][0]['digest']['sha256']}",
        "signature": result.signature or "none named in the spec",
    }
    if result.identical_to_reference is not None:  # blocks at or above the spec's limit: "not a fine-tune"
        metadata["identical_to_reference"] = result.identical_to_reference
        metadata["identical_fraction_limit"] = result.identical_limit
    return dg.MaterializeResult(metadata=metadata, check_results=[check], data_version=dg.DataVersion(result.digest))
