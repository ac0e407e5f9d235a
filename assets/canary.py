"""canary_eval: the candidate on real vLLM against the eval set, gated on quality."""

import dagster as dg

from ai_platform.evaluation.report import comparison, latency_histogram, latency_svg
from ai_platform.evaluation.scoring import METRICS
from ai_platform.evaluation.stage import record, run_canary
from ai_platform.records import ModelImage, PromptBundle
from ai_platform.rollout.notify import notify
from assets import versions
from assets.execution import ExecutionBackend
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

# One blocking check per metric a spec may gate on; an ungated metric's check passes and says so.
GATES = [
    dg.AssetCheckSpec(f"gate_{metric}", asset="canary_eval", blocking=True, description=f"canary gate on {metric}")
    for metric in METRICS
]


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.CANARY,
    deps=["model_image", "prompt_bundle"],
    group_name="release",
    kinds={"vllm", "duckdb"},
    owners=["team:ml-platform"],
    check_specs=GATES,
    description="Champion vs challenger on the eval set: schema validity, repetition, coherence, PII, recall, latency.",
)
def canary_eval(
    context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource, execution: ExecutionBackend
) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    records, warehouse, backend = platform_repo.records(snap), platform_repo.warehouse(snap), execution.for_run(snap)
    image, bundle = records.read(ModelImage, snap.spec.name), records.read(PromptBundle, snap.spec.name)
    result = run_canary(
        snap,
        warehouse,
        image,
        bundle,
        target=backend.target,
        serve=lambda digest, champion: backend.serve_candidate(snap, digest, context.log.info, champion=champion),
    )
    records.publish(result.record, snap.spec.name, passed=result.passed)  # the rollout's only input
    record(warehouse, snap, result, target=backend.target, idle_color=backend.idle_color(snap))
    if not result.passed:  # the same words from either backend, as a rollout's
        failed = ", ".join(sorted(m for m, v in result.verdicts.items() if not v.passed))
        notify(
            f"{snap.spec.name}: canary rejected image {image.digest[:19]}, prompts {bundle.digest[:19]}"
            f" (gates failed: {failed}); what is live stays live",
            context.log.info,
        )
    candidate, champion = result.candidate, result.champion
    checks = []
    for metric in METRICS:
        verdict = result.verdicts.get(metric)
        detail = verdict.detail if verdict else f"{metric} = {candidate.metrics[metric]:.4g} (not gated by the spec)"
        checks.append(
            dg.AssetCheckResult(
                check_name=f"gate_{metric}", passed=verdict.passed if verdict else True, metadata={"detail": detail}
            )
        )
    latencies = [s.latency_s for s in candidate.scores if s.error is None]
    svg = snap.platform.artifacts_path / "reports" / f"canary-{candidate.run_id}-latency.svg"
    svg.parent.mkdir(parents=True, exist_ok=True)
    svg.write_text(latency_svg(latencies))
    metadata: dict[str, dg.RawMetadataValue] = {
        "run_id": candidate.run_id,
        "image": candidate.image_digest,
        "bundle": candidate.bundle_digest,
        "champion": champion.image_digest if champion else "none (nothing live yet)",
        "passed": result.passed,
        "comparison": dg.MetadataValue.md(
            comparison(candidate.metrics, champion.metrics if champion else None, result.verdicts)
        ),
        "latency_distribution": dg.MetadataValue.md(latency_histogram(latencies)),
        "latency_plot": dg.MetadataValue.path(str(svg)),
        **{k: float(v) for k, v in candidate.metrics.items()},
    }
    return dg.MaterializeResult(metadata=metadata, check_results=checks, data_version=dg.DataVersion(candidate.run_id))
