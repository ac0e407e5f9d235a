"""Canary gates: each spec gate decided on the per-case results, absolutely or paired with the champion's.

    {metric: schema_valid_rate, min: 0.9}               the lower bound on the rate >= 0.9
    {metric: pii_count, max: 0}                         zero tolerance: no case leaks (the bound is reported)
    {metric: task_recall, max_drop: 0.25}               the lower bound on challenger - champion > -0.25
    {metric: latency_p95_s, max_rise: 0.5}              the upper bound on challenger - champion < 0.5
    {metric: task_recall, max_drop: 0.05, confidence: 0.99}

Each bound is one-sided at the gate's `confidence` (default 0.95): a gate passes only when the data shows it is
met, never on a point estimate alone. Relative gates pair the two sides case by case (the same eval cases):
pass/fail metrics by Tango's score test (the exact McNemar test at margin 0), the rest by a paired bootstrap;
absolute gates use exact binomial or Poisson bounds, or a bootstrap (ai_platform/stats.py says which and why).
A zero-tolerance gate (a rate `min: 1` or `max: 0`, a count `max: 0`) no finite set can show by a bound, so it
passes only when no case fails it, and its row reports the bound the set does show (on 8 attacks none obeyed
bounds the obey rate at 0.31): a model that never fails passes, and one failure blocks, on a set of any size.
A relative gate with no champion (nothing deployed yet) passes and says so. A metric that could not be
measured fails its gate. `sizing` says, before any run, what an eval set of a given size can show.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from ai_platform import stats
from ai_platform.config import Gate
from ai_platform.errors import GateError
from ai_platform.evaluation.scoring import MEASURES, METRICS, CaseScore, Measure, per_case, summarize


@dataclass(frozen=True)
class Verdict:
    metric: str
    passed: bool
    detail: str
    gate: str = ""  # as the spec writes it: "task_recall max_drop 0.25"
    challenger: float | None = None  # the metric on each side
    champion: float | None = None
    estimate: stats.Estimate | None = None  # of the metric (absolute) or of challenger - champion (relative)


def label(gate: Gate) -> str:
    kind = next(k for k in ("min", "max", "max_drop", "max_rise") if getattr(gate, k) is not None)
    return f"{gate.metric} {kind} {getattr(gate, kind):g}"


def _statistic(measure: Measure) -> Callable[..., Any]:
    if measure.kind == "count":
        return np.sum
    if measure.kind == "quantile":
        return partial(np.percentile, q=measure.q, method="inverted_cdf")  # nearest rank, as `percentile`
    return np.mean


def _difference(measure: Measure) -> Callable[..., Any]:
    of = _statistic(measure)
    return lambda a, b, axis: of(a, axis=axis) - of(b, axis=axis)


def _bounds(e: stats.Estimate) -> str:
    return f"[{e.low:.4g}, {e.high:.4g}], p = {e.p_value:.2g}"


def zero_tolerance(measure: Measure, side: stats.Side, bound: float) -> bool:
    """A gate no case may fail: a rate `min: 1` or `max: 0`, a count `max: 0`. No finite set's bound reaches it."""
    if measure.kind == "rate":
        return bound >= 1.0 if side == "min" else bound <= 0.0
    return measure.kind == "count" and side == "max" and bound <= 0.0


def _absolute(gate: Gate, measure: Measure, mine: list[float]) -> tuple[bool, str, stats.Estimate | None]:
    side: stats.Side = "min" if gate.min is not None else "max"
    bound = gate.min if gate.min is not None else gate.max
    assert bound is not None
    c = gate.confidence
    if measure.kind == "rate":
        e = stats.rate(round(sum(mine)), len(mine), side, bound, c)
    elif measure.kind == "count":
        e = stats.count(round(sum(mine)), side, bound, c)
    elif len(mine) < 2:
        return False, f"{len(mine)} case: too few to bound", None
    else:
        e = stats.bootstrap([mine], _statistic(measure), side, bound, c)
    which = "lower" if side == "min" else "upper"
    shown = e.low if side == "min" else e.high
    if zero_tolerance(measure, side, bound):
        # decided on the cases themselves; the bound says what this set shows of the rate (or expected count)
        failed = len(mine) - round(sum(mine)) if side == "min" else sum(1 for v in mine if v > 0)
        e = replace(e, method=f"zero tolerance; {e.method}")
        shows = f"the {c:.0%} {which} bound {shown:.4g} is what {len(mine)} cases show"
        return failed == 0, f"zero tolerance, {failed} of {len(mine)} cases failed ({shows}; {_bounds(e)})", e
    return e.meets(side, bound), f"{which} bound {shown:.4g} ({side} {bound:g}; {c:.0%} {_bounds(e)})", e


