"""ai_platform.prompts.engine: the lint that proves an output schema will be served by vLLM's xgrammar backend."""

from __future__ import annotations

from typing import Any

import pytest

from ai_platform.prompts import engine
from ai_platform.prompts.compiler import compile_bytes

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _in_object(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as the property `name` of a closed object, so its pointer is `/properties/<name>`."""
    return {
        "$schema": DRAFT,
        "type": "object",
        "properties": {name: schema},
        "required": [name],
        "additionalProperties": False,
    }


REJECTED = [
    ("multipleOf-number", {"type": "number", "multipleOf": 0.5}, "multipleOf"),
    ("multipleOf-integer", {"type": "integer", "multipleOf": 2}, "multipleOf"),
    ("uniqueItems", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems"),
    ("contains", {"type": "array", "contains": {"type": "string"}}, "contains"),
    ("minContains", {"type": "array", "contains": {"type": "string"}, "minContains": 2}, "minContains"),
    ("unknown-format", {"type": "string", "format": "iban"}, "format"),
    ("pattern+maxLength", {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}, "pattern/format"),
    ("format+minLength", {"type": "string", "format": "email", "minLength": 3}, "pattern/format"),
    (
        "propertyNames+properties",
        {"type": "object", "propertyNames": {"pattern": "^a"}, "properties": {"a": {"type": "string"}}},
        "propertyNames together with properties",
    ),
    (
        "patternProperties+properties",
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}, "properties": {"a": {"type": "string"}}},
        "patternProperties together with properties",
    ),
    ("allOf-2", {"allOf": [{"type": "string"}, {"type": "string"}]}, "allOf"),
]


@pytest.mark.parametrize(("schema", "word"), [pytest.param(s, w, id=i) for i, s, w in REJECTED])
def test_each_rejected_feature_is_found_at_its_pointer(schema: dict[str, Any], word: str) -> None:
    found = engine.unsupported_features(_in_object("f", schema))
    assert found, "not reported"
    assert all(pointer == "/properties/f" for pointer, _ in found), found
    assert any(word in reason for _, reason in found), found
    problems = engine.problems(_in_object("f", schema))
    assert problems and all(p.startswith("/properties/f: ") for p in problems), problems


def test_pointer_of_a_deeply_nested_feature() -> None:
    schema = _in_object("rows", {"type": "array", "items": _in_object("n", {"type": "number", "multipleOf": 3})})
    assert engine.unsupported_features(schema) == [
        ("/properties/rows/items/properties/n", "multipleOf is not supported by xgrammar")
    ]


def test_pointer_escapes_slash_and_tilde() -> None:
    schema = _in_object("a/b~c", {"type": "integer", "multipleOf": 2})
    assert [p for p, _ in engine.unsupported_features(schema)] == ["/properties/a~1b~0c"]


def test_pointer_inside_an_array_of_schemas() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "array", "uniqueItems": True}]}
    assert [p for p, _ in engine.unsupported_features(schema)] == ["/anyOf/1"]


def test_pointer_of_the_root_is_the_empty_string() -> None:
    found = engine.unsupported_features({"allOf": [{"type": "string"}, {"maxLength": 3}]})
    assert [p for p, _ in found] == [""]


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": DRAFT, "type": "string"},
        _in_object("a", {"type": "string", "format": "date-time"}),
        _in_object("a", {"type": "string", "pattern": "^[0-9]+$"}),
        _in_object("a", {"type": "string", "maxLength": 5}),
        _in_object("a", {"type": "array", "items": {"type": "integer"}, "minItems": 1}),
        _in_object("a", {"enum": ["高", "中", "低"], "description": "level"}),
        {"allOf": [{"type": "string"}]},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    ],
    ids=["string", "known-format", "pattern-alone", "maxLength-alone", "array", "enum", "allOf-1", "patternProps-1"],
)
def test_a_plain_schema_has_no_problems(schema: dict[str, Any]) -> None:
    assert engine.unsupported_features(schema) == []
    assert engine.problems(schema) == []


def test_multiple_of_on_a_string_is_not_a_problem_for_the_rule() -> None:
    """multipleOf only constrains numbers; vLLM's rule looks at numeric types only."""
    assert engine.unsupported_features({"type": "string", "multipleOf": 2}) == []


@pytest.mark.parametrize(
    ("schema", "where"),
    [({"type": 5}, "/type"), ({"type": "object", "required": "a"}, "/required"), ({"minLength": -1}, "/minLength")],
)
def test_an_invalid_json_schema_is_reported(schema: dict[str, Any], where: str) -> None:
    problems = engine.problems(schema)
    assert len(problems) == 1
    assert problems[0].startswith(f"not a valid JSON Schema 2020-12 at {where}: ")


def test_every_problem_is_reported_not_just_the_first() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number", "multipleOf": 2},
            "b": {"type": "array", "uniqueItems": True},
        },
    }
    assert [p.split(":")[0] for p in engine.problems(schema)] == ["/properties/a", "/properties/b"]


def test_notation_schemas_pass_the_lint() -> None:
    """Everything the notation can express is served: the reference schema has no problems."""
    source = (
        b'user: "x"\noutput_schema: {"risk_points": [{"point": "string", "level": "enum[\xe9\xab\x98,b]", '
        b'"n": "integer?, count"}]}\n'
    )
    document = compile_bytes(source, "ok.prompt").document
    assert engine.problems(document["output_schema"]) == []


def test_a_second_command_takes_xgrammars_verdict_from_the_machines_cache_without_importing_it(tmp_path) -> None:
    """Importing xgrammar costs every `ai-platform` command that compiles a prompt ~1.8 s (torch, transformers):
    its verdict on a schema is kept in the machine's cache, so the next process gives the same verdicts, an
    xgrammar refusal included (without its log's clock time), and never imports it."""
    import json
    import os
    import subprocess
    import sys

    schemas = [{"type": "object", "properties": {"a": {"type": "string"}}}, {"$ref": "#/$defs/nope"}]
    script = (
        "import json, sys\nfrom ai_platform.prompts import engine\n"
        f"found = [engine.problems(s) for s in {schemas!r}]\n"
        "print(json.dumps([found, 'xgrammar' in sys.modules]))"
    )
    env = {**os.environ, "AI_PLATFORM_CACHE": str(tmp_path)}

    def command() -> list[Any]:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        result: list[Any] = json.loads(out.stdout.strip().splitlines()[-1])
        return result

    (first, imported), (again, imported_again) = command(), command()
    assert first == again and (imported, imported_again) == (True, False)
    assert first[0] == [] and len(first[1]) == 1
    assert first[1][0].startswith("xgrammar cannot compile the schema: /project/cpp/json_schema_converter.cc")
    assert first[1][0].endswith("Cannot find field $defs in #/$defs/nope")  # no clock time in it
