"""feedback_labels and trust_model: reviewers' labels teach which answers to trust."""

import dagster as dg

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.feedback.inbox import scan
from ai_platform.feedback.ingest import ingest
from ai_platform.feedback.pending import retry
from ai_platform.trust.train import train
from assets.resources import PlatformRepoResource

BEATS_SINGLE_FEATURE = dg.AssetCheckSpec(
    "beats_best_single_feature",
    asset="trust_model",
    description="The trained model's holdout AUC is above that of the best single feature (chosen, as the model is,"
    " on the training labels); else the model is not worth using.",
)


PER_FILE = dg.TableSchema(
    columns=[
        dg.TableColumn("file", "string"),
        *(dg.TableColumn(name, "int") for name in ("rows_in", "accepted", "quarantined", "duplicates")),
    ]
)


@dg.asset(
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
    deps=["feedback_labels"],
    group_name="feedback",
    kinds={"scikitlearn", "duckdb"},
    owners=["team:ml-platform"],
    check_specs=[BEATS_SINGLE_FEATURE],
    description="A calibrated classifier of trustworthy generations; champion only if it beats the incumbent.",
)
def trust_model(context: dg.AssetExecutionContext, platform_repo: PlatformRepoResource) -> dg.MaterializeResult:
    platform = platform_repo.platform()
    trained = train(platform.warehouse(), platform.artifacts())
    m = trained.metrics
    singles = "\n".join(
        f"| {name} | {auc:.3f} |" for name, auc in sorted(m["single_feature_auc"].items(), key=lambda kv: -kv[1])
    )
    check = dg.AssetCheckResult(
        check_name=BEATS_SINGLE_FEATURE.name,
        passed=m["auc"] > m["best_single_feature_auc"],
        metadata={
            "auc": m["auc"],
            "best_single_feature": m["best_single_feature"],
            "best_single_feature_auc": m["best_single_feature_auc"],
        },
    )
    incumbent = trained.champion_metrics
    return dg.MaterializeResult(
        metadata={
            "version": trained.model.version,
            "promoted": trained.promoted,
            "auc": m["auc"],
            "brier": m["brier"],
            "ece": m["ece"],
            "best_single_feature": m["best_single_feature"],
            "best_single_feature_auc": m["best_single_feature_auc"],
            "champion_auc_on_same_holdout": incumbent["auc"] if incumbent else "none (first model)",
            "labels": trained.examples,
            "holdout": m["holdout"],
            "single_feature_auc": dg.MetadataValue.md("| feature | AUC |\n|---|---:|\n" + singles),
            "coefficients": dg.MetadataValue.json(dict(zip(trained.model.features, trained.model.coef, strict=True))),
        },
        check_results=[check],
        data_version=dg.DataVersion(trained.model.version),
    )