def _relative(
    gate: Gate, measure: Measure, mine: dict[str, float], theirs: dict[str, float]
) -> tuple[bool, str, stats.Estimate | None]:
    """Challenger - champion on the cases both measured: shown within the margin, one-sided at the confidence."""
    drop = gate.max_drop is not None
    margin = gate.max_drop if drop else gate.max_rise
    assert margin is not None
    sign = 1.0 if drop else -1.0  # oriented so that a fall of `margin` is what must be ruled out
    pairs = [k for k in mine if k in theirs]
    c, words = gate.confidence, f"max {'drop' if drop else 'rise'} {margin:g}"
    if not pairs:
        return False, "no case measured on both sides: nothing to pair", None
    if measure.kind == "rate":
        worse = sum(1 for k in pairs if sign * (mine[k] - theirs[k]) < 0)
        better = sum(1 for k in pairs if sign * (mine[k] - theirs[k]) > 0)
        oriented = stats.paired_rates(worse, better, len(pairs), margin, c)
    elif len(pairs) < 2:
        return False, f"{len(pairs)} paired case: too few to bound", None
    else:
        a, b = [mine[k] for k in pairs], [theirs[k] for k in pairs]
        oriented = stats.bootstrap([a, b] if drop else [b, a], _difference(measure), "min", -margin, c)
    flipped = replace(oriented, value=0.0 - oriented.value, low=0.0 - oriented.high, high=0.0 - oriented.low)
    e = oriented if drop else flipped  # as challenger - champion
    shown = e.low if drop else e.high
    # margin 0 asks for a better challenger: the exact McNemar test decides; else the bound, within the margin
    passed = oriented.p_value < 1 - c if oriented.method == "exact McNemar" else oriented.low > -margin
    return (
        passed,
        f"change {e.value:+.4g} over {len(pairs)} paired cases, {'lower' if drop else 'upper'} bound {shown:+.4g}"
        f" ({words}; {e.method}, {c:.0%} {_bounds(e)})",
        e,
    )


def _judge(gate: Gate, candidate: list[CaseScore], champion: list[CaseScore] | None) -> Verdict:
    name, measure = gate.metric, MEASURES[gate.metric]
    mine = per_case(candidate, name)
    values = list(mine.values())
    value = summarize(name, values)
    theirs = per_case(champion, name) if champion is not None else {}
    other = summarize(name, list(theirs.values())) if theirs else None  # shown beside the challenger's
    if not values or math.isnan(value):
        return Verdict(name, False, f"{name} could not be measured", label(gate), None, other)
    if gate.min is not None or gate.max is not None:
        passed, how, e = _absolute(gate, measure, values)
        return Verdict(name, passed, f"{name} {value:.4g}: {how}", label(gate), value, other, e)
    if other is None:
        alone = f"{name} {value:.4g}: no champion to compare with, relative gate not applied"
        return Verdict(name, True, alone, label(gate), value)
    passed, how, e = _relative(gate, measure, mine, theirs)
    return Verdict(name, passed, f"{name} {value:.4g} vs champion {other:.4g}: {how}", label(gate), value, other, e)


def judge(gates: list[Gate], candidate: list[CaseScore], champion: list[CaseScore] | None) -> list[Verdict]:
    """Every gate on the challenger's per-case scores, relative ones paired with the champion's (if any)."""
    check_metrics(gates)
    return [_judge(g, candidate, champion) for g in gates]


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
    """One verdict per metric (a metric gated twice passes only if both pass): the names a failure reports."""
    merged: dict[str, Verdict] = {}
    for v in verdicts:
        if v.metric in merged:
            prior = merged[v.metric]
            v = Verdict(v.metric, prior.passed and v.passed, f"{prior.detail}; {v.detail}")
        merged[v.metric] = v
    return merged


