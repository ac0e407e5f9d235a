"""Train a served model's trust model on reviewers' labels of its generations, as a candidate.

Each label (generation, reviewer) is one example; the target is `label == 'correct'`.
The split is by generation and by time: every label of one generation falls on one
side (two reviewers of one reply are not two independent facts), and the holdout is
the generations labelled last, so the model is judged on labels newer than any it
learned from, as it will be used. Reported on the holdout: AUC, Brier score,
expected calibration error (10 equal-width bins), and the AUC of the best single
feature: a model that cannot beat one feature is not worth its complexity. That
feature, and its direction, are chosen on the training labels, as the model's
coefficients are: the best of a dozen features picked on the holdout itself is an
oracle, and on holdouts of 78 to 150 labels it beat a sound model by luck in 3 of
16 sets of the demo's reviewer labels. Every feature's holdout AUC is reported too.

Calibration: an isotonic map is fitted on out-of-fold probabilities of the training
labels (scikit-learn's IsotonicRegression, folds by generation) and kept only when
it lowers the holdout ECE. The candidate is promoted by `trust.promote`, and only
when the blocking checks here pass: above the spec's AUC floor, above the best
single feature, ECE under the spec's bound. The model carries its review
threshold, chosen on the holdout for the spec's review budget (`trust.threshold`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from ai_platform.artifacts import ArtifactStore
from ai_platform.config import Trust
from ai_platform.errors import TooFewLabelsError, TrustModelFileError
from ai_platform.trust.clauses import ClauseIndex
from ai_platform.trust.features import FEATURES, features
from ai_platform.trust.model import TrustModel
from ai_platform.trust.threshold import choose
from ai_platform.warehouse import Warehouse, insert_new

# The champion a model's generations are scored by: its own, else one trained on every model's labels
# before models had their own (migration 0010); the model JSON it carries and, for older rows, its file.
CHAMPION = (
    "SELECT model, artifact_path FROM trust_models WHERE champion AND (served_model = ? OR served_model IS NULL)"
    " ORDER BY served_model NULLS LAST, trained_at DESC LIMIT 1"
)
HOLDOUT = 0.3
FOLDS = 5


@dataclass(frozen=True)
class Example:
    labeled_at: datetime
    features: dict[str, float]
    correct: bool
    generation_id: str = ""


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Candidate:
    model: TrustModel
    metrics: dict[str, Any]
    champion_metrics: dict[str, Any] | None  # the incumbent on the same holdout
    checks: list[Check]
    examples: int

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def examples(warehouse: Warehouse, model: str, clauses: ClauseIndex | None = None) -> list[Example]:
    """Every label of `model`'s generations, oldest first (`clauses`: the retrieval corpus's index, if any)."""
    columns, rows = warehouse.query(
        "SELECT g.generation_id, g.input, g.output, g.metrics, g.finish_reason, l.label, l.labeled_at"
        " FROM feedback_labels l JOIN generations g USING (generation_id) WHERE g.model = ?"
        " ORDER BY l.labeled_at, l.generation_id, l.reviewer",
        [model],
    )
    found = []
    for row in rows:
        record = dict(zip(columns, row, strict=True))
        correct = record["label"] == "correct"
        found.append(Example(record["labeled_at"], features(record, clauses), correct, record["generation_id"]))
    return found


def split(rows: list[Example], holdout: float = HOLDOUT) -> tuple[list[Example], list[Example]]:
    """By generation, then by time: generations ordered by their first label; the last `holdout` share of the
    labels (whole generations) is the holdout."""
    groups: dict[str, list[Example]] = {}
    for e in rows:  # rows are oldest first, so a group's first label decides its place
        groups.setdefault(e.generation_id or str(id(e)), []).append(e)
    train_rows: list[Example] = []
    target = len(rows) * (1 - holdout)
    ordered = list(groups.values())
    cut = 0
    while cut < len(ordered) and len(train_rows) + len(ordered[cut]) <= target:
        train_rows += ordered[cut]
        cut += 1
    return train_rows, [e for group in ordered[cut:] for e in group]


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
    """Expected calibration error: over `bins` equal-width bins of probability, the mean gap between the mean
    probability and the share of true labels, weighted by the bin's share of the examples."""
    return float(_ece(np.asarray(probabilities, dtype=float), np.asarray(truth, dtype=float)[None, :], bins)[0])


