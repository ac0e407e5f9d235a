"""The miss rate of key risks on the paraphrase split: the model alone, flagging only, flagging and re-asking.

Issue 35's honest measurement. For each seed:

1. Reviewers' labels: `--review` contracts of the generator's usual wordings (as the demo's reviewers get),
   each asked of the demo model on the vLLM CPU build with the request the gateway sends, the reply scored
   by the gateway's own `score_reply` and graded against the generator's truth as the demo's reviewers
   grade (`demo.reviewers.grade`). The trust model is fitted on them by the trainer's own `fit_judged` (split
   by time, calibrated where that helps, review threshold chosen for the spec's default budget, 15%).
2. The paraphrase split: `--contracts` held-out contracts whose clauses are in `corpus.PARAPHRASES`' wordings,
   which no training contract, eval case, reviewer's contract or retrieval-corpus entry uses. Each is asked
   once (the first reply), scored by that trust model, and asked again with the clauses the retrieval corpus
   finds (`trust.rag.with_context`, as the gateway re-asks), and that reply scored too.
3. Three figures, misses counted as the demo's `demo.missrate` does (a risk is missed when the reply that
   reaches the caller lacks it and was not flagged; a reviewer reads every flagged reply):
   - the model alone: every first reply stands, nothing flagged;
   - flagging only: first replies scored under the threshold are flagged;
   - flagging and re-asking (the gateway's loop, `Pipeline.score`): a first reply under the threshold is
     asked again, the better-trusted of the two stands, and it is flagged if still under.

Seeds change the reviewers' contracts (so the trust model and its threshold) and the held-out contracts; the
demo model itself is the same in every seed (training it again takes the demo's minutes). Printed per seed and
as mean and spread: the three miss rates and the share flagged, at the model's own threshold; then the trade-off
curve (thresholds at quantiles of the first replies' scores, both modes) and what limits it: the trust model's
AUC on its own holdout against its AUC on the paraphrase split, and what the re-ask fixed.

Ours is the loop's miss rate, the baseline the model alone's; the target (issue 35): ours at most a quarter
of the baseline with at most 15% flagged.

`--smoke`: one seed, 24 labels and 6 contracts, seconds on a warm server; exits non-zero on a failed request.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ai_platform.config import Trust  # noqa: E402
from ai_platform.demo import corpus  # noqa: E402
from ai_platform.demo.missrate import missed  # noqa: E402
from ai_platform.demo.repo import CONTRACT_REVIEW_PROMPT  # noqa: E402
from ai_platform.demo.reviewers import grade  # noqa: E402
from ai_platform.detectors.injection import injection_score  # noqa: E402
from ai_platform.prompts.compiler import compile_bytes  # noqa: E402
from ai_platform.prompts.render import request_body  # noqa: E402
from ai_platform.serving.gateway.scoring import answer_of, score_reply  # noqa: E402
from ai_platform.serving.state import ModelState  # noqa: E402
from ai_platform.trust.clauses import ClauseIndex  # noqa: E402
from ai_platform.trust.features import features  # noqa: E402
from ai_platform.trust.model import TrustModel  # noqa: E402
from ai_platform.trust.rag import KeywordRetriever, with_context  # noqa: E402
from ai_platform.trust.train import Example, fit_judged  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402
from benchmarks.support.vllm import MODEL, UPSTREAM_HELP, demo_server  # noqa: E402

REVIEW_SEED, TEST_SEED = 3_100_003, 5_100_003  # streams apart from training, eval, reviewers and the demo's holdout
QUANTILES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
TARGET_REDUCTION, TARGET_FLAGGED = 0.75, 0.15


@dataclass(frozen=True)
class Reply:
    raw: float  # the trust model's raw score (the review threshold is on it)
    missed: int  # risks this reply misses
    correct: bool


@dataclass(frozen=True)
class Case:
    risks: int
    first: Reply
    again: Reply | None  # the re-asked reply; None when the retrieval corpus finds nothing to ask with


@dataclass(frozen=True)
class Point:
    flagged: float  # share of replies flagged
    miss_rate: float  # risks missed (unflagged replies) / all risks


def alone(cases: list[Case]) -> Point:
    return Point(0.0, sum(c.first.missed for c in cases) / sum(c.risks for c in cases))


def flagging(cases: list[Case], threshold: float) -> Point:
    flagged = [c.first.raw < threshold for c in cases]
    misses = sum(c.first.missed for c, f in zip(cases, flagged, strict=True) if not f)
    return Point(sum(flagged) / len(cases), misses / sum(c.risks for c in cases))


def looping(cases: list[Case], threshold: float) -> Point:
    """The gateway's loop (`Pipeline.score`): under the threshold, ask again; the better-trusted reply stands."""
    flagged, misses = 0, 0
    for c in cases:
        stands = c.first
        if c.first.raw < threshold and c.again is not None and c.again.raw > c.first.raw:
            stands = c.again
        if stands.raw < threshold:
            flagged += 1
        else:
            misses += stands.missed
    return Point(flagged / len(cases), misses / sum(c.risks for c in cases))


