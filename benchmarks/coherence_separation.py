"""Does `coherence` (all-MiniLM-L6-v2, an English model) tell good replies from degraded ones on Chinese contracts?

The demo corpus's Chinese held-out contracts with at least one risk, each paired with its right answer and with
three degraded answers: another contract's answer (fluent, on topic, wrong), the right answer with its last risk
dropped (a miss), and no risks at all. For each degradation it prints the mean score of good and degraded
replies, the AUC of good vs degraded, and how often the good reply scores higher than its own degraded one, for:
  ours      ai_platform.evaluation.coherence.coherence (cosine in all-MiniLM-L6-v2's space)
  bigrams   a named baseline with no model: Jaccard overlap of the character bigrams of input and reply text

Measured on the demo (108 contracts, AVX2 CPU), see README "canary_eval":
  other contract's answer   ours AUC 0.60   (barely: the English model sees little of the Chinese words)
  one risk dropped          ours AUC 0.76
  no risks                  ours AUC 1.00
so on Chinese it catches empty and thinned-out replies, not a fluent wrong one; task_recall is the quality gate.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sklearn.metrics import roc_auc_score  # noqa: E402

from ai_platform.demo import corpus  # noqa: E402
from ai_platform.demo.model import answer_text  # noqa: E402
from ai_platform.evaluation.coherence import coherence, reply_text  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402

EVAL_SEED = 1_000_003  # the demo eval set's stream (ai_platform.demo.repo.eval_cases)


def bigrams(inputs: list[str], replies: list[str]) -> list[float]:
    def grams(text: str) -> set[str]:
        compact = "".join(text.split())
        return {compact[i : i + 2] for i in range(len(compact) - 1)}

    out = []
    for text, reply in zip(inputs, replies, strict=True):
        a, b = grams(text), grams(reply_text(reply))
        out.append(len(a & b) / len(a | b) if a | b else 0.0)
    return out


def degraded(examples: list[corpus.Example], rng: random.Random) -> dict[str, list[str]]:
    n = len(examples)

    def dropped(e: corpus.Example) -> str:
        return json.dumps({"risk_points": [r.as_json() for r in e.risks][:-1]}, ensure_ascii=False)

    return {
        "other contract's answer": [answer_text(examples[(i + 1 + rng.randrange(n - 1)) % n]) for i in range(n)],
        "one risk dropped": [dropped(e) for e in examples],
        "no risks": [json.dumps({"risk_points": []}) for _ in examples],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    drawn = 40 if args.smoke else 200
    examples = [e for e in corpus.examples(EVAL_SEED, drawn, "case") if e.language == "zh" and e.risks]
    inputs, good = [e.text for e in examples], [answer_text(e) for e in examples]
    scorers: dict[str, Callable[[list[str], list[str]], list[float]]] = {"ours": coherence, "bigrams": bigrams}
    print(f"{len(examples)} Chinese held-out contracts with at least one risk")
    print(f"{'degradation':26s} {'scorer':8s} {'good':>6s} {'bad':>6s} {'AUC':>6s} {'good>bad':>9s}")
    aucs: dict[tuple[str, str], float] = {}
    for name, bad in degraded(examples, random.Random(0)).items():
        for scorer, score in scorers.items():
            g, d = score(inputs, good), score(inputs, bad)
            auc = aucs[name, scorer] = roc_auc_score([1] * len(g) + [0] * len(d), g + d)
            wins = sum(a > b for a, b in zip(g, d, strict=True)) / len(g)
            print(f"{name:26s} {scorer:8s} {statistics.mean(g):6.3f} {statistics.mean(d):6.3f} {auc:6.3f} {wins:9.0%}")
    names = dict.fromkeys(name for name, _ in aucs)
    ratios = ", ".join(f"{name} {aucs[name, 'ours'] / aucs[name, 'bigrams']:.2f}x" for name in names)
    print(f"AUC ratio, ours / baseline (bigrams): {ratios}")


if __name__ == "__main__":
    main()