def ece_by_chance(probabilities: list[float], bins: int = 10, draws: int = 2000, seed: int = 0) -> float:
    """The ECE a perfectly calibrated model would show on these probabilities by chance alone: the mean ECE over
    label sets drawn as Bernoulli(p) for each example (consistency resampling, Broecker and Smith 2007).

    The binned ECE is biased upward on few labels: with 120 holdout labels in 10 bins each bin's share of
    true labels wanders by about 0.1 from its mean probability even when that probability is exactly right.
    The part of a holdout's ECE over this figure is miscalibration the labels can show."""
    p = np.asarray(probabilities, dtype=float)
    drawn = np.random.default_rng(seed).random((draws, len(p))) < p
    return float(_ece(p, drawn.astype(float), bins).mean())


def _ece(p: npt.NDArray[np.float64], truth: npt.NDArray[np.float64], bins: int) -> npt.NDArray[np.float64]:
    """The ECE of probabilities `p` against each row of `truth` (label sets, one per row)."""
    which = np.minimum((p * bins).astype(int), bins - 1)  # bin b holds b/bins <= p < (b+1)/bins, the last also 1
    error = np.zeros(truth.shape[0])
    for b in np.unique(which):
        members = which == b
        gap = np.abs(p[members].mean() - truth[:, members].mean(axis=1))
        error += members.sum() / len(p) * gap
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
        raise TooFewLabelsError(f"the holdout ({len(holdout)} labels) has only one class; label more generations")
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
        "ece_by_chance": ece_by_chance(probabilities),
        "holdout": len(holdout),
        "holdout_correct_rate": sum(truth) / len(truth),
        "best_single_feature": best,
        "best_single_feature_auc": best_auc,
        "single_feature_auc": {name: max(auc, 1.0 - auc) for name, auc in on_holdout.items()},
    }


def champion(warehouse: Warehouse, model: str) -> TrustModel | None:
    """The model's champion; None where it has none, or one of an older feature set (`model.FORMAT`), which
    cannot be scored on today's features: the candidate is then judged as a first model."""
    _, rows = warehouse.query(CHAMPION, [model])
    try:
        return TrustModel.from_row(*rows[0]) if rows else None
    except TrustModelFileError:
        return None


def calibrate(train_rows: list[Example]) -> list[list[float]] | None:
    """An isotonic map from out-of-fold probabilities (folds by generation) to the training labels."""
    from sklearn.isotonic import IsotonicRegression

    groups = sorted({e.generation_id for e in train_rows})
    folds = min(FOLDS, len(groups))
    if folds < 2:
        return None
    fold_of = {g: i % folds for i, g in enumerate(groups)}
    raw, truth = [], []
    for k in range(folds):
        inner = [e for e in train_rows if fold_of[e.generation_id] != k]
        outer = [e for e in train_rows if fold_of[e.generation_id] == k]
        if len({e.correct for e in inner}) < 2 or not outer:
            return None
        model = fit(inner)
        raw += [model.raw_score(e.features) for e in outer]
        truth += [float(e.correct) for e in outer]
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(raw, truth)
    return [[float(x) for x in iso.X_thresholds_], [float(y) for y in iso.y_thresholds_]]


def checks(metrics: dict[str, Any], bounds: Trust) -> list[Check]:
    """The blocking checks a candidate must pass to be promoted."""
    auc, single, error, chance = (metrics[k] for k in ("auc", "best_single_feature_auc", "ece", "ece_by_chance"))
    excess = max(0.0, error - chance)
    name = metrics["best_single_feature"]
    return [
        Check(
            "beats_best_single_feature",
            not math.isnan(single) and auc > single,
            f"holdout AUC {auc:.3f} vs {name} alone {single:.3f} (chosen on the training labels)",
        ),
        Check("auc_above_floor", auc >= bounds.min_auc, f"holdout AUC {auc:.3f} (floor {bounds.min_auc:g})"),
        Check(
            "ece_within_bound",
            excess <= bounds.max_ece,
            f"holdout ECE {error:.3f}, of which {chance:.3f} is what a perfectly calibrated model shows on "
            f"{metrics['holdout']} labels by chance: {excess:.3f} over it (bound {bounds.max_ece:g})",
        ),
    ]


