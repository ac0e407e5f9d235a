"""The canary gates' statistics (ai_platform/stats.py, evaluation/gates.py): each procedure against SciPy or a
case worked by hand, gates on simulated paired outcomes of a known effect, the sample sizes, and the demo spec's
gates on runs shaped like the trained demo model's measured figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from scipy import stats as sp
from scipy.optimize import minimize_scalar

from ai_platform import stats
from ai_platform.config import Gate
from ai_platform.demo.repo import CLASSIFIER_YAML, MODEL_YAML
from ai_platform.evaluation.gates import Sizing, by_metric, judge, sizing
from ai_platform.evaluation.report import gate_table
from ai_platform.evaluation.scoring import MEASURES, METRICS, CaseScore, aggregate, per_case, summarize


def case(
    case_id: str,
    recall: float = 1.0,
    *,
    valid: bool = True,
    obeyed: bool | None = None,
    coherence: float = 0.4,
    pii: int = 0,
    latency: float = 0.2,
) -> CaseScore:
    return CaseScore(
        case_id, valid, "stop" if valid else "length", 0.0, coherence, ["email"] * pii, 0.0, obeyed, recall,
        latency, latency / 4, 40, -0.1, -2.0, 1, None,
    )  # fmt: skip


# --- each procedure against SciPy, or by hand ---


def test_exact_mcnemar_is_the_binomial_test_on_the_discordant_pairs() -> None:
    """Margin 0 asks whether the challenger is better: the exact McNemar test, one-sided."""
    for worse, better in [(1, 5), (3, 9), (0, 4), (7, 2)]:
        e = stats.paired_rates(worse, better, 40, 0.0, 0.95)
        reference = sp.binomtest(better, worse + better, 0.5, alternative="greater").pvalue
        assert e.method == "exact McNemar" and e.p_value == pytest.approx(reference, rel=1e-12)
    # by hand: 6 discordant pairs, 5 the challenger's way: P(X >= 5 | 6, 1/2) = (6 + 1) / 64
    assert stats.paired_rates(1, 5, 40, 0.0, 0.95).p_value == pytest.approx(7 / 64)
    assert stats.paired_rates(0, 0, 40, 0.0, 0.95).p_value == 1.0  # alike on every case: not shown better


def _score_by_numeric_mle(worse: int, better: int, n: int, delta: float) -> float:
    """Tango's statistic with the restricted maximum likelihood found numerically (the module uses the closed form)."""

    def nll(p_worse: float) -> float:
        p_better, p_same = p_worse + delta, 1 - 2 * p_worse - delta
        if min(p_worse, p_better, p_same) <= 0:
            return 1e18
        return -(worse * math.log(p_worse) + better * math.log(p_better) + (n - worse - better) * math.log(p_same))

    p = minimize_scalar(nll, bounds=(max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12), method="bounded").x
    return (better - worse - n * delta) / math.sqrt(n * (2 * p + delta * (1 - delta)))


def test_tango_score_against_a_numeric_mle_and_by_hand() -> None:
    for worse, better, n, delta in [(3, 1, 24, -0.1), (5, 2, 40, -0.05), (0, 4, 30, 0.05), (6, 6, 100, -0.02)]:
        assert stats._score(worse, better, n, delta) == pytest.approx(
            _score_by_numeric_mle(worse, better, n, delta), abs=1e-5
        )
    # delta 0: McNemar's statistic (better - worse) / sqrt(better + worse)
    assert stats._score(2, 7, 50, 0.0) == pytest.approx(5 / 3)
    # by hand: 8 pairs alike, margin 0.4: the restricted MLE of P(worse) is the margin, z = sqrt(n d / (1 - d))
    e = stats.paired_rates(0, 0, 8, 0.4, 0.95)
    assert e.method == "Tango score" and e.p_value == pytest.approx(sp.norm.sf(math.sqrt(8 * 0.4 / 0.6)))
    assert e.low < -0.2 and e.high > 0.2 and e.value == 0.0  # 8 pairs alike still leave a wide interval
    # the interval's lower end is where the test stops rejecting: it decides exactly as the p-value does
    for margin in (0.1, 0.15, 0.2, 0.3):
        e = stats.paired_rates(2, 1, 30, margin, 0.95)
        assert (e.low > -margin) == (e.p_value < 0.05)


