"""Compiled prompt + variables -> chat messages and the request body for vLLM.

Values are checked against each variable's schema before anything is rendered,
and inserted as text in one pass: a value is never read as a template.
"""

from __future__ import annotations

import json
from typing import Any

from ai_platform.errors import RenderError
from ai_platform.prompts.spotlight import mark
from ai_platform.prompts.template import substitute


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check_values(document: dict[str, Any], values: dict[str, Any]) -> dict[str, str]:
    """Every variable's text, or a RenderError naming the first bad variable."""
    from jsonschema import Draft202012Validator

    declared = {v["name"]: v for v in document["variables"]}
    unknown = sorted(values.keys() - declared.keys())
    if unknown:
        known = ", ".join(declared) or "none"
        raise RenderError(f"{document['name']}: unknown variable '{unknown[0]}' (declared: {known})")
    texts = {}
    for name, variable in declared.items():
        if name not in values:
            if variable["required"]:
                raise RenderError(f"{document['name']}: missing variable '{name}'")
            texts[name] = ""
            continue
        error = next(iter(Draft202012Validator(variable["schema"]).iter_errors(values[name])), None)
        if error is not None:
            where = "".join(f"[{p!r}]" for p in error.absolute_path)
            raise RenderError(f"{document['name']}: variable '{name}'{where}: {error.message}")
        texts[name] = _as_text(values[name])
    return texts


def render_messages(document: dict[str, Any], values: dict[str, Any], *, marked: bool = True) -> list[dict[str, str]]:
    """The chat messages, with each untrusted variable rendered as data when the prompt declares `spotlight`
    (prompts.spotlight). `marked=False` inserts the values as they are: the text the guards read."""
    texts = check_values(document, values)
    spec = document.get("spotlight")
    if marked and spec is not None and spec["mode"] != "off":
        texts = {k: mark(v, spec) if k in spec["untrusted"] else v for k, v in texts.items()}
    return [{"role": m["role"], "content": substitute(m["content"], texts.__getitem__)} for m in document["messages"]]


def input_text(document: dict[str, Any], values: dict[str, Any]) -> str:
    """The user messages' text with the values as the caller sent them, unmarked: what the input guards, the
    trust model and the canary's injection score read (the marks are for the model, not for them)."""
    return "\n".join(m["content"] for m in render_messages(document, values, marked=False) if m["role"] == "user")


def generation_order(schema: Any) -> Any:
    """The schema with each object's properties in generation order: required ones as declared, then the rest.

    xgrammar makes the model write properties in the order the schema lists them,
    and the canonical compiled document sorts keys; `required` keeps the declared
    order, so it restores it (seen: with sorted keys the demo model, trained on the
    declared order, degenerated on a case it otherwise answered).
    """
    if isinstance(schema, list):
        return [generation_order(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: generation_order(value) for key, value in schema.items()}
    properties = out.get("properties")
    if isinstance(properties, dict) and isinstance(out.get("required"), list):
        first = [k for k in out["required"] if k in properties]
        out["properties"] = {k: properties[k] for k in first + sorted(set(properties) - set(first))}
    return out


def request_body(document: dict[str, Any], values: dict[str, Any], model: str) -> dict[str, Any]:
    """The OpenAI-compatible /v1/chat/completions body: messages, params, response_format."""
    request = generation_order(document["request"])
    return {"model": model, "messages": render_messages(document, values), **document["params"], **request}


def parse_cli_values(document: dict[str, Any], pairs: list[str]) -> dict[str, Any]:
    """`k=v` pairs: a string variable takes v as is; any other type reads v as JSON."""
    declared = {v["name"]: v["schema"] for v in document["variables"]}
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise RenderError(f"--var {pair!r}: expected NAME=VALUE")
        schema = declared.get(name, {"type": "string"})
        if schema.get("type") == "string" or all(isinstance(e, str) for e in schema.get("enum", [0])):
            values[name] = text
            continue
        try:
            values[name] = json.loads(text)
        except ValueError:
            raise RenderError(f"variable '{name}': {text!r} is not JSON (its type is {schema.get('type')})") from None
    return values


def check_reply(content: str, schema: dict[str, Any] | None) -> tuple[bool, Any]:
    """Whether a reply is what the prompt promises, and the reply as the caller should see it.

    With an output schema: valid JSON that the schema (2020-12) accepts, returned parsed
    (None when it is not JSON). Without one (free text): any reply that is not blank,
    returned as it is. The canary and the gateway both judge replies by this one rule.
    """
    from jsonschema import Draft202012Validator

    if schema is None:
        return bool(content.strip()), content
    try:
        answer = json.loads(content)
    except ValueError:
        return False, None
    return Draft202012Validator(schema).is_valid(answer), answer
