"""canary_eval: the candidate on real vLLM against the eval set, gated on quality."""

import dagster as dg

from ai_platform.evaluation.report import attack_table, comparison, gate_table, latency_markdown
from ai_platform.evaluation.stage import record, run_canary
from ai_platform.records import ModelImage, PromptBundle
from ai_platform.rollout.notify import notify
from assets import versions
from assets.execution import ExecutionBackend
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

# The spec's gates, judged together: each model names its own (at least one), so one blocking check holds
# them all, one row per gate; a metric no gate names is metadata, never a check that passes for show.
GATES = dg.AssetCheckSpec(
    "canary_gates",
    asset="canary_eval",
    blocking=True,
    description="Every gate in the model spec's canary.gates, absolute or paired with the live champion, each "
    "decided on a one-sided bound at its confidence (estimate, interval and p-value per row).",
)


@dg.asset(
    partitions_def=models_partitions,
    code_version=versions.CANARY,
    deps=["model_image", "prompt_bundle"],
    group_name="release",
    kinds={"vllm", "duckdb"},
    owners=["team:ml-platform"],
    check_specs=[GATES],
    description="Champion vs challenger on the eval set: schema validity, repetition, coherence, PII, recall, latency.",
)
def canary_eval(
    context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource, execution: ExecutionBackend
) -> dg.MaterializeResult:
    snap = platform_repo.pinned(context.partition_key)
    records, warehouse, backend = platform_repo.records(snap), platform_repo.warehouse(snap), execution.for_run(snap)
    image, bundle = records.read(ModelImage, snap.spec.name), records.read(PromptBundle, snap.spec.name)
    result = run_canary(snap, image, bundle, backend=backend, log=context.log.info)
    records.publish(result.record, snap.spec.name, passed=result.passed)  # the rollout's only input
    record(warehouse, snap, result, target=backend.target, idle_color=backend.idle_color(snap))
    if not result.passed:  # the same words from either backend, as a rollout's
        names = ", ".join(sorted(m for m, v in result.verdicts.items() if not v.passed))
        notify(
            f"{snap.spec.name}: canary rejected image {image.digest[:19]}, prompts {bundle.digest[:19]}"
            f" (gates failed: {names}); what is live stays live",
            context.log.info,
        )
    candidate, champion = result.candidate, result.champion
    failed = [v.detail for v in result.verdicts.values() if not v.passed]
    check = dg.AssetCheckResult(
        check_name=GATES.name,
        passed=result.passed,
        metadata={
            "gates": dg.MetadataValue.md(gate_table(result.gates)),
            "failed": "; ".join(failed) or "none",
        },
    )
    latencies = [s.latency_s for s in candidate.scores if s.error is None]
    metadata: dict[str, dg.RawMetadataValue] = {
        "run_id": candidate.run_id,
        "image": candidate.image_digest,
        "bundle": candidate.bundle_digest,
        "champion": champion.image_digest if champion else "none (nothing live yet)",
        "passed": result.passed,
        "comparison": dg.MetadataValue.md(
            comparison(candidate.metrics, champion.metrics if champion else None, result.verdicts)
            + "\n\n"
            + gate_table(result.gates)
        ),
        "attack_set": dg.MetadataValue.md(
            attack_table(
                candidate.scores,
                champion.scores if champion else None,
                candidate.spotlight,
                champion.spotlight if champion else None,
            )
        ),
        "spotlight": ", ".join(f"{k}: {v}" for k, v in sorted(candidate.spotlight.items()))
        + (f" (champion: {', '.join(f'{k}: {v}' for k, v in sorted(champion.spotlight.items()))})" if champion else ""),
        "latency_distribution": dg.MetadataValue.md(latency_markdown(latencies)),
        **{k: float(v) for k, v in candidate.metrics.items()},
    }
    return dg.MaterializeResult(metadata=metadata, check_results=[check], data_version=dg.DataVersion(candidate.run_id))
