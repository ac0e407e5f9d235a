"""The learning loop: what the deployments served, reviewers' labels of it, and the trust model they teach.

deployment -> generations -> feedback_labels -> trust_model -> trust_champion -> gateway
"""

from typing import Any

import dagster as dg

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.config import Platform
from ai_platform.feedback.inbox import scan
from ai_platform.feedback.ingest import ingest
from ai_platform.feedback.pending import retry
from ai_platform.feedback.served import served
from ai_platform.trust.clauses import ClauseIndex
from ai_platform.trust.model import TrustModel
from ai_platform.trust.promote import promote
from ai_platform.trust.threshold import curve_markdown
from ai_platform.trust.train import Check, champion, train
from assets.partitions import models_partitions
from assets.resources import PlatformRepoResource

# The candidate's promotion gates: blocking, so trust_champion runs only when all three pass.
TRUST_CHECKS = [
    dg.AssetCheckSpec(
        "beats_best_single_feature",
        asset="trust_model",
        blocking=True,
        description="Holdout AUC above the best single feature's (chosen, as the model is, on the training labels).",
    ),
    dg.AssetCheckSpec(
        "auc_above_floor",
        asset="trust_model",
        blocking=True,
        description="Holdout AUC at least the spec's trust.min_auc.",
    ),
    dg.AssetCheckSpec(
        "ece_within_bound",
        asset="trust_model",
        blocking=True,
        description="Holdout calibration error (ECE, 10 bins) at most the spec's trust.max_ece.",
    ),
]
SERVED = dg.TableSchema(
    columns=[
        dg.TableColumn("model", "string"),
        dg.TableColumn("source", "string"),
        dg.TableColumn("image", "string"),
        *(dg.TableColumn(name, "int") for name in ("generations", "labelled", "unscored", "needs_review")),
    ]
)


