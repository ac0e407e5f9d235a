"""Placeholders in message text: `{{ name }}` inserts a variable, `\\{{` is a literal `{{`.

Rendering is a single left-to-right pass over the template; inserted values are
never scanned again, so a value that contains `{{x}}` stays literal text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ai_platform.errors import MalformedPlaceholderError

PLACEHOLDER = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}\}")


@dataclass(frozen=True)
class Piece:
    """Literal text, or (when `variable` is set) a placeholder; `at` is its index in the template."""

    text: str
    at: int
    variable: str | None = None


def pieces(template: str) -> Iterator[Piece]:
    """Split a template into literal pieces and placeholders; raise MalformedPlaceholderError."""
    i, literal, literal_at = 0, [], 0
    while i < len(template):
        if template.startswith("\\{{", i):
            literal.append("{{")
            i += 3
        elif template.startswith("{{", i):
            match = PLACEHOLDER.match(template, i)
            if not match:
                raise MalformedPlaceholderError(i)
            if literal:
                yield Piece("".join(literal), literal_at)
            yield Piece(match.group(0), i, match.group(1))
            i, literal, literal_at = match.end(), [], match.end()
        else:
            literal.append(template[i])
            i += 1
    if literal:
        yield Piece("".join(literal), literal_at)


def substitute(template: str, value_of: Callable[[str], str]) -> str:
    return "".join(value_of(p.variable) if p.variable else p.text for p in pieces(template))
