"""Promote a served model's trust-model candidate, then score the generations served before it.

Promotion is the step after the blocking checks (`trust_model`'s, `train.checks`):
the candidate becomes the model's champion when it passed them and, if the model
already has a champion, ranks better on the same holdout (higher AUC). The
gateway reads the champion from the warehouse within 15 s.

Backfill: generations logged while no champion existed (the canary's, and the
gateway's before the first promotion) have no trust score, so the analysts'
views could not say which high-trust answers missed a risk. On promotion every
one of the model's generations without a score is scored by the new champion,
and `needs_review` set from the champion's review threshold (`trust.threshold`;
platform.yaml's `feedback.trust_threshold` for a model from before it had one).
Scores already given are kept: they are what the gateway decided with at the time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ai_platform.artifacts import ArtifactStore
from ai_platform.config import Trust
from ai_platform.errors import TrustModelError, TrustModelFileError
from ai_platform.records import Records, TrustChampion
from ai_platform.trust.clauses import ClauseIndex
from ai_platform.trust.features import features
from ai_platform.trust.model import TrustModel
from ai_platform.trust.train import checks
from ai_platform.warehouse import Warehouse

BATCH = 500


@dataclass(frozen=True)
class Promotion:
    promoted: bool
    reason: str
    backfilled: int


def candidate(warehouse: Warehouse, model: str, version: str) -> tuple[TrustModel, dict[str, Any]]:
    """A recorded candidate of `model`: the trust model and its holdout metrics."""
    _, rows = warehouse.query(
        "SELECT model, artifact_path, metrics FROM trust_models WHERE version = ? AND served_model = ?",
        [version, model],
    )
    if not rows:
        raise TrustModelError(f"{model}: no trust model {version[:19]} was trained for it; materialize trust_model")
    body, path, metrics = rows[0]
    return TrustModel.from_row(body, path), json.loads(metrics)


def promote(
    warehouse: Warehouse,
    store: ArtifactStore,
    model: str,
    version: str,
    bounds: Trust,
    threshold: float,
    clauses: ClauseIndex | None = None,
) -> Promotion:
    """Make candidate `version` `model`'s champion if it passes its checks and beats the champion, then
    backfill. A candidate that fails a check is refused with the reason, whoever asks."""
    trust_model, metrics = candidate(warehouse, model, version)
    failed = [c.detail for c in checks(metrics, bounds) if not c.passed]
    if failed:
        raise TrustModelError(f"{model}: candidate {version[:19]} failed its checks ({'; '.join(failed)})")
    auc, incumbent = metrics["auc"], metrics.get("champion_auc_same_holdout")
    _, current = warehouse.query("SELECT version FROM trust_models WHERE champion AND served_model = ?", [model])
    if current and current[0][0] == version:  # retrained on the same labels: still the champion
        return Promotion(False, "already the champion", backfill(warehouse, model, trust_model, threshold, clauses))
    same_fit = bool(current) and _same_fit(warehouse, current[0][0], trust_model)
    if incumbent is not None and not auc > incumbent and not same_fit:
        return Promotion(False, f"holdout AUC {auc:.3f} does not beat the champion's {incumbent:.3f}", 0)
    with warehouse.write() as con:
        con.execute("UPDATE trust_models SET champion = (version = ?) WHERE served_model = ?", [version, model])
    Records(store).publish(TrustChampion(version, str(store.blob_path(version))), model)
    why = "first champion" if incumbent is None else f"holdout AUC {auc:.3f} beats the champion's {incumbent:.3f}"
    if same_fit and not auc > (incumbent or 0.0):
        why = "the champion's fit, with its review threshold chosen again (the spec's trust review settings changed)"
    return Promotion(True, why, backfill(warehouse, model, trust_model, threshold, clauses))


def _same_fit(warehouse: Warehouse, version: str, candidate: TrustModel) -> bool:
    """Whether the champion `version` scores exactly as the candidate does: only the review threshold, or the
    figures it carries, differ (the spec's review_budget changed, the labels did not)."""
    _, rows = warehouse.query("SELECT model, artifact_path FROM trust_models WHERE version = ?", [version])
    try:
        incumbent = TrustModel.from_row(*rows[0])
    except TrustModelFileError:
        return False
    scoring = ("features", "mean", "scale", "coef", "intercept", "calibration", "format")
    return all(getattr(incumbent, k) == getattr(candidate, k) for k in scoring)


def backfill(
    warehouse: Warehouse, model: str, trust_model: TrustModel, threshold: float, clauses: ClauseIndex | None = None
) -> int:
    """Score `model`'s generations that have no trust score, flagging those under the trust model's review
    threshold (`threshold` where it has none); returns how many."""
    columns, rows = warehouse.query(
        "SELECT generation_id, input, output, metrics, finish_reason FROM generations"
        " WHERE model = ? AND trust_score IS NULL",
        [model],
    )
    scored = []
    for row in rows:
        record = dict(zip(columns, row, strict=True))
        trust, review = trust_model.judge(features(record, clauses), threshold)
        scored.append([record["generation_id"], trust, review])
    for start in range(0, len(scored), BATCH):
        with warehouse.write() as con:
            con.execute("CREATE OR REPLACE TEMP TABLE backfill (generation_id VARCHAR, trust DOUBLE, review BOOLEAN)")
            try:
                con.executemany("INSERT INTO backfill VALUES (?, ?, ?)", scored[start : start + BATCH])
                con.execute(
                    "UPDATE generations SET trust_score = b.trust, needs_review = b.review FROM backfill b"
                    " WHERE generations.generation_id = b.generation_id AND generations.trust_score IS NULL"
                )
            finally:
                con.execute("DROP TABLE IF EXISTS temp.backfill")
    return len(scored)