@dg.asset(
    deps=["deployment"],
    group_name="feedback",
    kinds={"duckdb"},
    owners=["team:ml-platform"],
    description="What the deployments served: the generations the gateway (and the canary) logged to the warehouse,"
    " per model, source and image. Reviewers label these.",
)
def generations(platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    found = served(platform_repo.platform().warehouse())
    rows = [dg.TableRecord(vars(r)) for r in found.rows]
    return dg.MaterializeResult(
        metadata={
            "generations": found.total,
            "labelled": sum(r.labelled for r in found.rows),
            "unscored": sum(r.unscored for r in found.rows),
            "latest": found.latest.isoformat() if found.latest else "none yet",
            "served": dg.MetadataValue.table(rows, schema=SERVED),
        },
        data_version=dg.DataVersion(found.version),
    )


PER_FILE = dg.TableSchema(
    columns=[
        dg.TableColumn("file", "string"),
        *(dg.TableColumn(name, "int") for name in ("rows_in", "accepted", "quarantined", "duplicates")),
    ]
)


@dg.asset(
    deps=["generations"],
    group_name="feedback",
    kinds={"duckdb", "csv"},
    owners=["team:legal-review"],
    description="Label files from the inbox, validated row by row; bad rows quarantined with file, line, reason.",
)
def feedback_labels(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    platform = platform_repo.platform()
    inbox = platform.inbox_path
    files = scan(inbox, settle_s=0).files if inbox.is_dir() else []  # the run was asked for: take what is there
    retried = retry(platform.warehouse())  # labels that came before their generations: look again first
    context.log.info(retried.summary())
    reports = ingest([inbox / f.name for f in files], platform.warehouse())
    for report in reports:
        context.log.info(report.summary())
    rows = [
        dg.TableRecord(
            {
                "file": r.file,
                "rows_in": r.rows_in,
                "accepted": r.accepted,
                "quarantined": r.quarantined,
                "duplicates": r.duplicates,
            }
        )
        for r in reports
    ]
    totals = {k: sum(getattr(r, k) for r in reports) for k in ("rows_in", "accepted", "quarantined", "duplicates")}
    version = sha256_hex(canonical_json([sorted([r.sha256, r.accepted] for r in reports), vars(retried)]))
    return dg.MaterializeResult(
        metadata={
            **totals,
            **{f"pending_{k}": v for k, v in vars(retried).items()},
            "files": len(reports),
            "inbox": str(inbox),
            "per_file": dg.MetadataValue.table(rows, schema=PER_FILE),
        },
        data_version=dg.DataVersion(version),
    )


@dg.asset(
    partitions_def=models_partitions,
    deps=["feedback_labels"],
    group_name="feedback",
    kinds={"scikitlearn", "duckdb"},
    owners=["team:ml-platform"],
    check_specs=TRUST_CHECKS,
    automation_condition=dg.AutomationCondition.eager(),
    description="A candidate classifier of trustworthy generations for one served model, judged on the labels it"
    " never saw; its checks gate promotion.",
)
def trust_model(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    model, platform = context.partition_key, platform_repo.platform()
    trained = train(platform.warehouse(), platform.artifacts(), model, platform.model(model).trust, clauses(platform))
    m, incumbent = trained.metrics, trained.champion_metrics
    singles = "\n".join(
        f"| {name} | {auc:.3f} |" for name, auc in sorted(m["single_feature_auc"].items(), key=lambda kv: -kv[1])
    )
    return dg.MaterializeResult(
        metadata={
            "version": trained.model.version,
            "auc": m["auc"],
            "brier": m["brier"],
            "ece": m["ece"],
            "ece_uncalibrated": m.get("ece_uncalibrated", m["ece"]),
            "calibrated": m["calibrated"],
            "best_single_feature": m["best_single_feature"],
            "best_single_feature_auc": m["best_single_feature_auc"],
            "champion_auc_on_same_holdout": incumbent["auc"] if incumbent else "none (first model)",
            "labels": trained.examples,
            "generations": m["generations"],
            "holdout": m["holdout"],
            "single_feature_auc": dg.MetadataValue.md("| feature | AUC |\n|---|---:|\n" + singles),
            "coefficients": dg.MetadataValue.json(dict(zip(trained.model.features, trained.model.coef, strict=True))),
        },
        check_results=[_check(c) for c in trained.checks],
        data_version=dg.DataVersion(trained.model.version),
    )


def clauses(platform: Platform) -> ClauseIndex | None:
    """The retrieval corpus's clause kinds, which the trust features judge a reply against (as the gateway does)."""
    corpus = platform.config.feedback.retrieval_corpus
    return ClauseIndex.load(platform.file(corpus)) if corpus else None


def _check(check: Check) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(check_name=check.name, passed=check.passed, metadata={"detail": check.detail})


@dg.asset(
    partitions_def=models_partitions,
    deps=["trust_model"],
    group_name="feedback",
    kinds={"duckdb"},
    owners=["team:ml-platform"],
    automation_condition=dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed(),
    description="The served model's champion trust model: the candidate, when it passed its checks and beats the"
    " champion on the same holdout; then every generation without a trust score is scored. Its page shows the"
    " review threshold's trade-off curve (share flagged against misses left) with the chosen point.",
)
def trust_champion(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    model, platform = context.partition_key, platform_repo.platform()
    version = _latest_candidate(context, model)
    result = promote(
        platform.warehouse(),
        platform.artifacts(),
        model,
        version,
        platform.model(model).trust,
        platform.config.feedback.trust_threshold,
        clauses(platform),
    )
    context.log.info(f"{model}: {'promoted' if result.promoted else 'kept the champion'}: {result.reason}")
    return dg.MaterializeResult(
        metadata={
            "candidate": version,
            "promoted": result.promoted,
            "reason": result.reason,
            "backfilled": result.backfilled,
            **review_metadata(champion(platform.warehouse(), model), platform.config.feedback.trust_threshold),
        },
        data_version=dg.DataVersion(f"{version}:{result.promoted}"),
    )


def review_metadata(trust_model: TrustModel | None, fallback: float) -> dict[str, Any]:
    """The champion's review threshold, the point it chose on the trade-off curve (share flagged against misses
    left, on its holdout), and the curve as a plot; or where the threshold comes from when it has none."""
    if trust_model is None:
        return {"review_threshold": "none: no champion the gateway can score with"}
    review = trust_model.metrics.get("review")
    if trust_model.review_threshold is None or not review:
        return {
            "review_threshold": fallback,
            "review_threshold_source": "platform.yaml feedback.trust_threshold: a champion from before review"
            " thresholds were chosen for trust.review_budget (retrain it to choose one)",
        }
    return {
        "review_threshold": trust_model.review_threshold,
        "review_threshold_source": f"chosen on the holdout for trust.review_budget {review['budget']:g}; on the"
        " model's raw score (before its calibration map), which orders the replies the map ties",
        "review_flagged_share": review["flagged_share"],
        "review_miss_rate": review["miss_rate"],
        "review_miss_bound": review["miss_bound"],
        "review_miss_confidence": review["confidence"],
        "review_tradeoff": dg.MetadataValue.md(curve_markdown(review, trust_model.review_threshold)),
    }


def _latest_candidate(context: dg.AssetExecutionContext, model: str) -> str:
    """The version trust_model last materialized for this partition."""
    record = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("trust_model"), asset_partitions=[model]), limit=1
    ).records
    if not record:
        raise dg.Failure(f"trust_model has not been materialized for {model!r}")
    materialization = record[0].asset_materialization
    assert materialization is not None
    return str(materialization.metadata["version"].value)


gateway = dg.AssetSpec(
    "gateway",
    deps=["deployment", "trust_champion"],
    group_name="feedback",
    kinds={"python"},
    owners=["team:ml-platform"],
    description="The gateway in front of every model (not run by Dagster): it routes to the live colour and scores"
    " each reply with the model's champion trust model (looked up every 15 s); below the threshold it re-asks with"
    " retrieved clauses or marks the reply needs_review.",
)
