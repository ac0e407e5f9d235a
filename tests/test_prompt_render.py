"""ai_platform.prompts.render: variables -> messages, checked against the input schema, never re-templated."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ai_platform.artifacts import canonical_json
from ai_platform.errors import PromptError, RenderError
from ai_platform.prompts.compiler import compile_bytes
from ai_platform.prompts.render import check_values, parse_cli_values, render_messages, request_body

TYPED = rb"""input_schema: {
  "doc": "string", "n": "integer?", "tags": ["string"], "meta": {"k": "string"}, "lang": "enum[zh,en]", "ok": "boolean?"
}
system: "n={{n}} tags={{tags}} meta={{meta}} ok={{ok}}"
user: "{{ doc }} in {{lang}} \\{{doc}}"
params: {"temperature": 0, "max_tokens": 64, "stop": ["END"]}
output_schema: {"answer": "string"}
"""
UNTYPED = b'system: "You review {{kind}}."\nuser: "{{doc}}"\n'
REQUIRED: dict[str, Any] = {"doc": "text", "tags": [], "meta": {"k": "v"}, "lang": "zh"}


def _document(source: bytes = TYPED, path: str = "t.prompt") -> dict[str, Any]:
    return compile_bytes(source, path).document


def test_variables_become_messages() -> None:
    messages = render_messages(_document(UNTYPED), {"kind": "contracts", "doc": "合同全文"})
    assert messages == [
        {"role": "system", "content": "You review contracts."},
        {"role": "user", "content": "合同全文"},
    ]


def test_escaped_placeholder_renders_as_literal_braces() -> None:
    messages = render_messages(_document(), REQUIRED)
    assert messages[1]["content"] == "text in zh {{doc}}"


def test_missing_variable_is_an_error_naming_it() -> None:
    with pytest.raises(RenderError, match=r"missing variable 'kind'") as info:
        render_messages(_document(UNTYPED), {"doc": "x"})
    assert isinstance(info.value, PromptError)


@pytest.mark.parametrize(
    ("name", "value"),
    [("doc", 3), ("n", "3"), ("n", True), ("n", 1.5), ("n", None), ("lang", "fr"), ("tags", "a"), ("tags", [1])],
)
def test_ill_typed_variable_is_an_error_naming_it(name: str, value: Any) -> None:
    with pytest.raises(RenderError, match=rf"variable '{name}'"):
        render_messages(_document(), {**REQUIRED, name: value})


def test_ill_typed_nested_value_names_the_variable() -> None:
    with pytest.raises(RenderError, match=r"variable 'meta'"):
        render_messages(_document(), {**REQUIRED, "meta": {"k": 1}})
    with pytest.raises(RenderError, match=r"variable 'meta'"):
        render_messages(_document(), {**REQUIRED, "meta": {"k": "v", "extra": "x"}})


def test_untyped_placeholder_must_be_a_string() -> None:
    with pytest.raises(RenderError, match=r"variable 'doc'"):
        render_messages(_document(UNTYPED), {"kind": "k", "doc": 3})


def test_unknown_variable_is_an_error_naming_it() -> None:
    with pytest.raises(RenderError, match=r"unknown variable 'zz'"):
        render_messages(_document(UNTYPED), {"kind": "k", "doc": "d", "zz": "?"})


@pytest.mark.parametrize("value", ["{{kind}}", "{{ doc }}", "\\{{kind}}", "{{", "}} {{x"])
def test_a_value_is_never_read_as_a_template(value: str) -> None:
    messages = render_messages(_document(UNTYPED), {"kind": "k", "doc": value})
    assert messages[1]["content"] == value


def test_optional_variable_absent_renders_empty() -> None:
    messages = render_messages(_document(), REQUIRED)
    assert messages[0]["content"] == 'n= tags=[] meta={"k":"v"} ok='


def test_non_string_values_are_inserted_as_compact_json() -> None:
    values = {**REQUIRED, "n": 3, "tags": ["a", "中"], "meta": {"k": "v w"}, "ok": True}
    messages = render_messages(_document(), values)
    assert messages[0]["content"] == 'n=3 tags=["a","中"] meta={"k":"v w"} ok=true'


def test_check_values_returns_every_variable_as_text() -> None:
    texts = check_values(_document(), {**REQUIRED, "n": 0})
    assert texts == {"doc": "text", "n": "0", "tags": "[]", "meta": '{"k":"v"}', "lang": "zh", "ok": ""}


def test_request_body_carries_messages_params_and_response_format() -> None:
    document = _document()
    body = request_body(document, REQUIRED, model="contract-reviewer")
    assert body["model"] == "contract-reviewer"
    assert body["messages"] == render_messages(document, REQUIRED)
    assert body["temperature"] == 0
    assert body["max_tokens"] == 64
    assert body["stop"] == ["END"]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "t", "schema": document["output_schema"], "strict": True},
    }
    assert set(body) == {"model", "messages", "temperature", "max_tokens", "stop", "response_format"}


def test_request_body_without_output_schema_has_no_response_format() -> None:
    body = request_body(_document(UNTYPED), {"kind": "k", "doc": "d"}, model="m")
    assert set(body) == {"model", "messages"}


def test_request_body_checks_values_too() -> None:
    with pytest.raises(RenderError, match=r"missing variable 'doc'"):
        request_body(_document(UNTYPED), {"kind": "k"}, model="m")


def test_parse_cli_values_reads_non_string_types_as_json() -> None:
    pairs = ["doc=3", "n=3", 'tags=["a"]', "lang=zh", "ok=true", 'meta={"k": "v"}']
    values = parse_cli_values(_document(), pairs)
    assert values == {"doc": "3", "n": 3, "tags": ["a"], "lang": "zh", "ok": True, "meta": {"k": "v"}}
    assert render_messages(_document(), values)[0]["content"] == 'n=3 tags=["a"] meta={"k":"v"} ok=true'


def test_parse_cli_values_keeps_everything_after_the_first_equals() -> None:
    assert parse_cli_values(_document(UNTYPED), ["doc=a=b", "kind="]) == {"doc": "a=b", "kind": ""}


def test_parse_cli_values_rejects_non_json_for_a_typed_variable() -> None:
    with pytest.raises(RenderError, match=r"variable 'n'"):
        parse_cli_values(_document(), ["n=abc"])


def test_parse_cli_values_rejects_a_pair_without_equals() -> None:
    with pytest.raises(RenderError, match=r"NAME=VALUE"):
        parse_cli_values(_document(), ["doc"])


def test_request_lists_properties_in_declared_order_even_from_the_canonical_document() -> None:
    """xgrammar generates properties in schema order; the canonical (sorted) document must not reorder the reply."""
    source = (
        b'user: "x"\noutput_schema: {"zeta": "string", "alpha": "integer?", "mid": {"y": "string", "b": "string"}}\n'
    )
    document = compile_bytes(source, "order.prompt").document
    canonical = json.loads(canonical_json(document))
    for doc in (document, canonical):
        schema = request_body(doc, {}, "m")["response_format"]["json_schema"]["schema"]
        assert list(schema["properties"]) == ["zeta", "mid", "alpha"]  # required as declared, then optional
        assert list(schema["properties"]["mid"]["properties"]) == ["y", "b"]
