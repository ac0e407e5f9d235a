"""The trust model as plain JSON: a standardized logistic regression, scored in pure Python.

Why not a pickle: a pickle runs code when loaded, and the gateway loads this on
every reload. Why logistic regression: it is explainable per feature and needs
no scikit-learn at serving time (scikit-learn fits it; this file scores it).
Its loss calibrates it only roughly; where an isotonic map fitted on the
training labels lowers the calibration error on the holdout, the model carries
that map (`calibration`: increasing knots, interpolated linearly as
scikit-learn's IsotonicRegression predicts).
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.errors import TrustModelFileError

# v2: the features of issue 35 (no latency; the reply against its input's clause kinds). A v1 model read
# latency_s, which no row carries any more: scored now, it would impute it and misread every reply.
FORMAT = "ai-platform.trust-model/v2"


@dataclass(frozen=True)
class TrustModel:
    features: list[str]
    mean: list[float]  # imputes missing values, then centers
    scale: list[float]
    coef: list[float]
    intercept: float
    metrics: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT
    calibration: list[list[float]] | None = None  # [knots x, values y]: raw probability -> calibrated
    # A reply whose raw score (before the calibration map) is under it is flagged needs_review: chosen on the
    # holdout for the spec's trust.review_budget (`trust.threshold`). On the raw score because the isotonic map
    # ties replies on plateaus (the lowest often holds a fifth of them), which no cut on the mapped score could
    # split; the raw score orders them and the map is monotone, so it is the same ranking, refined.
    # None: a model from before it was chosen; platform.yaml's feedback.trust_threshold on the trust score.
    review_threshold: float | None = None

    def score(self, values: dict[str, float]) -> float:
        return self.judge(values, 0.0)[0]

    def judge(self, values: dict[str, float], fallback: float) -> tuple[float, bool]:
        """The trust score, and whether the reply needs review: its raw score under the model's review threshold,
        or, for a model without one, its trust score under `fallback` (platform.yaml's)."""
        raw = self.raw_score(values)
        trust = raw if self.calibration is None else interpolate(raw, *self.calibration)
        return trust, (trust < fallback if self.review_threshold is None else raw < self.review_threshold)

    def raw_score(self, values: dict[str, float]) -> float:
        """The logistic regression's probability, before any calibration map."""
        z = self.intercept
        for name, mean, scale, coef in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            value = values.get(name, math.nan)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                value = mean
            z += coef * (value - mean) / scale
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_bytes(self) -> bytes:
        # A model without a map or a threshold keeps the bytes, so the version, it had before either existed.
        optional = ("calibration", "review_threshold")
        return canonical_json({k: v for k, v in asdict(self).items() if k not in optional or v is not None})

    def calibrated(self, calibration: list[list[float]] | None) -> TrustModel:
        return replace(self, calibration=calibration)

    @property
    def version(self) -> str:
        return sha256_hex(self.to_bytes())

    @classmethod
    def load(cls, path: Path) -> TrustModel:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise TrustModelFileError(f"{path}: cannot read the trust model: {exc}") from None
        return cls.from_bytes(data, str(path))

    @classmethod
    def from_bytes(cls, data: bytes | str, where: str) -> TrustModel:
        try:
            fields = json.loads(data)
        except ValueError as exc:
            raise TrustModelFileError(f"{where}: cannot read the trust model: {exc}") from None
        older = fields.get("format", "") if isinstance(fields, dict) else ""
        if isinstance(older, str) and older.startswith("ai-platform.trust-model/") and older != FORMAT:
            raise TrustModelFileError(
                f"{where}: a trust model of an older feature set ({older}, this is {FORMAT}); it is not scored"
                " with features it was not trained on: retrain it (materialize trust_model)"
            )
        if not isinstance(fields, dict) or fields.get("format") != FORMAT:
            raise TrustModelFileError(f"{where}: not a trust model (format must be {FORMAT!r})")
        try:
            model = cls(**fields)
        except TypeError as exc:
            raise TrustModelFileError(f"{where}: malformed trust model: {exc}") from None
        knots = model.calibration
        if knots is not None and not (
            isinstance(knots, list)
            and len(knots) == 2
            and all(isinstance(k, list) and all(isinstance(v, int | float) for v in k) for k in knots)
            and len(knots[0]) == len(knots[1]) >= 2
            and all(a <= b for a, b in zip(knots[0], knots[0][1:], strict=False))
        ):
            raise TrustModelFileError(f"{where}: malformed calibration (two equal lists of knots, x increasing)")
        cut = model.review_threshold
        if cut is not None and not (isinstance(cut, int | float) and not isinstance(cut, bool) and 0 <= cut <= 1.01):
            raise TrustModelFileError(f"{where}: malformed review_threshold (a number from 0 to 1): {cut!r}")
        return model

    @classmethod
    def from_row(cls, model: str | None, artifact_path: str) -> TrustModel:
        """A trust_models row's model: the JSON it carries, or (rows before migration 0009) its file."""
        return cls.from_bytes(model, "trust_models.model") if model else cls.load(Path(artifact_path))


def interpolate(value: float, xs: list[float], ys: list[float]) -> float:
    """Piecewise-linear through the knots, flat outside them (numpy.interp; what IsotonicRegression predicts
    with out_of_bounds='clip')."""
    if value <= xs[0]:
        return ys[0]
    if value >= xs[-1]:
        return ys[-1]
    hi = bisect.bisect_right(xs, value)
    x0, x1, y0, y1 = xs[hi - 1], xs[hi], ys[hi - 1], ys[hi]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (value - x0) / (x1 - x0)
