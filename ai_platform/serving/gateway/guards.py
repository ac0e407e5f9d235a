"""Guards that act: the injection score of an input, validated PII in a reply, what is stored of an input.

The policy is the model spec's `guards` (config.Guards), carried to the gateway by
the rollout state. Each decision is an `Action`; every action the gateway takes
becomes a `guard_actions` row (scores, never the raw text).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ai_platform.config import Guards
from ai_platform.detectors.pii import Finding, find_pii


@dataclass(frozen=True)
class Action:
    guard: str  # pii | injection
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
    found = find_pii(content) if found is None else found
    if not found:
        return content, None
    kinds = sorted({f.kind for f in found})
    reason = f"the reply carried validated PII ({', '.join(kinds)})"
    action = Action("pii", guards.pii, reason, {"pii": kinds, "count": len(found)})
    return (content if guards.pii == "log" else mask(content, found)), action


def mask(text: str, found: list[Finding] | None = None) -> str:
    """`text` with each PII finding replaced by `[PII:kind]`."""
    out, last = [], 0
    for finding in found if found is not None else find_pii(text):
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
        variables = {k: mask(v) if isinstance(v, str) else v for k, v in variables.items()}
    return json.dumps(variables, ensure_ascii=False)
