"""Task recall: how many of a case's expected risks the reply found.

An eval case's `expected` names the risks as parallel lists, `keywords` and
(optionally) `levels`. A risk counts as found when some risk point in the reply
mentions its keyword (in point, basis or suggestion) at the expected level.
A case that expects no risks scores 1.0 when the reply finds none, else 0.0.

A case whose `expected` has `fields` (an object) is a classification or an
extraction instead: it scores the share of those top-level fields the reply has
with exactly that value (a clause's kind: 1.0 or 0.0).
"""

from __future__ import annotations

import json
from typing import Any


def risk_points(answer: Any) -> list[dict[str, Any]]:
    points = answer.get("risk_points") if isinstance(answer, dict) else None
    return [p for p in points if isinstance(p, dict)] if isinstance(points, list) else []


def field_recall(fields: dict[str, Any], answer: Any) -> float:
    got = answer if isinstance(answer, dict) else {}

    def same(a: Any, b: Any) -> bool:  # as JSON values: true is not 1
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

    return sum(key in got and same(got[key], value) for key, value in fields.items()) / len(fields)


def task_recall(expected: dict[str, Any], answer: Any) -> float:
    fields = expected.get("fields")
    if isinstance(fields, dict) and fields:
        return field_recall(fields, answer)
    keywords = list(expected.get("keywords") or [])
    levels = list(expected.get("levels") or [None] * len(keywords))
    found = risk_points(answer)
    if not keywords:
        return 1.0 if not found else 0.0
    text = [" ".join(str(p.get(k, "")) for k in ("point", "basis", "suggestion")) for p in found]
    hits = 0
    for keyword, level in zip(keywords, levels, strict=False):
        hits += any(
            keyword in t and (level is None or p.get("level") == level) for t, p in zip(text, found, strict=True)
        )
    return hits / len(keywords)