def oracle(cases: list[Case], budget: float) -> Point:
    """A perfect trust model: it flags the `budget` share of first replies that miss the most risks."""
    k = int(budget * len(cases))
    worst = sorted(cases, key=lambda c: -c.first.missed)
    return Point(k / len(cases), sum(c.first.missed for c in worst[k:]) / sum(c.risks for c in cases))


def auc(scores: list[float], truth: list[bool]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(truth, scores)) if len(set(truth)) == 2 else float("nan")


class Asker:
    """The demo model's replies, scored the way the gateway scores them."""

    def __init__(self, base_url: str, corpus_file: Path) -> None:
        self.base_url = base_url
        self.document = compile_bytes(CONTRACT_REVIEW_PROMPT.encode(), "contract_review.prompt").document
        self.retriever = KeywordRetriever(corpus_file)
        self.state = ModelState(MODEL, "")
        self.client = httpx.Client(timeout=300)

    def body(self, example: corpus.Example) -> dict[str, Any]:
        return request_body(self.document, {"input_pdf_text": example.text}, model=MODEL)

    def ask(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.client.post(f"{self.base_url}/v1/chat/completions", json=body)
        reply.raise_for_status()
        data: dict[str, Any] = reply.json()
        return data

    def scored(self, example: corpus.Example, data: dict[str, Any], trust: TrustModel | None) -> dict[str, Any]:
        text = example.text
        return score_reply(
            self.state,
            self.document["output_schema"],
            answer_of(data),
            text,
            injection_score(text),
            0.0,
            trust,
            clauses=self.retriever.index,
        )

    def features(self, example: corpus.Example, scored: dict[str, Any]) -> dict[str, float]:
        """The trust features of a reply as the trainer reads it back from the warehouse's generations row."""
        row = {
            "input": example.text,
            "output": scored["content"],
            "metrics": scored["metrics"],
            "finish_reason": scored["finish_reason"],
        }
        return features(row, self.retriever.index)


def expected(example: corpus.Example) -> dict[str, Any]:
    return {"keywords": [r.keyword for r in example.risks], "levels": [r.level for r in example.risks]}


def train(asker: Asker, seed: int, count: int, pool: ThreadPoolExecutor) -> tuple[TrustModel, dict[str, Any]]:
    examples = corpus.examples(REVIEW_SEED + 1000 * seed, count, f"review-{seed}")
    replies = list(pool.map(lambda e: asker.ask(asker.body(e)), examples))
    start = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)
    rows = []
    for i, (example, data) in enumerate(zip(examples, replies, strict=True)):
        scored = asker.scored(example, data, None)
        label = grade(expected(example), scored["output"])
        rows.append(
            Example(start + timedelta(minutes=7 * i), asker.features(example, scored), label == "correct", str(i))
        )
    model, metrics, _, _ = fit_judged(rows, Trust(), MODEL)
    return model, metrics


