"""Features of one generation, from what the gateway (or the canary) logged about it.

All numeric, all computable at serving time without a second model call:
lengths, repetition, PII, schema validity, latency, finish reason, mean token
log-probability when vLLM returned log-probabilities, the input's injection
score, and how many risk points the reply raised. A missing value is NaN (the
model imputes the training mean), never silently 0.
"""

from __future__ import annotations

import json
import math
from typing import Any

FEATURES = (
    "output_chars",
    "input_chars",
    "seq_rep_4",
    "pii_count",
    "schema_valid",
    "latency_s",
    "finish_stop",
    "mean_logprob",
    "min_logprob",
    "injection",
    "risk_points",
    "output_tokens",
)


def _risk_points(output: str) -> float:
    try:
        answer = json.loads(output)
    except ValueError:
        return math.nan
    points = answer.get("risk_points") if isinstance(answer, dict) else None
    return float(len(points)) if isinstance(points, list) else math.nan


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, int | float) else math.nan


def features(row: dict[str, Any]) -> dict[str, float]:
    """`row`: a generations row (input, output, metrics JSON, finish_reason, latency_s)."""
    metrics = row.get("metrics") or {}
    if isinstance(metrics, str):
        metrics = json.loads(metrics)
    output = row.get("output") or ""
    pii = metrics.get("pii")
    return {
        "output_chars": float(len(output)),
        "input_chars": float(len(row.get("input") or "")),
        "seq_rep_4": _number(metrics.get("seq_rep_4")),
        "pii_count": float(len(pii)) if isinstance(pii, list) else _number(metrics.get("pii_count")),
        "schema_valid": _number(metrics.get("schema_valid")),
        "latency_s": _number(row.get("latency_s")),
        "finish_stop": float(row.get("finish_reason") == "stop"),
        "mean_logprob": _number(metrics.get("mean_logprob")),
        "min_logprob": _number(metrics.get("min_logprob")),
        "injection": _number(metrics.get("injection")),
        "risk_points": _risk_points(output),
        "output_tokens": _number(metrics.get("output_tokens")),
    }