def test_clopper_pearson_and_poisson_bounds_by_hand() -> None:
    all_valid = stats.rate(32, 32, "min", 0.9, 0.95)
    assert all_valid.low == pytest.approx(0.05 ** (1 / 32)) and all_valid.high == 1.0  # 0.9106
    assert all_valid.p_value == pytest.approx(0.9**32)  # P(32 of 32 | p = 0.9)
    assert all_valid.meets("min", 0.9) and not stats.rate(31, 32, "min", 0.9, 0.95).meets("min", 0.9)
    none_obeyed = stats.rate(0, 8, "max", 0.35, 0.95)
    assert none_obeyed.high == pytest.approx(1 - 0.05 ** (1 / 8)) and none_obeyed.meets("max", 0.35)  # 0.312
    reference = sp.binomtest(5, 20).proportion_ci(confidence_level=0.9, method="exact")
    five = stats.rate(5, 20, "min", 0.1, 0.95)
    assert (five.low, five.high) == pytest.approx((reference.low, reference.high))
    assert five.p_value == pytest.approx(sp.binomtest(5, 20, 0.1, alternative="greater").pvalue)
    none = stats.count(0, "max", 3, 0.95)
    assert none.high == pytest.approx(-math.log(0.05)) and none.p_value == pytest.approx(math.exp(-3))  # 2.996
    assert none.meets("max", 3) and not stats.count(1, "max", 3, 0.95).meets("max", 3)


def test_bootstrap_against_scipy_and_the_t_interval() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(0.7, 0.2, 400)
    e = stats.bootstrap([x], np.mean, "min", 0.6, 0.95)
    seeded = np.random.default_rng(stats.SEED)
    direct = sp.bootstrap(
        (x,), np.mean, n_resamples=stats.RESAMPLES, confidence_level=0.9, method="percentile", rng=seeded
    ).confidence_interval
    assert (e.low, e.high) == (direct.low, direct.high)  # SciPy's, seeded: the same data, the same verdict
    t = sp.ttest_1samp(x, 0.6, alternative="greater")
    ci = sp.ttest_1samp(x, 0.0).confidence_interval(confidence_level=0.9)
    assert e.low == pytest.approx(ci.low, abs=0.005) and e.high == pytest.approx(ci.high, abs=0.005)
    assert e.p_value < 0.001 and t.pvalue < 0.001
    # paired: the difference of means against the paired t interval and the Wilcoxon test's verdict
    y = x - 0.03 + rng.normal(0, 0.05, 400)
    diff = stats.bootstrap([y, x], lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis), "min", -0.05, 0.95)
    paired = sp.ttest_rel(y, x).confidence_interval(confidence_level=0.9)
    assert diff.low == pytest.approx(paired.low, abs=0.003) and diff.high == pytest.approx(paired.high, abs=0.003)
    assert diff.low > -0.05 and sp.wilcoxon(y - x + 0.05, alternative="greater").pvalue < 0.05
    assert stats.bootstrap([[1.0] * 24], np.mean, "min", 0.8, 0.95).low == 1.0  # constant data: no spread


# --- sample sizes ---


def test_cases_needed_by_the_formula_worked_by_hand() -> None:
    # ((z_0.95 + z_0.80) * sd / margin)^2 with sd^2 = 2 * 0.9 * 0.1 = 0.18: (1.6449 + 0.8416)^2 * 0.18 = 1.1129
    assert sp.norm.ppf(0.95) + sp.norm.ppf(0.8) == pytest.approx(1.6448536 + 0.8416212)
    for margin, needed in [(0.02, 2783), (0.05, 446), (0.1, 112), (0.25, 18), (0.4, 7)]:
        assert stats.cases_needed(margin, 0.95) == needed == math.ceil(2.4864748**2 * 0.18 / margin**2)
    assert stats.cases_needed(0.0, 0.95) == math.inf
    assert stats.tightest_margin(24, 0.95) == pytest.approx(0.2153, abs=1e-4)
    assert stats.power(2783, 0.02, 0.95) == pytest.approx(0.8, abs=0.002)
    # a flawless run's Clopper-Pearson bound is (1 - c)^(1/n): n >= ln(0.05) / ln(0.9) = 28.4
    assert stats.flawless_cases("min", 0.9, 0.95) == 29 and stats.flawless_cases("max", 0.35, 0.95) == 7
    assert stats.flawless_cases("min", 1.0, 0.95) == math.inf


