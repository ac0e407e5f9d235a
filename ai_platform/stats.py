"""The statistics the canary's gates decide with, and the eval-set sizes they need (also the trust model's review
threshold's bound, trust/threshold.py: here, beside both, so neither package imports the other).

Every procedure answers the same question for a gate: can the data show the gate is met, at the gate's
confidence c? Each returns an `Estimate`: the point estimate, an interval whose ends are each a one-sided
bound at c (together a two-sided interval at 2c - 1: 90% at the default 0.95), and the one-sided p-value of
"the gate is not met". A gate passes when the bound on its side meets it.

- A pass/fail rate against a fixed bound: the exact binomial test and its Clopper-Pearson bounds
  (`scipy.stats.binomtest`).
- A count against a fixed bound: the exact Poisson bounds (chi-square quantiles) and test.
- A mean or a percentile against a fixed bound, and a paired difference of means, sums or percentiles: the
  percentile bootstrap over cases (`scipy.stats.bootstrap`, paired, seeded: the same data gives the same
  verdict). Approximate: at a few dozen cases it errs towards passing; the sizes below keep sets honest.
- A paired difference of pass/fail rates within a margin (non-inferiority): Tango's score test (Tango 1998,
  Statistics in Medicine 17:891), which holds its size on small sets where a bootstrap or the McNemar test
  conditioned on the observed discordant share do not; its bounds are the score interval. With a margin of 0
  the question is whether the challenger is better, and the exact McNemar test decides it (the binomial test
  on the discordant pairs).

Sizes: a paired non-inferiority test at confidence c and power 1 - beta, when the two models are truly alike,
needs n = ((z_c + z_(1-beta)) * sd / margin)^2 cases, sd the standard deviation of one case's difference. No
data exists before the canary, so the plan takes sd = sqrt(2 * 0.9 * 0.1) = 0.42: two [0, 1] metrics at 0.9
whose cases disagree as if independent (the variance of a [0, 1] metric with mean m is at most m(1 - m), and
positively correlated models disagree less). A 2-point margin then needs 2,783 cases, 5 points 446, 10 points
112. A rate that must reach `min` is passed by a flawless run of n cases only when (1 - c)^(1/n) >= min.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

POWER = 0.8  # what the sample sizes plan for
PLANNING_SD = math.sqrt(2 * 0.9 * 0.1)  # of one case's paired difference, for metrics in [0, 1]
RESAMPLES = 9999
SEED = 0  # every bootstrap draws the same resamples: a verdict is reproducible

Side = Literal["min", "max"]  # the gate wants the quantity at least / at most its bound


@dataclass(frozen=True)
class Estimate:
    value: float  # the point estimate
    low: float  # one-sided lower bound at the confidence
    high: float  # one-sided upper bound at the confidence
    p_value: float  # one-sided: of "the gate is not met"
    method: str

    def meets(self, side: Side, bound: float) -> bool:
        """Whether the bound on the gate's side meets it: the data shows the gate is met."""
        return self.low >= bound if side == "min" else self.high <= bound


def rate(successes: int, n: int, side: Side, bound: float, confidence: float) -> Estimate:
    """A pass/fail rate against a fixed bound: exact binomial test, Clopper-Pearson bounds."""
    from scipy import stats  # here, not at the top: importing scipy takes seconds, and few callers judge

    alternative = "greater" if side == "min" else "less"  # what passing the gate claims
    p = stats.binomtest(successes, n, min(max(bound, 0.0), 1.0), alternative=alternative).pvalue
    low, high = clopper_pearson(successes, n, confidence)
    return Estimate(successes / n, low, high, float(p), "exact binomial")


def clopper_pearson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """The one-sided Clopper-Pearson bounds at `confidence` on a rate: (lower, upper)."""
    from scipy import stats

    # Each end of the two-sided interval at 2c - 1 is the one-sided bound at c (the test's own inversion).
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=2 * confidence - 1, method="exact")
    return float(ci.low), float(ci.high)


def count(total: int, side: Side, bound: float, confidence: float) -> Estimate:
    """A count over the eval set against a fixed bound: exact Poisson bounds on its expected value."""
    from scipy import stats

    low = float(stats.chi2.ppf(1 - confidence, 2 * total) / 2) if total else 0.0
    high = float(stats.chi2.ppf(confidence, 2 * (total + 1)) / 2)
    if side == "max":  # not met: the expected count is at least `bound`; small totals say otherwise
        p = float(stats.poisson.cdf(total, bound)) if bound > 0 else 1.0
    else:
        p = float(stats.poisson.sf(total - 1, bound)) if bound > 0 else (0.0 if total else 1.0)
    return Estimate(float(total), low, high, p, "exact Poisson")


Statistic = Callable[..., Any]  # numpy arrays in, one figure per resample out (the `axis` keyword)


