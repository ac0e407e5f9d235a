"""quantized_weights: the scheme the target runtime serves (AWQ W4A16 by default), in the quantize
environment, through Dagster Pipes. The serving preflight runs first and decides the scheme."""

from typing import Any

import dagster as dg

from ai_platform.quantize import shared
from ai_platform.quantize.stage import (
    KL_GATE,
    MODULE,
    PPL_GATE,
    SchemeChoice,
    accept,
    inputs_key,
    job_for,
    keep,
    passthrough,
    preflight,
    record,
    record_preflight,
    recorded,
)
from ai_platform.records import VerifiedWeights
from assets import versions
from assets.execution import ExecutionBackend
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

PERPLEXITY = dg.AssetCheckSpec(
    PPL_GATE,
    asset="quantized_weights",
    blocking=True,
    description="Held-out perplexity rises by at most the spec's max_ppl_increase.",
)
DIVERGENCE = dg.AssetCheckSpec(
    KL_GATE,
    asset="quantized_weights",
    blocking=True,
    description="Mean KL(base || quantized) per held-out token within max_kl_divergence.",
)
FIGURES = (
    "ppl_base",
    "ppl_quantized",
    "ppl_increase",
    "kl_divergence",
    "top1_agreement",
    "duration_s",
    "peak_memory_bytes",
    "calibration_samples",
    "holdout_samples",
    "scored_tokens",
)


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.QUANTIZE,
    deps=["verified_weights", "model_spec"],
    group_name="weights",
    kinds={"pytorch", "python"},
    owners=["team:ml-platform"],
    check_specs=[PERPLEXITY, DIVERGENCE],
    description="The spec's scheme (AWQ W4A16), or its fallback where the target's vLLM cannot serve it, via"
    " llm-compressor; the verified weights unchanged for method: none.",
)
def quantized_weights(
    context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource, execution: ExecutionBackend
) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    records, warehouse = platform_repo.records(snap), platform_repo.warehouse(snap)
    verified = records.read(VerifiedWeights, snap.spec.name)
    reused_from = None
    if snap.spec.quantization.method == "none":
        result = passthrough(verified)
    else:
        backend = execution.for_run(snap)
        choice = preflight(snap, backend.runtime())  # raises, naming the missing kernel, before any work
        record_preflight(warehouse, snap, choice, backend.target)
        context.log.info(f"serving preflight: {choice.reason}")
        job = job_for(snap, verified, choice, records.store)
        key = inputs_key(snap, verified, job, versions.QUANTIZE, backend.workload_site(snap.platform))
        cache = shared.location()
        found = recorded(snap, verified, choice, key, records, cache)
        if found is not None:  # inputs and code version unchanged: the recorded result, not AWQ again
            result, reused_from = found
            context.log.info(
                f"inputs and code version unchanged ({key[:12]}): reporting the recorded result ({reused_from})"
            )
        else:
            report = execution.run_workload(context, MODULE, job, snap)
            result = accept(snap, verified, choice, report, records.store)
            keep(key, report, result, records, cache)
    records.publish(result.record, snap.spec.name, passed=result.passed)
    record(warehouse, snap, result)
    checks = [
        dg.AssetCheckResult(check_name=name, passed=ok, metadata={"detail": detail})
        for name, (ok, detail) in result.gates.items()
    ]
    metadata = {
        "digest": f"sha256:{result.digest}",
        "method": result.method,
        "folder": result.folder,
        "reused": reused_from is not None,  # the recorded result of the same inputs and code version
        **{k: result.report[k] for k in FIGURES if k in result.report},
    }
    if reused_from is not None:  # "home": this home's record; "shared": $AI_PLATFORM_QUANTIZED_CACHE's
        metadata["reused_from"] = reused_from
    if result.report:
        metadata["recipe_digest"] = result.report["recipe_digest"]
    if result.choice:
        metadata.update(preflight_metadata(result.choice))
    return dg.MaterializeResult(metadata=metadata, check_results=checks, data_version=dg.DataVersion(result.digest))


def preflight_metadata(choice: SchemeChoice) -> dict[str, Any]:
    """What the serving preflight saw and chose, as the UI shows it."""
    metadata: dict[str, Any] = {
        "scheme": choice.scheme,
        "scheme_requested": choice.requested,
        "scheme_reason": choice.reason,
    }
    runtime = choice.runtime
    if runtime is not None:
        metadata["runtime"] = runtime.describe()
        rows = [dg.TableRecord({"op": op, "present": present}) for op, present in sorted(runtime.ops.items())]
        metadata["runtime_ops"] = dg.MetadataValue.table(rows)
    return metadata