def test_the_sample_size_warning() -> None:
    short = sizing(Gate(metric="task_recall", max_drop=0.02), 24)
    assert short.problem is None and short.note == (
        "too few cases: a margin of 0.02 needs 2,783 paired ordinary cases at 95% confidence and 80% power; the set"
        " has 24, on which a challenger as good as the champion passes 8% of the time. 24 ordinary cases support a"
        " margin of 0.22"
    )
    fits = sizing(Gate(metric="task_recall", max_drop=0.25), 24).note
    assert fits == (
        "needs 18 paired ordinary cases at 95% confidence and 80% power; the set has 24 (a margin of 0.1 would need"
        " 112, 0.05 would need 446, 0.02 would need 2,783)"
    )
    zero = sizing(Gate(metric="injection_obey_rate", max_rise=0.0), 8).note
    assert zero.startswith("too few cases: a margin of 0 asks the challenger to be shown better")
    assert sizing(Gate(metric="schema_valid_rate", min=0.95), 32).problem == (
        "min 0.95 cannot pass on 32 cases: a flawless run (rate 1) has the 95% bound 0.911; it needs 59 cases"
    )
    assert "cannot pass" in (sizing(Gate(metric="pii_count", max=2), 32).problem or "")
    # zero tolerance is no problem: it passes when no case fails, and the note says what the set shows
    assert sizing(Gate(metric="schema_valid_rate", min=1.0), 32) == Sizing(
        None,
        "32 cases: zero tolerance, passes only when no case fails; a flawless run shows the rate >= 0.911 at 95%"
        " confidence",
    )
    assert sizing(Gate(metric="injection_obey_rate", max=0.0), 8).note.endswith(
        "shows the rate <= 0.312 at 95% confidence"
    )
    assert sizing(Gate(metric="pii_count", max=0), 32).note.endswith(
        "a run with none shows the expected count <= 3 at 95% confidence"
    )
    assert sizing(Gate(metric="latency_p95_s", max_rise=0.5), 32).note.endswith("no planning spread for a quantile)")


# --- gates on simulated paired outcomes of a known effect ---


def paired_pass_fail(n: int, champion: float, drop: float, redraw: float, seed: int) -> tuple[list, list]:
    """Champion and challenger pass/fail on the same n cases: the challenger's outcome is redrawn at the same pass
    rate on a `redraw` share of the cases (disagreements both ways, no change on average: noise), then fails a
    further `drop` share of the cases (a real drop of that size)."""
    rng = np.random.default_rng(seed)
    theirs = rng.random(n) < champion
    mine = np.where(rng.random(n) < redraw, rng.random(n) < champion, theirs)
    mine &= ~(rng.random(n) < drop / champion)
    as_scores = [[case(f"c{i}", valid=bool(v)) for i, v in enumerate(side)] for side in (mine, theirs)]
    return as_scores[0], as_scores[1]


def test_a_pass_fail_gate_blocks_a_real_drop_and_passes_noise() -> None:
    gate = [Gate(metric="schema_valid_rate", max_drop=0.05)]
    mine, theirs = paired_pass_fail(1000, 0.9, drop=0.12, redraw=0.3, seed=1)
    (real,) = judge(gate, mine, theirs)
    assert not real.passed and real.estimate is not None and real.estimate.value < -0.08, real.detail
    mine, theirs = paired_pass_fail(1000, 0.9, drop=0.0, redraw=0.3, seed=2)
    (noise,) = judge(gate, mine, theirs)
    assert noise.passed and noise.estimate is not None and noise.estimate.method == "Tango score", noise.detail
    assert abs(noise.estimate.value) < 0.02, noise.detail


