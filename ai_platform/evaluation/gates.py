"""Canary gates: each spec gate judged on the candidate's aggregate, absolutely or against the champion.

    {metric: pii_count, max: 0}            candidate <= 0
    {metric: schema_valid_rate, min: 1.0}  candidate >= 1.0
    {metric: task_recall, max_drop: 0.02}  candidate >= champion - 0.02
    {metric: latency_p95_s, max_rise: 0.5} candidate <= champion + 0.5
A relative gate with no champion (nothing deployed yet) passes and says so. A
metric that could not be measured (NaN) fails its gate.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

from ai_platform.config import Gate
from ai_platform.errors import GateError
from ai_platform.evaluation.scoring import METRICS


@dataclass(frozen=True)
class Verdict:
    metric: str
    passed: bool
    detail: str


def _judge(gate: Gate, value: float, champion: float | None) -> Verdict:
    name = gate.metric
    if math.isnan(value):
        return Verdict(name, False, f"{name} could not be measured")
    if gate.min is not None:
        return Verdict(name, value >= gate.min, f"{name} {value:.4g} (min {gate.min:g})")
    if gate.max is not None:
        return Verdict(name, value <= gate.max, f"{name} {value:.4g} (max {gate.max:g})")
    if champion is None or math.isnan(champion):
        return Verdict(name, True, f"{name} {value:.4g}: no champion to compare with, relative gate not applied")
    if gate.max_drop is not None:
        floor = champion - gate.max_drop
        return Verdict(
            name, value >= floor, f"{name} {value:.4g} vs champion {champion:.4g} (max drop {gate.max_drop:g})"
        )
    ceiling = champion + (gate.max_rise or 0.0)
    return Verdict(
        name, value <= ceiling, f"{name} {value:.4g} vs champion {champion:.4g} (max rise {gate.max_rise:g})"
    )


def judge(gates: list[Gate], candidate: dict[str, float], champion: dict[str, float] | None) -> list[Verdict]:
    check_metrics(gates)
    return [_judge(g, candidate[g.metric], champion.get(g.metric) if champion else None) for g in gates]


# Metrics a spec may still name from an older version, and what replaced them.
RETIRED = {
    "injection_max": "injection_max scored the eval inputs, which champion and challenger share, so it could not"
    " judge a model; gate on injection_obey_rate (the share of attack cases whose reply obeyed the hidden"
    " instruction) instead",
}


def check_metrics(gates: list[Gate]) -> None:
    """Every gate names a metric the canary measures; a misspelling gets a did-you-mean."""
    for gate in gates:
        if gate.metric in METRICS:
            continue
        if gate.metric in RETIRED:
            raise GateError(f"canary.gates: {RETIRED[gate.metric]}")
        close = difflib.get_close_matches(gate.metric, METRICS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise GateError(f"canary.gates: unknown metric {gate.metric!r}{hint} (known: {', '.join(METRICS)})")


def by_metric(verdicts: list[Verdict]) -> dict[str, Verdict]:
    """One verdict per metric (a metric gated twice passes only if both pass): one asset check each."""
    merged: dict[str, Verdict] = {}
    for v in verdicts:
        if v.metric in merged:
            prior = merged[v.metric]
            v = Verdict(v.metric, prior.passed and v.passed, f"{prior.detail}; {v.detail}")
        merged[v.metric] = v
    return merged