def held_out(
    asker: Asker, trust: TrustModel, seed: int, count: int, pool: ThreadPoolExecutor, paraphrased: bool
) -> list[Case]:
    examples = corpus.examples(TEST_SEED + 1000 * seed, count, f"held-out-{seed}", paraphrased=paraphrased)

    def one(example: corpus.Example) -> Case:
        body = asker.body(example)
        first = asker.scored(example, asker.ask(body), trust)
        retrieved = asker.retriever.retrieve(example.text)
        again = None
        if retrieved:
            again = asker.scored(
                example, asker.ask({**body, "messages": with_context(body["messages"], retrieved)}), trust
            )
        return Case(
            len(example.risks),
            reply(trust, example, first, asker),
            reply(trust, example, again, asker) if again else None,
        )

    return [c for c in pool.map(one, examples) if c.risks]  # a contract with no risk has nothing to miss


def kinds_found(index: ClauseIndex, seed: int, count: int, paraphrased: bool) -> tuple[int, int]:
    """Of the risky clauses in the held-out contracts, how many the retrieval corpus's index finds the kind of in
    the input (what the `unraised_kinds` feature and the re-ask's context rest on); no model involved."""
    kind_of = {id(r): k.name for k in corpus.CLAUSES for r in (k.risk_en, k.risk_zh)}
    found = total = 0
    for example in corpus.examples(TEST_SEED + 1000 * seed, count, "kinds", paraphrased=paraphrased):
        seen = index.found(example.text)
        wanted = {kind_of[id(r)] for r in example.risks}
        found, total = found + len(wanted & seen), total + len(wanted)
    return found, total


