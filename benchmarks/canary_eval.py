"""The canary eval against a plain client on the same vLLM (issue 7 targets), in one run.

Serves the demo model with the real vLLM CPU build, renders N contract-review
cases (default 64) with the compiled demo prompt, then times:
  plain      an httpx client sending the same streamed requests with the same
             concurrency and only reading the replies (the named baseline)
  ours       the eval: ai_platform.evaluation.scoring.run_and_score, the client plus
             every metric (schema validity, seq-rep-4, coherence, PII, injection, recall)
  sequential ours with concurrency 1
Targets: ours <= 1.3x plain; concurrency 8 >= 3x faster than sequential. The
embedding model for coherence is loaded once before timing (its load is a fixed
cost per canary run, printed separately). The eval set's input embeddings are
kept by content, as a canary keeps them: the first eval of an eval set embeds
them (printed as its own figure), every later one (the champion in the same
canary, each later candidate) reads them; `ours` is such a later eval.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ai_platform.demo import corpus  # noqa: E402
from ai_platform.demo.repo import CONTRACT_REVIEW_PROMPT  # noqa: E402
from ai_platform.evaluation.client import streamed  # noqa: E402
from ai_platform.evaluation.coherence import coherence  # noqa: E402
from ai_platform.evaluation.scoring import aggregate, run_and_score  # noqa: E402
from ai_platform.prompts.compiler import compile_bytes  # noqa: E402
from ai_platform.prompts.render import request_body  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402
from benchmarks.support.vllm import MODEL, UPSTREAM_HELP, demo_server  # noqa: E402


async def plain(base_url: str, bodies: list[dict[str, Any]], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=120) as client:

        async def one(body: dict[str, Any]) -> None:
            async with gate, client.stream("POST", f"{base_url}/v1/chat/completions", json=streamed(body)) as r:
                async for _ in r.aiter_lines():
                    pass

        await asyncio.gather(*(one(b) for b in bodies))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--upstream", metavar="URL", help=UPSTREAM_HELP)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    if args.smoke:
        args.cases, args.rounds = 4, 1
    document = compile_bytes(CONTRACT_REVIEW_PROMPT.encode(), "contract_review.prompt").document
    examples = list(corpus.examples(7_000_001, args.cases, "bench"))
    cases = [
        {
            "id": e.case_id,
            "vars": {"input_pdf_text": e.text},
            "expected": {"keywords": [r.keyword for r in e.risks], "levels": [r.level for r in e.risks]},
        }
        for e in examples
    ]
    bodies = [{**request_body(document, c["vars"], model=MODEL), "temperature": 0, "max_tokens": 512} for c in cases]
    started = time.perf_counter()
    coherence(["warm"], ["up"])
    load_s = time.perf_counter() - started
    with (
        tempfile.TemporaryDirectory() as tmp,
        demo_server(args.upstream, max(8, args.concurrency), Path(tmp) / "vllm.log") as base_url,
    ):
        asyncio.run(plain(base_url, bodies[:8], args.concurrency))  # warm the server's compile caches
        cache = Path(tmp) / "embeddings"

        def ours(concurrency: int) -> dict[str, float]:
            inputs = [c["vars"]["input_pdf_text"] for c in cases]
            _, scores = run_and_score(
                base_url,
                cases,
                inputs,
                bodies,
                [document["output_schema"]] * len(cases),  # one schema per case: all render the same prompt
                concurrency=concurrency,
                timeout_s=120,
                retries=2,
                embedding_cache=cache,
            )
            return aggregate(scores)

        # The first eval of the eval set embeds its inputs; then plain and ours alternate, best of
        # `rounds` each: on this shared 2-core VM one plain run took anywhere from 2.4 to 4.2 s.
        cold_s = _timed(lambda: ours(args.concurrency))
        plain_s: list[float] = []
        ours_s: list[float] = []
        for _ in range(args.rounds):
            plain_s.append(_timed(lambda: asyncio.run(plain(base_url, bodies, args.concurrency))))
            ours_s.append(_timed(lambda: ours(args.concurrency)))
        metrics: dict[str, float] = {}
        seq_s = _timed(lambda: metrics.update(ours(1)))
    base_s, best_s = min(plain_s), min(ours_s)
    verdict = "met" if best_s <= 1.3 * base_s else "MISSED"
    speedup = seq_s / best_s
    print(f"{args.cases} cases, concurrency {args.concurrency}, demo model on vLLM CPU")
    rounds = ", ".join(f"({p:.2f} s, {o:.2f} s)" for p, o in zip(plain_s, ours_s, strict=True))
    ratios = sorted(o / p for p, o in zip(plain_s, ours_s, strict=True))
    print(f"  rounds (plain, ours): {rounds}; median of the rounds' ratios {ratios[len(ratios) // 2]:.2f}x")
    print(
        f"  baseline (plain client) {base_s:7.2f} s   ours (eval + metrics) {best_s:7.2f} s   "
        f"ratio {best_s / base_s:.2f}x   target <= 1.3x: {verdict}   (best of {args.rounds} each)"
    )
    print(
        f"  first eval of this eval set (its inputs embedded in the run, once per eval set and embedder): "
        f"{cold_s:.2f} s, ratio {cold_s / base_s:.2f}x"
    )
    print(
        f"  sequential   {seq_s:7.2f} s   speedup at concurrency {args.concurrency}: {speedup:.2f}x   "
        f"target >= 3x: {'met' if speedup >= 3 else 'MISSED'}"
    )
    print(f"  embedding model load (once per canary run, not in the figures above): {load_s:.1f} s")
    print(
        f"  metrics: schema_valid_rate {metrics['schema_valid_rate']:.3f}, task_recall {metrics['task_recall']:.3f},"
        f" latency p50/p95 {metrics['latency_p50_s']:.2f}/{metrics['latency_p95_s']:.2f} s (sequential run)"
    )


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