def train(
    warehouse: Warehouse, store: ArtifactStore, model: str, bounds: Trust, clauses: ClauseIndex | None = None
) -> Candidate:
    """Fit `model`'s candidate, judge it on the holdout, and record it (not champion: `promote` decides).
    `clauses`: the retrieval corpus's index, which the gateway scores with too (without it, `unraised_kinds`
    is missing on every row and carries no weight)."""
    rows = examples(warehouse, model, clauses)
    if len(rows) < bounds.min_labels:
        raise TooFewLabelsError(
            f"{model}: {len(rows)} labeled generations; the trust model needs at least {bounds.min_labels}"
        )
    fitted, metrics, train_rows, holdout = fit_judged(rows, bounds, model)
    incumbent = champion(warehouse, model)
    incumbent_metrics = evaluate(incumbent, holdout, train_rows) if incumbent else None
    metrics.update(
        train=len(train_rows),
        generations=len({e.generation_id for e in rows}),
        champion_auc_same_holdout=incumbent_metrics["auc"] if incumbent_metrics else None,
    )
    # The model carries its own figures, not the incumbent's: the same fit is the same version, one row.
    candidate = replace(fitted, metrics={k: v for k, v in metrics.items() if k != "champion_auc_same_holdout"})
    digest = store.put_bytes(candidate.to_bytes())
    path = str(store.blob_path(digest))
    with warehouse.write() as con:  # the same model trained twice is one row, and keeps its standing
        columns = ("version", "algorithm", "features", "metrics", "champion", "artifact_path", "model", "served_model")
        body = candidate.to_bytes().decode()
        algorithm = "logistic_regression+isotonic" if fitted.calibration else "logistic_regression"
        row = [digest, algorithm, json.dumps(fitted.features), json.dumps(metrics), False, path, body, model]
        insert_new(con, "trust_models", columns, "version", [row])
        con.execute("UPDATE trust_models SET metrics = ? WHERE version = ?", [json.dumps(metrics), digest])
    return Candidate(candidate, metrics, incumbent_metrics, checks(metrics, bounds), len(rows))


def fit_judged(
    rows: list[Example], bounds: Trust, model: str = "the model"
) -> tuple[TrustModel, dict[str, Any], list[Example], list[Example]]:
    """The model fitted on the training side of `rows` (oldest first), calibrated where that helps, with its
    review threshold, and its holdout figures; also the two sides. What `train` records; the miss-rate benchmark
    (benchmarks/trust_missrate.py) fits each seed's model with it too."""
    train_rows, holdout = split(rows)
    if len({e.correct for e in train_rows}) < 2:
        raise TooFewLabelsError(f"{model}: the training labels have only one class; label more generations")
    fitted = fit(train_rows)
    metrics = evaluate(fitted, holdout, train_rows)
    calibration = calibrate(train_rows)
    if calibration is not None:  # kept only where it measurably helps on labels it never saw
        mapped = evaluate(fitted.calibrated(calibration), holdout, train_rows)
        metrics["ece_uncalibrated"] = metrics["ece"]
        metrics["ece_isotonic"] = mapped["ece"]
        if mapped["ece"] < metrics["ece"]:
            fitted, metrics = fitted.calibrated(calibration), {**metrics, **_kept(mapped)}
    metrics["calibrated"] = fitted.calibration is not None
    # The review threshold, on the same holdout: labels the model never learned from (`trust.threshold`).
    review = choose([fitted.raw_score(e.features) for e in holdout], [e.correct for e in holdout], *bounds.review)
    fitted = replace(fitted, review_threshold=review.threshold)
    metrics["review"] = review.metrics()
    return fitted, metrics, train_rows, holdout


def _kept(mapped: dict[str, Any]) -> dict[str, Any]:
    """The holdout figures of the calibrated model (AUC can move a little: isotonic maps tie scores)."""
    return {k: mapped[k] for k in ("auc", "brier", "ece", "ece_by_chance")}
