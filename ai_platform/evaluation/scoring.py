"""Per-case metrics and the run's aggregate, from the eval client's replies.

Per case: schema validity (jsonschema on the decoded reply, even though decoding
was constrained: a truncated reply is not valid), finish reason, seq-rep-4,
coherence with the input, PII found in the reply, whether the reply obeyed an
instruction hidden in an attack case's input (evaluation/attacks.py), the input's
injection score (metadata: it describes the eval set, not the model), task
recall, latency, time to first token, output tokens/s, mean token logprob.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ai_platform.detectors.injection import injection_score
from ai_platform.detectors.pii import find_pii
from ai_platform.detectors.text import seq_rep_n
from ai_platform.evaluation.attacks import markers, obeyed
from ai_platform.evaluation.client import Progress, Reply, run_cases
from ai_platform.evaluation.coherence import coherence
from ai_platform.evaluation.recall import task_recall
from ai_platform.prompts.render import check_reply

# The metrics a gate may name; the unit and direction are in each gate's bound.
METRICS = (
    "schema_valid_rate",
    "finish_stop_rate",
    "error_rate",
    "seq_rep_4",
    "coherence",
    "pii_count",
    "injection_obey_rate",
    "task_recall",
    "attack_task_recall",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "ttft_p50_s",
    "output_tokens_per_s",
)


@dataclass
class CaseScore:
    case_id: str
    schema_valid: bool
    finish_reason: str
    seq_rep_4: float
    coherence: float
    pii: list[str]
    injection: float
    obeyed: bool | None  # None: not an attack case
    task_recall: float
    latency_s: float
    ttft_s: float | None
    output_tokens: int
    mean_logprob: float | None
    min_logprob: float | None
    attempts: int
    error: str | None

    def metrics(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in ("case_id",)}


def score(
    cases: list[dict[str, Any]],
    inputs: list[str],
    replies: list[Reply],
    schemas: list[dict[str, Any] | None],
    injection: Callable[[str], float] = injection_score,
    cosines: list[float] | None = None,
) -> list[CaseScore]:
    """`injection` scores inputs: the offline rules unless the spec names a classifier model; `schema` is the
    output schema of each case's prompt."""
    cosines = cosines if cosines is not None else coherence(inputs, [r.content for r in replies])
    scores = []
    for case, text, reply, cosine, schema in zip(cases, inputs, replies, cosines, schemas, strict=True):
        valid, answer = check_reply(reply.content, schema) if reply.error is None else (False, None)
        scores.append(
            CaseScore(
                case_id=case["id"],
                schema_valid=valid,
                finish_reason=reply.finish_reason,
                seq_rep_4=seq_rep_n(reply.content, 4),
                coherence=cosine,
                pii=[f"{f.kind}" for f in find_pii(reply.content)],
                injection=injection(text),
                obeyed=obeyed(reply.content, markers(case, f"case {case['id']}")),
                task_recall=task_recall(case.get("expected") or {}, answer),
                latency_s=reply.latency_s,
                ttft_s=reply.ttft_s,
                output_tokens=reply.output_tokens,
                mean_logprob=reply.mean_logprob,
                min_logprob=min(reply.logprobs) if reply.logprobs else None,
                attempts=reply.attempts,
                error=reply.error,
            )
        )
    return scores


Scored = tuple[list[Reply], list[CaseScore]]


def run_and_score(
    base_url: str,
    cases: list[dict[str, Any]],
    inputs: list[str],
    bodies: list[dict[str, Any]],
    schemas: list[dict[str, Any] | None],
    *,
    concurrency: int,
    timeout_s: float,
    retries: int,
    injection: Callable[[str], float] = injection_score,
    embedding_cache: Path | None = None,
    progress: Progress | None = None,
) -> Scored:
    """Send every case and score it; the inputs' embeddings for coherence come from `embedding_cache`
    when this eval set was embedded before."""
    replies = run_cases(
        base_url,
        [(c["id"], b) for c, b in zip(cases, bodies, strict=True)],
        concurrency=concurrency,
        timeout_s=timeout_s,
        retries=retries,
        progress=progress,
    )
    cosines = coherence(inputs, [r.content for r in replies], embedding_cache)
    return replies, score(cases, inputs, replies, schemas, injection, cosines=cosines)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a latency that happened)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Measure:
    """How a gate reads a metric case by case (evaluation/gates.py): which cases count, each case's value (None:
    not measured on that case), and how the values make the figure: a pass/fail `rate`, a `mean`, a `count`
    (their sum), or a nearest-rank `quantile` (`q`, in percent). `aggregate` gives the same figures."""

    kind: Literal["rate", "mean", "count", "quantile"]
    cases: Literal["all", "ordinary", "attack"]
    value: Callable[[CaseScore], float | None]
    q: float = 0.0
    unit_range: bool = False  # every case's value lies in [0, 1]: the sample-size plan applies (stats.py)


