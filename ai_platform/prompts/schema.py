"""The schema notation of docs/prompt-language.md: a JSON value read as a type, compiled to JSON Schema 2020-12.

    "string" | "integer" | "number" | "boolean"   -> {"type": ...}
    "T?"                                           -> optional (left out of `required`)
    "enum[a,b,c]"                                  -> {"enum": [...]}
    "T, description"                               -> adds "description"
    {"k": X, ...}                                  -> closed object, every non-optional key required
    [X]                                            -> {"type": "array", "items": X}

Errors carry a JSON-pointer-like path to the offending value; the .prompt parser
maps it to `path:line:col`.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from ai_platform.errors import SchemaNotationError

SCALARS = ("string", "integer", "number", "boolean")
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def compile_schema(value: Any) -> dict[str, Any]:
    """The JSON Schema document for a notation value, with `$schema` declared."""
    return {"$schema": DRAFT, **compile_notation(value)}


def compile_notation(value: Any) -> dict[str, Any]:
    """The JSON Schema for a notation value (no `$schema`: it may be embedded)."""
    schema, optional = _compile(value, ())
    if optional:
        raise SchemaNotationError((), "the top-level type cannot be optional")
    return schema


def _compile(value: Any, where: tuple[str | int, ...]) -> tuple[dict[str, Any], bool]:
    """(schema, optional) for one notation value."""
    if isinstance(value, str):
        return _scalar(value, where)
    if isinstance(value, dict):
        properties: dict[str, Any] = {}
        required = []
        for key, item in value.items():
            schema, optional = _compile(item, (*where, key))
            properties[key] = schema
            if not optional:
                required.append(key)
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}, False
    if isinstance(value, list):
        if len(value) != 1:
            raise SchemaNotationError(where, f"an array type takes exactly one element type, got {len(value)}")
        items, optional = _compile(value[0], (*where, 0))
        if optional:  # an element is there or not; "optional" would be silently meaningless
            raise SchemaNotationError((*where, 0), "an array's element type cannot be optional")
        return {"type": "array", "items": items}, False
    raise SchemaNotationError(where, f"expected a type name, object or array, got {json.dumps(value)}")


def _split_description(text: str) -> tuple[str, str | None]:
    """Split at the first comma outside brackets and JSON strings."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:i].strip(), text[i + 1 :].strip()
    return text.strip(), None


def _scalar(text: str, where: tuple[str | int, ...]) -> tuple[dict[str, Any], bool]:
    type_text, description = _split_description(text)
    optional = type_text.endswith("?")
    if optional:
        type_text = type_text[:-1].rstrip()
    if type_text.startswith("enum[") and type_text.endswith("]"):
        schema: dict[str, Any] = {"enum": _enum_items(type_text[5:-1], where)}
    elif type_text in SCALARS:
        schema = {"type": type_text}
    else:
        known = [*SCALARS, "enum[...]"]
        near = difflib.get_close_matches(type_text, known, n=1, cutoff=0.5)
        hint = f'; did you mean "{near[0]}"?' if near else f" (known: {', '.join(known)})"
        raise SchemaNotationError(where, f'unknown type "{type_text}"{hint}')
    if description:
        schema["description"] = description
    return schema, optional


def _enum_items(body: str, where: tuple[str | int, ...]) -> list[str]:
    items: list[str] = []
    i, n = 0, len(body)
    while True:
        while i < n and body[i] in " \t":
            i += 1
        if i < n and body[i] == '"':
            try:
                item, end = json.JSONDecoder().raw_decode(body, i)
            except json.JSONDecodeError:
                raise SchemaNotationError(where, "unterminated string in enum") from None
            if any("\ud800" <= ch <= "\udfff" for ch in item):  # not encodable as UTF-8
                raise SchemaNotationError(where, "lone surrogate in enum item")
            i = end
            while i < n and body[i] in " \t":
                i += 1
        else:
            end = body.find(",", i)
            end = n if end < 0 else end
            item, i = body[i:end].strip(), end
        if item == "":
            raise SchemaNotationError(where, "empty enum item")
        if item in items:
            raise SchemaNotationError(where, f'duplicate enum item "{item}"')
        items.append(item)
        if i >= n:
            return items
        if body[i] != ",":
            raise SchemaNotationError(where, f"expected ',' between enum items, got {body[i]!r}")
        i += 1
