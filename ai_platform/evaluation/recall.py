"""Task recall: how many of a case's expected risks the reply found.

An eval case's `expected` names the risks as parallel lists, `keywords` and
(optionally) `levels`. A risk counts as found when some risk point in the reply
mentions its keyword (in point, basis or suggestion) at the expected level.
A case that expects no risks scores 1.0 when the reply finds none, else 0.0.

A case whose `expected` has `fields` (a non-empty object; anything else is an
eval-set error when the cases load) is a classification or an extraction instead:
it scores the share of those top-level fields the reply has with that value as a
JSON value (`same`: true is not 1, 1000 is 1000.0; a clause's kind: 1.0 or 0.0).
"""

from __future__ import annotations

from typing import Any


def risk_points(answer: Any) -> list[dict[str, Any]]:
    points = answer.get("risk_points") if isinstance(answer, dict) else None
    return [p for p in points if isinstance(p, dict)] if isinstance(points, list) else []


def field_recall(fields: dict[str, Any], answer: Any) -> float:
    got = answer if isinstance(answer, dict) else {}

    return sum(key in got and same(got[key], value) for key, value in fields.items()) / len(fields)


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: true is not 1, 1000 is 1000.0, objects and arrays compared member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


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
