"""The article's metric on the demo's own held-out contracts: the miss rate of key risks, without and with the loop.

Without the loop: the model alone. Each contract goes straight to the live vLLM
with the request the gateway would send (greedy decoding), and every expected
risk its reply does not raise is missed.

With the loop: the same contracts through the gateway, which scores each reply
with the model's champion trust model, asks one under the threshold again with
the clauses the retrieval corpus finds, and marks it `needs_review` if it is
still under. A reviewer reads every flagged reply, so a risk is missed only when
the reply that reached the caller lacks it and was not flagged.

The review load (the share of replies flagged) is reported beside it: flagging
every reply would make the miss rate zero and save no reviewer any time.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from ai_platform.demo import corpus
from ai_platform.evaluation.recall import task_recall
from ai_platform.prompts.render import check_reply, request_body

HELD_OUT_SEED = 5_000_003  # a seed stream neither training, the eval set, the attack set nor the reviewers use


@dataclass(frozen=True)
class MissRate:
    contracts: int
    risks: int
    missed_alone: int
    missed_with_loop: int
    flagged: int
    reasked: int
    improved: int

    def lines(self) -> list[str]:
        def rate(n: int, of: int) -> str:
            return f"{n / of:.1%} ({n}/{of})" if of else "n/a"

        return [
            f"key risks missed, model alone:        {rate(self.missed_alone, self.risks)}",
            f"key risks missed, with the loop:      {rate(self.missed_with_loop, self.risks)} (not flagged for review)",
            f"review load: replies flagged          {rate(self.flagged, self.contracts)};"
            f" re-asked with clauses {self.reasked}, improved {self.improved}",
        ]


def missed(example: corpus.Example, output: Any) -> int:
    expected = {"keywords": [r.keyword for r in example.risks], "levels": [r.level for r in example.risks]}
    return round((1 - task_recall(expected, output)) * len(example.risks)) if example.risks else 0


def _post(client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    for _ in range(30):  # a polite client: over the admission budget, wait as long as the gateway says
        reply = client.post(url, json=body, headers=headers, timeout=180)
        if reply.status_code != 429:
            break
        time.sleep(float(reply.headers.get("retry-after", "1")))
    answer: dict[str, Any] = reply.json()
    return answer


def measure(
    gateway: str,
    upstream: str,
    document: dict[str, Any],
    model: str,
    headers: dict[str, str],
    *,
    count: int = 120,
    seed: int = 0,
    workers: int = 4,
) -> MissRate:
    """`count` held-out contracts, once to the model alone (`upstream`, a vLLM base URL), once through `gateway`."""
    examples = corpus.examples(seed + HELD_OUT_SEED, count, "heldout")

    def both(example: corpus.Example) -> tuple[int, int, bool, str | None]:
        variables = {"input_pdf_text": example.text}
        with httpx.Client() as client:
            body = request_body(document, variables, model=model)
            alone = _post(client, f"{upstream}/v1/chat/completions", body, {})
            content = alone["choices"][0]["message"]["content"] if "choices" in alone else ""
            _, answer = check_reply(content, document["output_schema"])
            looped = _post(client, f"{gateway}/v1/prompts/{document['name']}:run", {"variables": variables}, headers)
        flagged = bool(looped.get("needs_review"))
        retrieval = looped.get("retrieval") or {}
        left = 0 if flagged else missed(example, looped.get("output"))
        return missed(example, answer), left, flagged, retrieval.get("outcome")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(both, examples))
    return MissRate(
        contracts=len(examples),
        risks=sum(len(e.risks) for e in examples),
        missed_alone=sum(r[0] for r in results),
        missed_with_loop=sum(r[1] for r in results),
        flagged=sum(r[2] for r in results),
        reasked=sum(r[3] is not None for r in results),
        improved=sum(r[3] == "improved" for r in results),
    )