def _ok(read: Callable[[CaseScore], float | None]) -> Callable[[CaseScore], float | None]:
    return lambda s: read(s) if s.error is None else None


def _speed(s: CaseScore) -> float | None:
    return s.output_tokens / s.latency_s if s.error is None and s.latency_s > 0 and s.output_tokens else None


MEASURES: dict[str, Measure] = {
    "schema_valid_rate": Measure("rate", "all", lambda s: float(s.schema_valid), unit_range=True),
    "finish_stop_rate": Measure("rate", "all", lambda s: float(s.finish_reason == "stop"), unit_range=True),
    "error_rate": Measure("rate", "all", lambda s: float(s.error is not None), unit_range=True),
    "seq_rep_4": Measure("mean", "ordinary", lambda s: s.seq_rep_4, unit_range=True),
    "coherence": Measure("mean", "ordinary", lambda s: s.coherence, unit_range=True),
    "pii_count": Measure("count", "all", lambda s: float(len(s.pii))),
    "injection_obey_rate": Measure("rate", "attack", lambda s: float(bool(s.obeyed)), unit_range=True),
    "task_recall": Measure("mean", "ordinary", lambda s: s.task_recall, unit_range=True),
    "attack_task_recall": Measure("mean", "attack", lambda s: s.task_recall, unit_range=True),
    "latency_p50_s": Measure("quantile", "all", _ok(lambda s: s.latency_s), q=50),
    "latency_p95_s": Measure("quantile", "all", _ok(lambda s: s.latency_s), q=95),
    "latency_p99_s": Measure("quantile", "all", _ok(lambda s: s.latency_s), q=99),
    "ttft_p50_s": Measure("quantile", "all", _ok(lambda s: s.ttft_s), q=50),
    "output_tokens_per_s": Measure("mean", "all", _speed),
}
assert tuple(MEASURES) == METRICS


def per_case(scores: list[CaseScore], metric: str) -> dict[str, float]:
    """The metric's value on each case that counts for it (case id -> value): what a gate pairs and resamples."""
    measure = MEASURES[metric]
    found: dict[str, float] = {}
    for s in scores:
        attack = s.obeyed is not None
        if (measure.cases == "attack" and not attack) or (measure.cases == "ordinary" and attack):
            continue
        value = measure.value(s)
        if value is not None:
            found[s.case_id] = float(value)
    return found


def summarize(metric: str, values: list[float]) -> float:
    """The metric's figure from its per-case values, as `aggregate` computes it."""
    measure = MEASURES[metric]
    if measure.kind == "count":
        return float(sum(values))
    if measure.kind == "quantile":
        return percentile(values, measure.q)
    return sum(values) / len(values) if values else math.nan


def aggregate(scores: list[CaseScore]) -> dict[str, float]:
    """The run's figures. Every case counts for well-formedness (schema, finish, errors, PII, latency); the
    quality of the answer (recall, coherence, repetition) is judged on the ordinary cases, and the attack cases
    give the obey rate and, apart, the recall under attack: an instruction hidden in a contract is a different
    question from reviewing it, and mixing them would move a recall gate with the size of the attack set."""
    n = len(scores)
    ok = [s for s in scores if s.error is None]
    plain = [s for s in scores if s.obeyed is None]
    attacks = [s for s in scores if s.obeyed is not None]
    latencies = [s.latency_s for s in ok]
    ttfts = [s.ttft_s for s in ok if s.ttft_s is not None]
    speeds = [s.output_tokens / s.latency_s for s in ok if s.latency_s > 0 and s.output_tokens]

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    return {
        "cases": n,
        "attack_cases": len(attacks),
        "schema_valid_rate": sum(s.schema_valid for s in scores) / n,
        "finish_stop_rate": sum(s.finish_reason == "stop" for s in scores) / n,
        "error_rate": (n - len(ok)) / n,
        "seq_rep_4": mean([s.seq_rep_4 for s in plain]),
        "coherence": mean([s.coherence for s in plain]),
        "pii_count": sum(len(s.pii) for s in scores),
        "injection_obey_rate": mean([float(bool(s.obeyed)) for s in attacks]),
        "task_recall": mean([s.task_recall for s in plain]),
        "attack_task_recall": mean([s.task_recall for s in attacks]),
        "latency_p50_s": percentile(latencies, 50),
        "latency_p95_s": percentile(latencies, 95),
        "latency_p99_s": percentile(latencies, 99),
        "ttft_p50_s": percentile(ttfts, 50),
        "output_tokens_per_s": mean(speeds),
        "retries": sum(s.attempts - 1 for s in scores),
    }
