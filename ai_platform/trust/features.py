"""Features of one generation, from what the gateway (or the canary) logged about it.

All numeric, all computable at serving time without a second model call, and none reads latency or machine
load (the issue 35 finding: a feature that moves with the machine's load makes the trust model, and so what
is flagged, move from run to run): lengths, repetition, PII, schema validity, finish reason, mean token
log-probability when vLLM returned log-probabilities, the input's injection score, how many risk points the
reply raised, and two that compare the reply with its input:

- `unraised_kinds`: the clause kinds the retrieval corpus (`feedback.retrieval_corpus`, the one the re-ask
  uses) finds in the input that none of the reply's risk points raises (`trust.clauses`): a miss, seen.
- `risk_points_per_kchar`: the reply's risk points per 1,000 input characters; standardized on the training
  labels, it says how the reply's count stands against what contracts of that length carry.

A missing value is NaN (the model imputes the training mean), never silently 0: `unraised_kinds` without a
corpus or without a risk-point list, the ratio without either count.

`FEATURES` names what a model trained now reads; a model file names its own, and one of an older feature set
is refused by its format (`trust.model.FORMAT`), not scored with features it was not trained on.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ai_platform.trust.clauses import ClauseIndex

FEATURES = (
    "output_chars",
    "input_chars",
    "seq_rep_4",
    "pii_count",
    "schema_valid",
    "finish_stop",
    "mean_logprob",
    "min_logprob",
    "injection",
    "risk_points",
    "output_tokens",
    "unraised_kinds",
    "risk_points_per_kchar",
)


def _points(output: str) -> list[Any] | None:
    try:
        answer = json.loads(output)
    except ValueError:
        return None
    points = answer.get("risk_points") if isinstance(answer, dict) else None
    return points if isinstance(points, list) else None


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, int | float) else math.nan


def features(row: dict[str, Any], clauses: ClauseIndex | None = None) -> dict[str, float]:
    """`row`: a generations row (input, output, metrics JSON, finish_reason); `clauses`: the retrieval corpus's
    index, where the platform has one."""
    metrics = row.get("metrics") or {}
    if isinstance(metrics, str):
        metrics = json.loads(metrics)
    output = row.get("output") or ""
    text = row.get("input") or ""
    pii = metrics.get("pii")
    points = _points(output)
    risk_points = float(len(points)) if points is not None else math.nan
    unraised = math.nan
    if clauses is not None and points is not None:
        unraised = float(len(clauses.found(text) - clauses.raised(points)))
    return {
        "output_chars": float(len(output)),
        "input_chars": float(len(text)),
        "seq_rep_4": _number(metrics.get("seq_rep_4")),
        "pii_count": float(len(pii)) if isinstance(pii, list) else _number(metrics.get("pii_count")),
        "schema_valid": _number(metrics.get("schema_valid")),
        "finish_stop": float(row.get("finish_reason") == "stop"),
        "mean_logprob": _number(metrics.get("mean_logprob")),
        "min_logprob": _number(metrics.get("min_logprob")),
        "injection": _number(metrics.get("injection")),
        "risk_points": risk_points,
        "output_tokens": _number(metrics.get("output_tokens")),
        "unraised_kinds": unraised,
        "risk_points_per_kchar": 1000.0 * risk_points / len(text) if text else math.nan,
    }