def bootstrap(
    samples: Sequence[Sequence[float]], statistic: Statistic, side: Side, bound: float, confidence: float
) -> Estimate:
    """The statistic of one sample, or of paired samples (a difference), against a bound: the percentile bootstrap
    over cases. The p-value is the share of resamples on the wrong side of the bound (add-one)."""
    from scipy import stats

    data = tuple(np.asarray(s, dtype=float) for s in samples)
    value = float(statistic(*data, axis=-1))
    result = stats.bootstrap(
        data,
        statistic,
        paired=len(data) > 1,
        vectorized=True,
        n_resamples=RESAMPLES,
        confidence_level=2 * confidence - 1,
        method="percentile",
        rng=np.random.default_rng(SEED),
    )
    draws = result.bootstrap_distribution
    wrong = np.count_nonzero(draws <= bound) if side == "min" else np.count_nonzero(draws >= bound)
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    method = "paired bootstrap" if len(data) > 1 else "bootstrap"
    return Estimate(value, low, high, (int(wrong) + 1) / (RESAMPLES + 1), method)


def _score(worse: int, better: int, n: int, delta: float) -> float:
    """Tango's score statistic for H0: P(better) - P(worse) = delta over n pairs (a case is `better` when only the
    challenger passed it, `worse` when only the champion did). Standard normal under H0; decreasing in delta."""
    a = 2.0 * n
    b = -better - worse + (2.0 * n - better + worse) * delta
    c = -worse * delta * (1.0 - delta)
    p_worse = (-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)  # the restricted MLE
    variance = n * (2.0 * p_worse + delta * (1.0 - delta))
    excess = better - worse - n * delta
    if variance <= 0.0:
        return 0.0 if excess == 0 else math.copysign(math.inf, excess)
    return excess / math.sqrt(variance)


def paired_rates(worse: int, better: int, n: int, margin: float, confidence: float) -> Estimate:
    """Non-inferiority of paired pass/fail outcomes: can the data show P(better) - P(worse) > -margin? Tango's
    score test and interval; with margin 0, the exact McNemar test. The estimate is (better - worse) / n."""
    from scipy import stats
    from scipy.optimize import brentq

    z = float(stats.norm.ppf(confidence))
    estimate = (better - worse) / n
    epsilon = 1e-12

    def bound(target: float, lo: float, hi: float, edge: float) -> float:
        if lo >= hi:
            return lo

        def f(delta: float) -> float:
            return _score(worse, better, n, delta) - target

        return float(brentq(f, lo, hi)) if f(lo) * f(hi) < 0 else edge

    low = bound(z, -1.0 + epsilon, estimate, -1.0)
    high = bound(-z, estimate, 1.0 - epsilon, 1.0)
    if margin == 0:  # superiority: the exact McNemar test on the discordant pairs
        p = float(stats.binomtest(better, worse + better, 0.5, alternative="greater").pvalue) if worse + better else 1.0
        return Estimate(estimate, low, high, p, "exact McNemar")
    p = float(stats.norm.sf(_score(worse, better, n, -margin)))
    return Estimate(estimate, low, high, p, "Tango score")


def cases_needed(margin: float, confidence: float, power: float = POWER, sd: float = PLANNING_SD) -> float:
    """Paired cases a non-inferiority margin needs when the two models are truly alike (math.inf for margin 0)."""
    from scipy import stats

    if margin <= 0:
        return math.inf
    z = stats.norm.ppf(confidence) + stats.norm.ppf(power)
    return float(math.ceil(round((z * sd / margin) ** 2, 9)))


def power(n: int, margin: float, confidence: float, sd: float = PLANNING_SD) -> float:
    """The chance that n paired cases show a margin when the two models are truly alike (the plan's spread)."""
    from scipy import stats

    if margin <= 0:
        return 1.0 - confidence
    return float(stats.norm.cdf(margin * math.sqrt(n) / sd - stats.norm.ppf(confidence)))


def tightest_margin(n: int, confidence: float, power: float = POWER, sd: float = PLANNING_SD) -> float:
    """The smallest non-inferiority margin n paired cases support (the inverse of `cases_needed`)."""
    from scipy import stats

    return float((stats.norm.ppf(confidence) + stats.norm.ppf(power)) * sd / math.sqrt(n))


def flawless_cases(side: Side, bound: float, confidence: float) -> float:
    """The fewest cases with which a flawless run (every case passing for `min`, none for `max`) meets a rate
    gate's bound: its Clopper-Pearson bound is (1 - c)^(1/n). math.inf when no number of cases can."""
    share = bound if side == "min" else 1.0 - bound
    if share >= 1.0:
        return math.inf
    if share <= 0.0:
        return 1.0
    return float(max(1, math.ceil(math.log(1 - confidence) / math.log(share))))
