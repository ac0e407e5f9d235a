"""Train the trust model on reviewers' labels, and promote it only if it beats the champion.

Each label (generation, reviewer) is one example; the target is `label == 'correct'`.
The split is by time (labeled_at): the model is judged on labels newer than any
it learned from, as it will be used. Reported on the holdout: AUC, Brier score,
expected calibration error (10 equal-width bins), and the AUC of the best single
feature: a model that cannot beat one feature is not worth its complexity, and
the metadata says so. That feature, and its direction, are chosen on the training
labels, as the model's coefficients are: the best of a dozen features picked on
the holdout itself is an oracle, and on holdouts of 78 to 150 labels it beat a
sound model by luck in 3 of 16 sets of the demo's reviewer labels.
Every feature's holdout AUC is reported too, so the oracle is visible.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ai_platform.artifacts import ArtifactStore
from ai_platform.errors import TrustModelError
from ai_platform.trust.features import FEATURES, features
from ai_platform.trust.model import TrustModel
from ai_platform.warehouse import Warehouse, insert_new

MIN_LABELS = 20
# The champion: the model it carries (migration 0009) and, for older rows, its file.
CHAMPION = "SELECT model, artifact_path FROM trust_models WHERE champion ORDER BY trained_at DESC LIMIT 1"
HOLDOUT = 0.3


@dataclass(frozen=True)
class Example:
    labeled_at: datetime
    features: dict[str, float]
    correct: bool


@dataclass(frozen=True)
class Trained:
    model: TrustModel
    metrics: dict[str, Any]
    champion_metrics: dict[str, Any] | None
    promoted: bool
    examples: int


def examples(warehouse: Warehouse) -> list[Example]:
    columns, rows = warehouse.query(
        "SELECT g.input, g.output, g.metrics, g.finish_reason, g.latency_s, l.label, l.labeled_at"
        " FROM feedback_labels l JOIN generations g USING (generation_id)"
        " ORDER BY l.labeled_at, l.generation_id, l.reviewer"
    )
    found = []
    for row in rows:
        record = dict(zip(columns, row, strict=True))
        found.append(Example(record["labeled_at"], features(record), record["label"] == "correct"))
    return found


def _matrix(rows: list[Example], mean: list[float]) -> list[list[float]]:
    return [[m if math.isnan(v := e.features[f]) else v for f, m in zip(FEATURES, mean, strict=True)] for e in rows]


def fit(train: list[Example]) -> TrustModel:
    from sklearn.linear_model import LogisticRegression

    mean = []
    for f in FEATURES:
        present = [e.features[f] for e in train if not math.isnan(e.features[f])]
        mean.append(sum(present) / len(present) if present else 0.0)
    x = _matrix(train, mean)
    scale = []
    for j in range(len(FEATURES)):
        column = [row[j] for row in x]
        sd = math.sqrt(sum((v - mean[j]) ** 2 for v in column) / len(column))
        scale.append(sd if sd > 1e-9 else 1.0)  # a constant feature carries no signal; keep it harmless
    xs = [[(v - m) / s for v, m, s in zip(row, mean, scale, strict=True)] for row in x]
    lr = LogisticRegression(C=1.0, max_iter=2000).fit(xs, [e.correct for e in train])
    return TrustModel(list(FEATURES), mean, scale, [float(c) for c in lr.coef_[0]], float(lr.intercept_[0]))


def ece(probabilities: list[float], truth: list[bool], bins: int = 10) -> float:
    total = len(probabilities)
    error = 0.0
    for b in range(bins):
        members = [
            i for i, p in enumerate(probabilities) if b / bins <= p < (b + 1) / bins or (b == bins - 1 and p == 1)
        ]
        if members:
            confidence = sum(probabilities[i] for i in members) / len(members)
            accuracy = sum(truth[i] for i in members) / len(members)
            error += len(members) / total * abs(confidence - accuracy)
    return error


def _single_feature_aucs(model: TrustModel, rows: list[Example]) -> dict[str, float]:
    """Each feature's AUC as a score by itself (missing values imputed as the model does);
    below 0.5 means it ranks the other way round."""
    from sklearn.metrics import roc_auc_score

    truth = [e.correct for e in rows]
    aucs = {}
    for j, name in enumerate(FEATURES):
        values = [model.mean[j] if math.isnan(e.features[name]) else e.features[name] for e in rows]
        if len(set(values)) > 1 and len(set(truth)) > 1:
            aucs[name] = float(roc_auc_score(truth, values))
    return aucs


def evaluate(model: TrustModel, holdout: list[Example], train_rows: list[Example]) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score

    truth = [e.correct for e in holdout]
    if len(set(truth)) < 2:
        raise TrustModelError(f"the holdout ({len(holdout)} labels) has only one class; label more generations")
    probabilities = [model.score(e.features) for e in holdout]
    on_holdout = _single_feature_aucs(model, holdout)
    on_train = {name: auc for name, auc in _single_feature_aucs(model, train_rows).items() if name in on_holdout}
    best = max(on_train, key=lambda name: abs(on_train[name] - 0.5)) if on_train else None
    best_auc = math.nan
    if best is not None:  # in the direction it had on the training labels
        best_auc = on_holdout[best] if on_train[best] >= 0.5 else 1.0 - on_holdout[best]
    return {
        "auc": roc_auc_score(truth, probabilities),
        "brier": sum((p - t) ** 2 for p, t in zip(probabilities, truth, strict=True)) / len(truth),
        "ece": ece(probabilities, truth),
        "holdout": len(holdout),
        "holdout_correct_rate": sum(truth) / len(truth),
        "best_single_feature": best,
        "best_single_feature_auc": best_auc,
        "single_feature_auc": {name: max(auc, 1.0 - auc) for name, auc in on_holdout.items()},
    }


def champion(warehouse: Warehouse) -> TrustModel | None:
    _, rows = warehouse.query(CHAMPION)
    return TrustModel.from_row(*rows[0]) if rows else None


def train(warehouse: Warehouse, store: ArtifactStore) -> Trained:
    rows = examples(warehouse)
    if len(rows) < MIN_LABELS:
        raise TrustModelError(f"{len(rows)} labeled generations; the trust model needs at least {MIN_LABELS}")
    cut = int(len(rows) * (1 - HOLDOUT))
    train_rows, holdout = rows[:cut], rows[cut:]
    if len({e.correct for e in train_rows}) < 2:
        raise TrustModelError("the training labels have only one class; label more generations")
    model = fit(train_rows)
    metrics = evaluate(model, holdout, train_rows)
    incumbent = champion(warehouse)
    incumbent_metrics = evaluate(incumbent, holdout, train_rows) if incumbent else None
    promoted = incumbent_metrics is None or metrics["auc"] > incumbent_metrics["auc"]
    metrics["train"] = len(train_rows)
    model = TrustModel(model.features, model.mean, model.scale, model.coef, model.intercept, metrics)
    body = model.to_bytes().decode()
    digest = store.put_bytes(model.to_bytes())
    path = str(store.blob_path(digest))
    with warehouse.write() as con:  # the same model trained twice is one row, and keeps its standing
        columns = ("version", "algorithm", "features", "metrics", "champion", "artifact_path", "model")
        row = [digest, "logistic_regression", json.dumps(model.features), json.dumps(metrics), False, path, body]
        insert_new(con, "trust_models", columns, "version", [row])
        if promoted:
            con.execute("UPDATE trust_models SET champion = (version = ?)", [digest])
    if promoted:
        store.set_ref("trust_model", "champion", {"version": digest, "path": path})
    return Trained(model, metrics, incumbent_metrics, promoted, len(rows))