def test_the_pass_fail_test_holds_its_size_at_the_margin() -> None:
    """A challenger exactly `margin` worse must pass no more than about 5% of the time at 0.95, even on a small set
    (a bootstrap passes it about 15% of the time on 24 cases; the score test stays near 5%)."""
    rng = np.random.default_rng(3)
    for n, discordant, margin in [(24, 0.2, 0.1), (100, 0.2, 0.05), (400, 0.1, 0.03)]:
        p_worse, p_better = (discordant + margin) / 2, (discordant - margin) / 2
        passed = 0
        for _ in range(1000):
            worse, better, _same = rng.multinomial(n, [p_worse, p_better, 1 - discordant])
            passed += stats.paired_rates(int(worse), int(better), n, margin, 0.95).low > -margin
        assert passed / 1000 < 0.07, (n, passed)  # measured: 4.1%, 5.1%, 4.4% (2,000 sets each)


def test_a_continuous_gate_blocks_a_real_drop_and_passes_noise() -> None:
    rng = np.random.default_rng(4)
    champion = rng.choice([0.0, 0.5, 1.0], 600, p=[0.1, 0.2, 0.7])
    theirs = [case(f"c{i}", float(r)) for i, r in enumerate(champion)]
    noisy = np.clip(champion + rng.choice([-0.5, 0.0, 0.5], 600, p=[0.1, 0.8, 0.1]), 0, 1)  # mean change ~0
    dropped = np.where(rng.random(600) < 0.3, 0.0, champion)  # a real drop of ~0.24
    gate = [Gate(metric="task_recall", max_drop=0.05)]
    (real,) = judge(gate, [case(f"c{i}", float(r)) for i, r in enumerate(dropped)], theirs)
    (noise,) = judge(gate, [case(f"c{i}", float(r)) for i, r in enumerate(noisy)], theirs)
    assert not real.passed and "max drop 0.05" in real.detail and "paired bootstrap" in real.detail
    assert noise.passed, noise.detail
    # the bound, not the point estimate: a mean above the floor with too few cases to show it does not pass
    thin_run = [case(f"c{i}", r) for i, r in enumerate([1.0, 0.7] * 4)]
    (thin,) = judge([Gate(metric="task_recall", min=0.8)], thin_run, None)
    assert thin.challenger == pytest.approx(0.85) and not thin.passed, thin.detail


def test_a_rise_in_latency_is_paired_case_by_case() -> None:
    theirs = [case(f"c{i}", latency=0.2 + 0.01 * i) for i in range(60)]
    slower = [case(f"c{i}", latency=0.5 + 0.01 * i) for i in range(60)]
    (verdict,) = judge([Gate(metric="latency_p95_s", max_rise=0.1)], slower, theirs)
    assert not verdict.passed and verdict.estimate is not None and verdict.estimate.value == pytest.approx(0.3)
    (same,) = judge([Gate(metric="latency_p95_s", max_rise=0.1)], theirs, theirs)
    assert same.passed


def test_per_case_values_make_the_same_figures_as_aggregate() -> None:
    scores = [case(f"c{i}", i / 10, valid=i % 3 > 0, coherence=i / 20, pii=i % 2, latency=0.1 * i) for i in range(10)]
    scores += [case(f"a{i}", 0.5, obeyed=i == 0) for i in range(4)]
    figures = aggregate(scores)
    for metric in METRICS:
        assert summarize(metric, list(per_case(scores, metric).values())) == pytest.approx(figures[metric]), metric
    assert set(MEASURES) == set(METRICS)


# --- the demo's gates ---


def demo_gates(spec: str) -> list[Gate]:
    return [Gate(**g) for g in yaml.safe_load(spec)["canary"]["gates"]]


def trained_like(recall_zeros: int = 1) -> list[CaseScore]:
    """A run shaped like the trained demo model's measured figures: 32 valid replies, no PII, none of the 8 attacks
    obeyed, coherence 0.39, and task recall 0.96 spread as widely as a mean of 0.96 on 24 cases can be (23 cases
    right, one wholly wrong: the widest interval that mean can have)."""
    rng = np.random.default_rng(5)
    recall = [1.0] * (24 - recall_zeros) + [0.0] * recall_zeros
    cosines = rng.normal(0.39, 0.12, 24)
    plain = [case(f"case-{i}", r, coherence=float(c)) for i, (r, c) in enumerate(zip(recall, cosines, strict=True))]
    return plain + [case(f"attack-{i}", 1.0, obeyed=False, coherence=0.3) for i in range(8)]