CASES = {"all": "cases", "ordinary": "ordinary cases", "attack": "attack cases"}


@dataclass(frozen=True)
class Sizing:
    problem: str | None  # the gate cannot pass on this set, whatever the model does
    note: str  # what the set can show, and what a tighter gate would need


def sizing(gate: Gate, n: int) -> Sizing:
    """What an eval set whose gate counts `n` cases can show for `gate`, before any run (stats.py's plan)."""
    measure, c = MEASURES[gate.metric], gate.confidence
    cases = CASES[measure.cases]
    at = f"at {c:.0%} confidence"
    if gate.max_drop is not None or gate.max_rise is not None:
        margin = gate.max_drop if gate.max_drop is not None else gate.max_rise
        assert margin is not None
        if not measure.unit_range:
            return Sizing(None, f"{n} {cases}; not sized before a run (no planning spread for a {measure.kind})")
        needed = stats.cases_needed(margin, c)
        tighter = [m for m in (0.1, 0.05, 0.02) if m < margin]
        then = ", ".join(f"{m:g} would need {stats.cases_needed(m, c):,.0f}" for m in tighter)
        plan = f"{at} and {stats.POWER:.0%} power"
        if math.isinf(needed):
            return Sizing(
                None,
                f"too few cases: a margin of 0 asks the challenger to be shown better, which no number of cases shows"
                f" for a challenger as good as the champion; {n} {cases} support a margin of"
                f" {stats.tightest_margin(n, c):.2g} {plan}",
            )
        if needed > n:
            chance = stats.power(n, margin, c)
            return Sizing(
                None,
                f"too few cases: a margin of {margin:g} needs {needed:,.0f} paired {cases} {plan}; the set has {n},"
                f" on which a challenger as good as the champion passes {chance:.0%} of the time. {n} {cases}"
                f" support a margin of {stats.tightest_margin(n, c):.2g}",
            )
        tighter_note = f" (a margin of {then})" if then else ""
        return Sizing(None, f"needs {needed:,.0f} paired {cases} {plan}; the set has {n}{tighter_note}")
    side: stats.Side = "min" if gate.min is not None else "max"
    bound = gate.min if gate.min is not None else gate.max
    assert bound is not None
    if zero_tolerance(measure, side, bound):
        if measure.kind == "rate":
            best = stats.rate(n if side == "min" else 0, n, side, bound, c)
            edge = f">= {best.low:.3g}" if side == "min" else f"<= {best.high:.3g}"
            shows = f"a flawless run shows the rate {edge}"
        else:
            shows = f"a run with none shows the expected count <= {stats.count(0, side, bound, c).high:.3g}"
        return Sizing(None, f"{n} {cases}: zero tolerance, passes only when no case fails; {shows} {at}")
    if measure.kind == "rate":
        flawless = stats.flawless_cases(side, bound, c)
        perfect = f"a flawless run (rate {1 if side == 'min' else 0})"
        if flawless > n:
            best = stats.rate(n if side == "min" else 0, n, side, bound, c)
            fewest = "no number of cases reaches it" if math.isinf(flawless) else f"it needs {flawless:,.0f} {cases}"
            return Sizing(
                f"{side} {bound:g} cannot pass on {n} {cases}: {perfect} has the {c:.0%} bound"
                f" {best.low if side == 'min' else best.high:.3g}; {fewest}",
                "",
            )
        return Sizing(None, f"{n} {cases}: {perfect} meets the {c:.0%} bound from {flawless:,.0f} cases")
    if measure.kind == "count" and side == "max":
        best = stats.count(0, side, bound, c)
        if not best.meets(side, bound):
            return Sizing(
                f"max {bound:g} cannot pass: a run with none has a {c:.0%} upper bound of {best.high:.3g} on the"
                f" expected count, whatever the set's size",
                "",
            )
        return Sizing(None, f"a run with none has the {c:.0%} upper bound {best.high:.3g} on the expected count")
    return Sizing(None, f"{n} {cases}; bounded by a bootstrap at the canary")
