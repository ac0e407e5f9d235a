"""Guards that act: the injection score of an input, validated PII in a reply, a reply that leaks its system
prompt, what is stored of an input.

The policy is the model spec's `guards` (config.Guards), carried to the gateway by
the rollout state. Each decision is an `Action`; every action the gateway takes
becomes a `guard_actions` row (scores, never the raw text).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ai_platform.config import Guards
from ai_platform.detectors.leak import find_leak, leak_index
from ai_platform.detectors.pii import DEFAULT_PHONE_REGIONS, Finding, find_pii


@dataclass(frozen=True)
class Action:
    guard: str  # pii | injection | prompt_leak
    action: str  # block | mask | log
    reason: str
    scores: dict[str, Any]

    def row(self, *, at: datetime, key: str | None, model: str, prompt: str | None, route: str) -> list[Any]:
        """The audit row, in warehouse.GUARD_ACTION_COLUMNS order."""
        return [
            uuid.uuid4().hex,
            at,
            key,
            model,
            prompt,
            route,
            self.guard,
            self.action,
            self.reason,
            json.dumps(self.scores),
        ]


def check_input(guards: Guards, injection: float) -> Action | None:
    """The injection guard on an input's score; None when it does not fire."""
    rule = guards.injection
    if injection < rule.threshold:
        return None
    reason = f"prompt-injection score {injection:.2f} is at or over {rule.threshold}"
    return Action("injection", rule.action, reason, {"injection": round(injection, 4)})


def check_output(guards: Guards, content: str, found: list[Finding] | None = None) -> tuple[str, Action | None]:
    """The PII guard on a reply: the text the caller may see (masked where PII was found), and the action.
    `found`: the reply's PII findings where scoring found them already."""
    found = find_pii(content, guards.phone_regions) if found is None else found
    if not found:
        return content, None
    kinds = sorted({f.kind for f in found})
    reason = f"the reply carried validated PII ({', '.join(kinds)})"
    action = Action("pii", guards.pii, reason, {"pii": kinds, "count": len(found)})
    return (content if guards.pii == "log" else mask(content, found)), action


def check_leak(guards: Guards, document: dict[str, Any] | None, version: str, content: str) -> Action | None:
    """The prompt-leak guard on a prompt run's reply: an action when it repeats `guards.leak.min_tokens` or more
    consecutive tokens of the compiled prompt's system text (detectors/leak.py), else None. A call without a
    compiled prompt (the OpenAI API: its system prompt is the caller's own) has nothing to leak."""
    if document is None:
        return None
    rule = guards.leak
    found = find_leak(leak_index(document, rule.min_tokens, version), content)
    if found is None:
        return None
    reason = f"the reply repeats {found.tokens} consecutive tokens of the system prompt (at least {rule.min_tokens})"
    return Action("prompt_leak", rule.action, reason, {"tokens": found.tokens, "runs": found.runs})


def mask(text: str, found: list[Finding] | None = None, phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> str:
    """`text` with each PII finding replaced by `[PII:kind]`."""
    out, last = [], 0
    for finding in found if found is not None else find_pii(text, phone_regions):
        out.append(text[last : finding.start])
        out.append(f"[PII:{finding.kind}]")
        last = finding.end
    out.append(text[last:])
    return "".join(out)


def stored_input(guards: Guards, variables: dict[str, Any]) -> str | None:
    """What `generations.input` keeps of a request's variables, by the spec's `store_inputs`."""
    if guards.store_inputs == "none":
        return None
    if guards.store_inputs == "masked":
        variables = {k: mask(v, None, guards.phone_regions) if isinstance(v, str) else v for k, v in variables.items()}
    return json.dumps(variables, ensure_ascii=False)
