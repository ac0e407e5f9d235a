"""Scoring a reply on the request path: the reply checks the canary also runs, and the champion trust model."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ai_platform.detectors.pii import DEFAULT_PHONE_REGIONS, find_pii
from ai_platform.detectors.text import seq_rep_n
from ai_platform.errors import PlatformError, TrustModelFileError
from ai_platform.prompts.render import check_reply
from ai_platform.serving.gateway.generations import WAREHOUSE_LOCK
from ai_platform.serving.state import ModelState
from ai_platform.trust.clauses import ClauseIndex
from ai_platform.trust.features import features
from ai_platform.trust.model import TrustModel
from ai_platform.trust.train import CHAMPION
from ai_platform.warehouse import at
from ai_platform.warehouse.ducklake import SCHEME as LAKE

CHAMPION_TTL_S = 15.0
LOG = logging.getLogger("ai_platform.gateway")


class TrustChampions:
    """The champion trust model of each served model, as its warehouse records it, cached by its file and
    looked up every 15 s at most: each look holds the warehouse file briefly, and pipeline runs write to it."""

    def __init__(self) -> None:
        self.files: dict[str, TrustModel] = {}
        self.checked: dict[tuple[str, str], tuple[float, TrustModel | None]] = {}

    def champion(self, warehouse: str, model: str) -> TrustModel | None:
        if not warehouse or not (warehouse.startswith(LAKE) or Path(warehouse).is_file()):
            return None
        checked, found = self.checked.get((warehouse, model), (0.0, None))
        if time.monotonic() - checked < CHAMPION_TTL_S:
            return found
        found = self._lookup(warehouse, model)
        self.checked[(warehouse, model)] = (time.monotonic(), found)
        return found

    def _lookup(self, warehouse: str, model: str) -> TrustModel | None:
        try:
            with WAREHOUSE_LOCK:
                _, rows = at(warehouse, lock_timeout_s=2).query(CHAMPION, [model])
        except PlatformError:
            return None
        if not rows:
            return None
        model, path = rows[0]
        if path not in self.files:  # the path names the model's digest
            try:
                self.files[path] = TrustModel.from_row(model, path)
            except TrustModelFileError as exc:  # e.g. of an older feature set: no score beats a misread one
                LOG.error("%s: its champion trust model is not used: %s", model, exc)
                return None
        return self.files[path]


@dataclass(frozen=True)
class Answer:
    """What a model server answered, whichever API it was asked through (and whether streamed or not)."""

    content: str
    finish_reason: str | None
    usage: dict[str, Any] = field(default_factory=dict)
    logprobs: tuple[float, ...] = ()  # of each generated token, where the request asked for them


def answer_of(data: dict[str, Any]) -> Answer:
    """The first choice of a chat or text completion (vLLM's JSON answer)."""
    choice = data["choices"][0]
    message = choice.get("message")
    content = (message or {}).get("content") if "message" in choice else choice.get("text")
    logprobs = choice.get("logprobs")
    tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
    return Answer(
        content or "",
        choice.get("finish_reason"),
        data.get("usage") or {},
        tuple(t["logprob"] for t in tokens or [] if isinstance(t, dict) and "logprob" in t),
    )


def score_reply(
    state: ModelState,
    output_schema: dict[str, Any] | None,
    answer: Answer,
    user_text: str,
    injection: float,
    latency: float,
    trust_model: TrustModel | None,
    phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS,
    clauses: ClauseIndex | None = None,
) -> dict[str, Any]:
    """One answer, checked and scored (`injection`: the input's score, as the input guard found it;
    `clauses`: the retrieval corpus's index, for the trust features); `needs_review` when the trust model
    scores it under its review threshold (platform.yaml's `feedback.trust_threshold` for a model without one).
    `found` is the validated PII in it, for the output guard. `latency` is logged with the reply, never a trust
    feature."""
    content = answer.content
    valid, output = check_reply(content, output_schema)
    logprobs = answer.logprobs
    found = find_pii(content, phone_regions)
    metrics = {
        "schema_valid": valid,
        "seq_rep_4": seq_rep_n(content, 4),
        "pii": [f.kind for f in found],
        "injection": injection,
        "output_tokens": answer.usage.get("completion_tokens"),
        "mean_logprob": sum(logprobs) / len(logprobs) if logprobs else None,
        "min_logprob": min(logprobs) if logprobs else None,
        "color": state.live.color if state.live else None,
    }
    row = {
        "input": user_text,
        "output": content,
        "metrics": metrics,
        "finish_reason": answer.finish_reason,
        "latency_s": latency,
    }
    # platform.yaml's threshold serves a trust model without its own review threshold
    trust, review = trust_model.judge(features(row, clauses), state.trust_threshold) if trust_model else (None, False)
    return {
        "content": content,
        "output": output,
        "valid": valid,
        "metrics": metrics,
        "found": found,
        "trust_score": trust,
        "needs_review": review,
        "finish_reason": answer.finish_reason,
    }
