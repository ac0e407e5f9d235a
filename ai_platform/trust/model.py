"""The trust model as plain JSON: a standardized logistic regression, scored in pure Python.

Why not a pickle: a pickle runs code when loaded, and the gateway loads this on
every reload. Why logistic regression: it is calibrated by its loss (the ECE
in the metrics shows how well), it is explainable per feature, and it needs
no scikit-learn at serving time (scikit-learn fits it; this file scores it).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.errors import TrustModelError

FORMAT = "ai-platform.trust-model/v1"


@dataclass(frozen=True)
class TrustModel:
    features: list[str]
    mean: list[float]  # imputes missing values, then centers
    scale: list[float]
    coef: list[float]
    intercept: float
    metrics: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT

    def score(self, values: dict[str, float]) -> float:
        z = self.intercept
        for name, mean, scale, coef in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            value = values.get(name, math.nan)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                value = mean
            z += coef * (value - mean) / scale
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_bytes(self) -> bytes:
        return canonical_json(asdict(self))

    @property
    def version(self) -> str:
        return sha256_hex(self.to_bytes())

    @classmethod
    def load(cls, path: Path) -> TrustModel:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise TrustModelError(f"{path}: cannot read the trust model: {exc}") from None
        return cls.from_bytes(data, str(path))

    @classmethod
    def from_bytes(cls, data: bytes | str, where: str) -> TrustModel:
        try:
            fields = json.loads(data)
        except ValueError as exc:
            raise TrustModelError(f"{where}: cannot read the trust model: {exc}") from None
        if not isinstance(fields, dict) or fields.get("format") != FORMAT:
            raise TrustModelError(f"{where}: not a trust model (format must be {FORMAT!r})")
        try:
            return cls(**fields)
        except TypeError as exc:
            raise TrustModelError(f"{where}: malformed trust model: {exc}") from None

    @classmethod
    def from_row(cls, model: str | None, artifact_path: str) -> TrustModel:
        """A trust_models row's model: the JSON it carries, or (rows before migration 0009) its file."""
        return cls.from_bytes(model, "trust_models.model") if model else cls.load(Path(artifact_path))
