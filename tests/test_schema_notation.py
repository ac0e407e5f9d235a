"""The schema notation of docs/prompt-language.md on the reference case (the full parser is issue 4)."""

from __future__ import annotations

import jsonschema
import pytest

from ai_platform.errors import SchemaNotationError
from ai_platform.prompts.schema import DRAFT, compile_schema

REFERENCE = {"risk_points": [{"point": "string", "level": "enum[高,中,低]", "basis": "string", "suggestion": "string"}]}
GOOD = {"risk_points": [{"point": "付款", "level": "高", "basis": "民法典第五百七十七条", "suggestion": "明确期限"}]}


def test_reference_schema_shape() -> None:
    schema = compile_schema(REFERENCE)
    assert schema["$schema"] == DRAFT
    item = schema["properties"]["risk_points"]["items"]
    assert item["required"] == ["point", "level", "basis", "suggestion"]
    assert item["additionalProperties"] is False
    assert item["properties"]["level"] == {"enum": ["高", "中", "低"]}


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(level="严重"),
        lambda r: r.pop("basis"),
        lambda r: r.update(extra="x"),
    ],
    ids=["bad-level", "missing-basis", "extra-key"],
)
def test_reference_schema_accepts_and_rejects(change) -> None:
    validator = jsonschema.Draft202012Validator(compile_schema(REFERENCE))
    assert validator.is_valid(GOOD)
    bad = {"risk_points": [dict(GOOD["risk_points"][0])]}
    change(bad["risk_points"][0])
    assert not validator.is_valid(bad)


def test_optional_description_and_quoted_enum() -> None:
    schema = compile_schema({"a": "integer?, how many", "b": 'enum["x,y", z], pick one'})
    assert schema["required"] == ["b"]
    assert schema["properties"]["a"] == {"type": "integer", "description": "how many"}
    assert schema["properties"]["b"] == {"enum": ["x,y", "z"], "description": "pick one"}


@pytest.mark.parametrize(
    ("notation", "message"),
    [
        ({"a": "strng"}, 'unknown type "strng"; did you mean "string"?'),
        ({"a": "enum[a,,b]"}, "empty enum item"),
        ({"a": "enum[a,a]"}, 'duplicate enum item "a"'),
        ({"a": []}, "exactly one element type, got 0"),
        ({"a": ["string", "string"]}, "exactly one element type, got 2"),
        ({"a": 3}, "expected a type name"),
    ],
)
def test_notation_errors(notation, message) -> None:
    with pytest.raises(SchemaNotationError, match=message) as info:
        compile_schema(notation)
    assert info.value.where[0] == "a"
