"""quantized_weights: AWQ W4A16 in the quantize environment, through Dagster Pipes."""

import dagster as dg

from ai_platform.quantize.stage import KL_GATE, MODULE, PPL_GATE, accept, job_for, passthrough, record
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource, WorkloadRunner

# Bump when this stage's logic (here or in the ai_platform code it calls) changes: the UI then
# marks its materializations stale, as it does when an upstream data version changes.
CODE_VERSION = "1"

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
FIGURES = ("ppl_base", "ppl_quantized", "ppl_increase", "kl_divergence", "top1_agreement", "duration_s",
           "peak_memory_bytes", "calibration_samples", "holdout_samples", "scored_tokens")  # fmt: skip


@dg.asset(
    partitions_def=models_partitions,
    code_version=CODE_VERSION,
    deps=["verified_weights", "model_spec"],
    group_name="weights",
    kinds={"pytorch", "python"},
    owners=["team:ml-platform"],
    check_specs=[PERPLEXITY, DIVERGENCE],
    description="AWQ W4A16 via llm-compressor (or the verified weights unchanged for method: none).",
)
def quantized_weights(
    context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource, workloads: WorkloadRunner
) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    if snap.spec.quantization.method == "none":
        result = passthrough(snap)
    else:
        result = accept(snap, workloads.run(context, MODULE, job_for(snap), snap.platform))
    record(platform_repo.warehouse(snap), snap, result)
    checks = [dg.AssetCheckResult(check_name=name, passed=ok, metadata={"detail": detail})
              for name, (ok, detail) in result.gates.items()]  # fmt: skip
    metadata = {"digest": f"sha256:{result.digest}", "method": result.method, "folder": result.folder,
                **{k: result.report[k] for k in FIGURES if k in result.report}}  # fmt: skip
    if result.report:
        metadata["recipe_digest"] = result.report["recipe_digest"]
    return dg.MaterializeResult(metadata=metadata, check_results=checks, data_version=dg.DataVersion(result.digest))