def reply(trust: TrustModel, example: corpus.Example, scored: dict[str, Any], asker: Asker) -> Reply:
    raw = trust.raw_score(asker.features(example, scored))
    return Reply(raw, missed(example, scored["output"]), grade(expected(example), scored["output"]) == "correct")


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:6.1%} ± {sd:5.1%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--review", type=int, default=300, help="reviewers' labels per seed (default 300)")
    parser.add_argument("--contracts", type=int, default=120, help="paraphrase-split contracts per seed")
    parser.add_argument(
        "--wordings",
        choices=("paraphrased", "usual"),
        default="paraphrased",
        help="the held-out contracts' wordings: the paraphrase split (default), or the generator's usual ones",
    )
    parser.add_argument("--workers", type=int, default=8, help="requests in flight (default 8)")
    parser.add_argument("--upstream", metavar="URL", help=UPSTREAM_HELP)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.seeds, args.review, args.contracts = 1, 24, 6
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.workers) as pool:
        corpus_file = Path(tmp) / "legal_basis.jsonl"
        corpus_file.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in corpus.legal_basis()))
        with demo_server(args.upstream, max(8, args.workers), Path(tmp) / "vllm.log") as base_url:
            asker = Asker(base_url, corpus_file)
            for seed in range(args.seeds):
                trust, metrics = train(asker, seed, args.review, pool)
                cases = held_out(asker, trust, seed, args.contracts, pool, args.wordings == "paraphrased")
                threshold = trust.review_threshold
                assert threshold is not None
                firsts = sorted(c.first.raw for c in cases)
                curve = []
                for q in QUANTILES:  # a threshold at each quantile of the first replies' scores
                    t = firsts[min(len(firsts) - 1, int(q * len(firsts)))] if q < 1 else float("inf")
                    curve.append((q, flagging(cases, t), looping(cases, t)))
                again = [c for c in cases if c.again is not None]
                runs.append(
                    {
                        "alone": alone(cases),
                        "flag": flagging(cases, threshold),
                        "loop": looping(cases, threshold),
                        "curve": curve,
                        "oracle": oracle(cases, TARGET_FLAGGED),
                        "missing": sum(c.first.missed > 0 for c in cases) / len(cases),
                        "auc_holdout": metrics["auc"],
                        "auc_paraphrase": auc([c.first.raw for c in cases], [c.first.correct for c in cases]),
                        "budget_holdout": metrics["review"]["flagged_share"],
                        "cases": len(cases),
                        "risks": sum(c.risks for c in cases),
                        "reasked_fixes": sum(c.first.missed - c.again.missed for c in again if c.again),
                        "retrieved": len(again),
                    }
                )
                r = runs[-1]
                print(
                    f"seed {seed}: {r['cases']} contracts with {r['risks']} risks;"
                    f" trust model AUC {r['auc_holdout']:.3f}"
                    f" on its holdout, {r['auc_paraphrase']:.3f} on the held-out contracts; threshold {threshold:.3f}"
                    f" (flags {r['budget_holdout']:.0%} of its holdout)",
                    flush=True,
                )
                for name in ("alone", "flag", "loop"):
                    p = r[name]
                    print(f"  {name:6} miss rate {p.miss_rate:6.1%}, flagged {p.flagged:5.1%}", flush=True)
    n = len(runs)
    split = "the paraphrase split" if args.wordings == "paraphrased" else "held-out contracts, usual wordings"
    print(f"\nover {n} seed(s), mean ± sd ({split}; misses / risks; flagged / replies):")
    for name, label in (("alone", "the model alone"), ("flag", "flagging only"), ("loop", "flagging and re-asking")):
        rates, shares = [r[name].miss_rate for r in runs], [r[name].flagged for r in runs]
        print(f"  {label:24} miss rate {spread(rates)}   flagged {spread(shares)}")
    base = statistics.fmean(r["alone"].miss_rate for r in runs)
    ours = statistics.fmean(r["loop"].miss_rate for r in runs)
    flagged = statistics.fmean(r["loop"].flagged for r in runs)
    ratio = ours / base if base else float("nan")
    met = ratio <= 1 - TARGET_REDUCTION and flagged <= TARGET_FLAGGED
    print(f"  ours (loop) {ours:.1%}, baseline (model alone) {base:.1%}: ratio {ratio:.2f}x, flagged {flagged:.1%}")
    verdict = "met" if met else "MISSED"
    print(f"  target: ratio <= {1 - TARGET_REDUCTION:.2f}x with <= {TARGET_FLAGGED:.0%} flagged: {verdict}")
    print("\ntrade-off curve (threshold at a quantile of the first replies' scores; mean over seeds):")
    print("  quantile   flagging only: flagged  miss rate   |  loop: flagged  miss rate")
    for i, q in enumerate(QUANTILES):
        f = [r["curve"][i][1] for r in runs]
        lo = [r["curve"][i][2] for r in runs]
        f_flagged, f_miss = statistics.fmean(p.flagged for p in f), statistics.fmean(p.miss_rate for p in f)
        lo_flagged, lo_miss = statistics.fmean(p.flagged for p in lo), statistics.fmean(p.miss_rate for p in lo)
        print(f"  {q:8.2f}   {f_flagged:21.1%}  {f_miss:9.1%}   |  {lo_flagged:13.1%}  {lo_miss:9.1%}")
    print("\nwhat limits it:")
    for label, paraphrased in (("usual wordings", False), ("the paraphrase split", True)):
        found = [kinds_found(asker.retriever.index, seed, args.contracts, paraphrased) for seed in range(n)]
        share = sum(f for f, _ in found) / max(1, sum(t for _, t in found))
        print(f"  risky clauses whose kind the retrieval corpus finds in the input, {label}: {share:.1%}")
    print(
        "  (the `unraised_kinds` feature and the re-ask's context rest on it: a reply that leaves out a risk the"
        " corpus cannot see in the input looks complete)"
    )
    missing = statistics.fmean(r["missing"] for r in runs)
    best = statistics.fmean(r["oracle"].miss_rate for r in runs)
    print(
        f"  replies that miss at least one risk: {missing:.1%}; a perfect trust model flagging {TARGET_FLAGGED:.0%}"
        f" of replies (those missing the most) leaves a miss rate of {best:.1%}"
        f" ({best / base if base else float('nan'):.2f}x the model alone's)"
    )
    print(
        f"  trust model AUC, its own holdout (usual wordings) {statistics.fmean(r['auc_holdout'] for r in runs):.3f}"
        f" vs the held-out contracts {statistics.fmean(r['auc_paraphrase'] for r in runs):.3f}"
    )
    print(
        f"  re-asking every contract the retrieval corpus finds clauses for"
        f" ({sum(r['retrieved'] for r in runs)} of {sum(r['cases'] for r in runs)}):"
        f" {sum(r['reasked_fixes'] for r in runs)} fewer risks missed in all (net, of {sum(r['risks'] for r in runs)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
