"""Task recall: how many of a case's expected risks the reply found.

An eval case's `expected` names the risks as parallel lists, `keywords` and
(optionally) `levels`. A risk counts as found when some risk point in the reply
mentions its keyword (in point, basis or suggestion) at the expected level.
A case that expects no risks scores 1.0 when the reply finds none, else 0.0.
"""

from __future__ import annotations

from typing import Any


def risk_points(answer: Any) -> list[dict[str, Any]]:
    points = answer.get("risk_points") if isinstance(answer, dict) else None
    return [p for p in points if isinstance(p, dict)] if isinstance(points, list) else []


def task_recall(expected: dict[str, Any], answer: Any) -> float:
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
