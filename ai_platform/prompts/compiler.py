"""A .prompt file to its canonical compiled JSON (docs/prompt-language.md, "What the compiler produces").

The compiled document's sha256 is the prompt's version. Compilation is all or
nothing: the first broken rule raises a `PromptSourceError` with its position;
warnings (a declared variable that no message uses) are returned beside it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.config import PROMPT_NAME
from ai_platform.errors import (
    DuplicateKeyError,
    EngineCompatibilityError,
    EntryValueError,
    MalformedPlaceholderError,
    MissingEntryError,
    NotationError,
    PromptSourceError,
    SchemaNotationError,
    SpotlightSpecError,
    TemplateError,
    UnknownKeyError,
)
from ai_platform.prompts import engine, spotlight
from ai_platform.prompts.parser import Entry, parse_entries
from ai_platform.prompts.schema import DRAFT, compile_notation
from ai_platform.prompts.source import Source, Warning_
from ai_platform.prompts.template import pieces

ROLES = ("system", "user", "assistant")
SINGLE = ("name", "description", "params", "input_schema", "output_schema", "spotlight")
KEYS = (*SINGLE, *ROLES)
MAX_NAME = 64  # the OpenAI API's limit on response_format.json_schema.name


@dataclass(frozen=True)
class CompiledPrompt:
    """One compiled .prompt document and its version."""

    document: dict[str, Any]
    version: str  # sha256 of the canonical document
    warnings: tuple[Warning_, ...]

    @property
    def name(self) -> str:
        return str(self.document["name"])

    def canonical(self) -> bytes:
        return canonical_json(self.document)


def compile_file(path: Path, display_path: str | None = None) -> CompiledPrompt:
    """Compile a file; errors name `display_path` (default: the path as given)."""
    shown = display_path or PurePath(path).as_posix()
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PromptSourceError(shown, 1, 1, f"cannot read: {exc.strerror or exc}") from None
    return compile_bytes(data, shown)


def compile_bytes(data: bytes, path: str) -> CompiledPrompt:
    src = Source.decode(path, data)
    entries = _check_keys(src, parse_entries(src))
    first = {e.key: e for e in reversed(entries)}
    name = _name(src, first.get("name"), path)
    description = _string(src, first["description"]) if "description" in first else ""
    params = _params(src, first["params"]) if "params" in first else {}
    messages = [e for e in entries if e.key in ROLES]
    if not any(e.key == "user" for e in messages):
        raise src.error(MissingEntryError, len(src.text), "at least one `user` message is required")
    for entry in messages:
        _string(src, entry)
    variables, warnings = _variables(src, messages, first.get("input_schema"))
    output = _output_schema(src, first["output_schema"]) if "output_schema" in first else None
    request: dict[str, Any] = {}
    if output is not None:
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": output, "strict": True},
        }
    rendered = [{"role": e.key, "content": e.value} for e in messages]
    document = {
        "name": name,
        "description": description,
        "source": {"path": path, "sha256": sha256_hex(data)},
        "variables": variables,
        "messages": rendered,
        "params": params,
        "output_schema": output,
        "request": request,
    }
    if "spotlight" in first:  # absent: no key at all, so a prompt without it keeps its version
        marks = _spotlight(src, first["spotlight"], variables, messages)
        _add_note(rendered, marks)
        document["spotlight"] = marks
    return CompiledPrompt(document, version_of(document), tuple(warnings))


def version_of(document: dict[str, Any]) -> str:
    """A compiled prompt's version: the sha256 of its canonical JSON."""
    return sha256_hex(canonical_json(document))


def _suggest(word: str, known: tuple[str, ...]) -> str:
    near = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"; did you mean '{near[0]}'?" if near else f" (known: {', '.join(known)})"


def _check_keys(src: Source, entries: list[Entry]) -> list[Entry]:
    seen: dict[str, Entry] = {}
    for entry in entries:
        if entry.key not in KEYS:
            raise src.error(UnknownKeyError, entry.key_at, f"unknown key '{entry.key}'{_suggest(entry.key, KEYS)}")
        if entry.key in SINGLE and entry.key in seen:
            line, col = src.position(seen[entry.key].key_at)
            raise src.error(DuplicateKeyError, entry.key_at, f"duplicate key '{entry.key}' (first at {line}:{col})")
        seen.setdefault(entry.key, entry)
    return entries


def _string(src: Source, entry: Entry) -> str:
    if not isinstance(entry.value, str):
        raise src.error(EntryValueError, entry.value_at, f"'{entry.key}' must be a string")
    return entry.value