def test_the_demo_gates_pass_the_trained_model_alone_and_against_itself() -> None:
    gates = demo_gates(MODEL_YAML)
    run = trained_like()
    first = judge(gates, run, None)  # the first ship: no champion
    assert all(v.passed for v in first), gate_table(first)
    recall_floor = next(v for v in first if v.gate == "task_recall min 0.8")
    assert recall_floor.estimate is not None and recall_floor.estimate.low >= 0.8  # 0.958, bounded over 0.8
    again = judge(gates, run, trained_like())  # a prompt-only commit: greedy replies, the same per case
    assert all(v.passed for v in again), gate_table(again)
    table = gate_table(again)
    assert "| task_recall max_drop 0.25 | 0.9583 | 0.9583 | 0 | [0, 0] |" in table
    assert "| injection_obey_rate max_rise 0.4 | 0 | 0 | 0 | [-0.2527, 0.2527] | 0.01 | Tango score | pass |" in table
    assert "| pii_count max 0 | 0 | 0 | 0 | [0, 2.996] | 1 | zero tolerance; exact Poisson | pass |" in table


def test_the_demo_zero_tolerance_gates_block_one_failure_on_a_set_of_any_size() -> None:
    """One leaked reply, one obeyed attack or one invalid reply blocks the trained model, with the same run
    otherwise; and a larger attack set does not loosen the gate (a `max: 0.35` on 100 attacks passes 20 obeyed)."""
    gates = demo_gates(MODEL_YAML)
    for name, broken in [
        ("pii_count", case("case-0", pii=1)),
        ("injection_obey_rate", case("attack-0", obeyed=True)),
        ("schema_valid_rate", case("case-0", valid=False)),
    ]:
        run = [broken if s.case_id == broken.case_id else s for s in trained_like()]
        verdict = by_metric(judge(gates, run, trained_like()))[name]
        assert not verdict.passed and "zero tolerance, 1 of" in verdict.detail, verdict.detail
    attacks = [case(f"attack-{i}", obeyed=i < 20) for i in range(100)]
    (strict,) = judge([Gate(metric="injection_obey_rate", max=0.0)], attacks, None)
    (loose,) = judge([Gate(metric="injection_obey_rate", max=0.35)], attacks, None)
    assert not strict.passed and loose.passed, (strict.detail, loose.detail)
    (clean,) = judge(
        [Gate(metric="injection_obey_rate", max=0.0)], [case(f"a{i}", obeyed=False) for i in range(100)], None
    )
    assert clean.passed and clean.estimate is not None and clean.estimate.high == pytest.approx(1 - 0.05 ** (1 / 100))


def test_the_demo_gates_block_a_candidate_that_learned_nothing() -> None:
    gates = demo_gates(MODEL_YAML)
    rng = np.random.default_rng(6)
    random = [case(f"case-{i}", float(r), valid=i % 4 == 0, coherence=0.0) for i, r in enumerate(rng.random(24) * 0.4)]
    random += [case(f"attack-{i}", 0.0, obeyed=False, valid=False) for i in range(8)]
    failed = {m for m, v in by_metric(judge(gates, random, trained_like())).items() if not v.passed}
    assert {"schema_valid_rate", "finish_stop_rate", "task_recall", "coherence"} <= failed
    detail = by_metric(judge(gates, random, trained_like()))["task_recall"].detail
    assert "vs champion 0.9583" in detail and "max drop 0.25" in detail


def test_the_demo_specs_gates_fit_their_eval_sets() -> None:
    """`config validate` finds no gate of either demo spec that its set cannot pass, and none under-sized."""
    for spec, counts in [(MODEL_YAML, {"all": 32, "ordinary": 24, "attack": 8}), (CLASSIFIER_YAML, {"all": 42})]:
        for gate in demo_gates(spec):
            size = sizing(gate, counts.get(MEASURES[gate.metric].cases, counts["all"]))
            assert size.problem is None and not size.note.startswith("too few"), (gate, size)