def _name(src: Source, entry: Entry | None, path: str) -> str:
    if entry is None:
        name = PurePath(path).stem
        if not re.match(PROMPT_NAME, name) or len(name) > MAX_NAME:
            raise src.error(EntryValueError, 0, f"the file name '{name}' is not a prompt name; add `name:`")
        return name
    name = _string(src, entry)
    if not re.match(PROMPT_NAME, name) or len(name) > MAX_NAME:
        raise src.error(EntryValueError, entry.value_at, f"name must be an identifier of at most {MAX_NAME} characters")
    return name


PARAMS = ("temperature", "max_tokens", "top_p", "stop", "seed")


def _params(src: Source, entry: Entry) -> dict[str, Any]:
    if not isinstance(entry.value, dict):
        raise src.error(EntryValueError, entry.value_at, "'params' must be an object")
    for key, value in entry.value.items():
        key_at, value_at = entry.positions.keys[(key,)], entry.positions.values[(key,)]
        if key not in PARAMS:
            raise src.error(UnknownKeyError, key_at, f"unknown param '{key}'{_suggest(key, PARAMS)}")
        problem = _param_problem(key, value)
        if problem:
            raise src.error(EntryValueError, value_at, f"params.{key}: {problem}")
    return entry.value


def _param_problem(key: str, value: Any) -> str | None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    integer = isinstance(value, int) and not isinstance(value, bool)
    if key == "temperature" and not (number and 0 <= value <= 2):
        return "must be a number from 0 to 2"
    if key == "top_p" and not (number and 0 < value <= 1):
        return "must be a number greater than 0 and at most 1"
    if key == "max_tokens" and not (integer and value >= 1):
        return "must be an integer of at least 1"
    if key == "seed" and not integer:
        return "must be an integer"
    if key == "stop":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or not all(isinstance(s, str) and s for s in items):
            return "must be a non-empty string or a non-empty array of non-empty strings"
    return None


def _notation(src: Source, entry: Entry) -> dict[str, Any]:
    try:
        return compile_notation(entry.value)
    except SchemaNotationError as exc:
        raise src.error(NotationError, entry.positions.of(exc.where), str(exc)) from None


def _variables(
    src: Source, messages: list[Entry], declared: Entry | None
) -> tuple[list[dict[str, Any]], list[Warning_]]:
    used: dict[str, int] = {}  # name -> offset of its first use
    for entry in messages:
        try:
            for piece in pieces(entry.template):
                if piece.variable:
                    used.setdefault(piece.variable, entry.char_offset(piece.at))
        except MalformedPlaceholderError as exc:
            raise src.error(TemplateError, entry.char_offset(exc.at), str(exc)) from None
    if declared is None:
        return [{"name": n, "required": True, "schema": {"type": "string"}} for n in used], []
    if not isinstance(declared.value, dict):
        raise src.error(EntryValueError, declared.value_at, "input_schema must be an object of variables")
    schema = _notation(src, declared)
    required = schema["required"]
    for name, at in used.items():
        if name not in schema["properties"]:
            raise src.error(TemplateError, at, f"placeholder '{name}' is not declared in input_schema")
    warnings = [
        src.warning(declared.positions.keys[(name,)], f"variable '{name}' is declared but no message uses it")
        for name in schema["properties"]
        if name not in used
    ]
    variables = [{"name": n, "required": n in required, "schema": s} for n, s in schema["properties"].items()]
    return variables, warnings


def _spotlight(src: Source, entry: Entry, variables: list[dict[str, Any]], messages: list[Entry]) -> dict[str, Any]:
    user = []
    for message in (m for m in messages if m.key == "user"):
        user += [p.variable for p in pieces(message.template) if p.variable and p.variable not in user]
    try:
        return spotlight.compile_spec(entry.value, [v["name"] for v in variables], user)
    except SpotlightSpecError as exc:
        if exc.where and exc.where[0] not in spotlight.KEYS:  # an unknown key: point at the key
            raise src.error(UnknownKeyError, entry.positions.keys.get(exc.where, entry.value_at), str(exc)) from None
        raise src.error(EntryValueError, entry.positions.values.get(exc.where, entry.value_at), str(exc)) from None


def _add_note(messages: list[dict[str, str]], spec: dict[str, Any]) -> None:
    """The sentence that says marked text is data, at the end of the first system message (or as one)."""
    if spec["mode"] == "off":
        return
    note = spec["note"].replace("{{", "\\{{")  # the note is literal text, never a placeholder
    system = next((m for m in messages if m["role"] == "system"), None)
    if system is None:
        messages.insert(0, {"role": "system", "content": note})
    else:
        system["content"] = f"{system['content']}\n{note}" if system["content"] else note


def _output_schema(src: Source, entry: Entry) -> dict[str, Any]:
    schema = _notation(src, entry)
    document = {"$schema": DRAFT, **schema}
    found = engine.problems(document, meta=False)
    if found:
        raise src.error(EngineCompatibilityError, entry.value_at, "; ".join(found))
    return document
