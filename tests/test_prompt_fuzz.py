"""Hostile input for the .prompt compiler: it returns a CompiledPrompt or raises a positioned PromptError.

Never another exception, never a hang: each example is bounded by hypothesis's deadline, and every
error message must be `<path>:LINE:COL: ...` with LINE:COL inside the file. Runs are derandomized so a
failure reproduces; the whole file stays well under 20 s.
"""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_platform.errors import PromptError
from ai_platform.prompts.compiler import CompiledPrompt, compile_bytes
from ai_platform.prompts.jsonvalue import MAX_DEPTH

pytestmark = pytest.mark.fuzz

REFERENCE = (Path(__file__).parent / "golden" / "prompts" / "contract_review.prompt").read_bytes()
PATH = "fuzz/case.prompt"
POSITION = re.compile(rf"^{re.escape(PATH)}:(\d+):(\d+): \S")
BOM = b"\xef\xbb\xbf"

FUZZ = settings(
    max_examples=200,
    deadline=timedelta(seconds=1),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Import xgrammar and jsonschema once, so the first example is not charged for it. Compiling the reference
    prompt alone no longer imports xgrammar once its schema's verdict is in the machine's cache
    (`prompts.engine`): the first example with a new schema then paid the import (7.4 s on a loaded machine)
    inside its 1 s deadline."""
    import xgrammar  # noqa: F401

    compile_bytes(REFERENCE, "contract_review.prompt")


def check(data: bytes) -> CompiledPrompt | PromptError:
    """Compile; an error must be a PromptError whose position lies inside the file."""
    try:
        return compile_bytes(data, PATH)
    except PromptError as exc:
        match = POSITION.match(str(exc))
        assert match, f"not path:line:col: message: {exc}"
        line, col = int(match.group(1)), int(match.group(2))
        text = (data[len(BOM) :] if data.startswith(BOM) else data).decode("utf-8", errors="replace")
        lines = text.split("\n")
        assert 1 <= line <= len(lines), f"line {line} outside 1..{len(lines)}: {exc}"
        assert 1 <= col <= len(lines[line - 1]) + 1, f"col {col} outside line {line}: {exc}"
        return exc


def must_compile(data: bytes) -> CompiledPrompt:
    result = check(data)
    assert isinstance(result, CompiledPrompt), str(result)
    return result


def must_fail(data: bytes) -> PromptError:
    result = check(data)
    assert isinstance(result, PromptError), "compiled, but should have failed"
    return result


# ------------------------------------------------------------------ arbitrary bytes and text


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    check(data)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_after_a_bom(data: bytes) -> None:
    check(BOM + data)


TOKENS = [
    "user",
    "system",
    "assistant",
    "name",
    "description",
    "params",
    "input_schema",
    "output_schema",
    "usr",
    ":",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "//",
    "/*",
    '"',
    '"""',
    "\\",
    '\\"',
    "\\n",
    "\\u",
    "\\ud800",
    "\\udc00",
    "{",
    "}",
    "[",
    "]",
    ",",
    "{{",
    "}}",
    "\\{{",
    "{{ x }}",
    "{{x}}",
    "x",
    "0",
    "-1",
    "1e999",
    "1.5",
    "true",
    "false",
    "null",
    "string",
    "integer?",
    "enum[",
    "enum[a,b]",
    ", d",
    "?",
    "中",
    "\ufeff",
    "\x00",
    "\U0001f600",
]


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_random_token_soup(tokens: list[str]) -> None:
    check("".join(tokens).encode("utf-8"))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=30))
def test_random_token_soup_as_an_output_schema_value(tokens: list[str]) -> None:
    """Most soup dies at the entry level; this puts it where the notation compiler reads it."""
    notation = json.dumps("".join(tokens), ensure_ascii=False)
    check(f'user: "x"\noutput_schema: {{"a": {notation}}}\n'.encode())


# ------------------------------------------------------------------ enum notation round trip

BARE_ITEM = st.text(st.sampled_from("ab中 \t-_.!"), min_size=1, max_size=6).filter(lambda s: s.strip())
QUOTED_ITEM = st.text(min_size=1, max_size=6)


@st.composite
def enum_items(draw: st.DrawFn, quoted_alphabet: st.SearchStrategy[str]) -> tuple[str, list[str]]:
    """(notation body, expected items): bare items are trimmed, quoted items are kept exactly."""
    parts, expected = [], []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            item = draw(quoted_alphabet)
            parts.append(json.dumps(item, ensure_ascii=draw(st.booleans())))
            expected.append(item)
        else:
            item = draw(BARE_ITEM)
            parts.append(item)
            expected.append(item.strip())
    return ",".join(parts), expected


@FUZZ
@given(enum_items(QUOTED_ITEM))
def test_enum_items_round_trip(case: tuple[str, list[str]]) -> None:
    body, items = case
    source = f'user: "x"\noutput_schema: {{"a": {json.dumps(f"enum[{body}]", ensure_ascii=False)}}}\n'
    result = check(source.encode())
    if len(set(items)) == len(items):
        assert isinstance(result, CompiledPrompt), str(result)
        assert result.document["output_schema"]["properties"]["a"] == {"enum": items}
    else:
        assert isinstance(result, PromptError) and "duplicate enum item" in str(result)


NO_QUOTE_ITEM = st.text(st.characters(exclude_categories=("Cs",), exclude_characters='"\\'), min_size=1, max_size=6)


@FUZZ
@given(enum_items(NO_QUOTE_ITEM), BARE_ITEM)
def test_enum_items_with_a_description_round_trip(case: tuple[str, list[str]], description: str) -> None:
    """Quoted items without `"` or `\\` here: an escaped quote before a description is a known bug (golden)."""
    body, items = case
    notation = f"enum[{body}]?, {description}"
    source = f'user: "x"\noutput_schema: {{"a": {json.dumps(notation, ensure_ascii=False)}, "b": "string"}}\n'
    result = check(source.encode())
    if len(set(items)) == len(items):
        assert isinstance(result, CompiledPrompt), str(result)
        schema = result.document["output_schema"]
        assert schema["properties"]["a"] == {"enum": items, "description": description.strip()}
        assert schema["required"] == ["b"]


# ------------------------------------------------------------------ mutations of the reference prompt


@st.composite
def mutated_reference(draw: st.DrawFn) -> bytes:
    data = bytearray(REFERENCE)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        at = draw(st.integers(0, len(data)))
        if op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4) | st.sampled_from([b'"', b"{{", b"\\", b",", b"\n"]))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            data[at : at + 1] = draw(st.binary(min_size=1, max_size=1))
    return bytes(data)


@FUZZ
@given(mutated_reference())
def test_mutations_of_the_reference(data: bytes) -> None:
    check(data)


# ------------------------------------------------------------------ random JSON values in every JSON entry

JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["string", "integer?", "number, n", "boolean?", "enum[a,b]", "enum[]", "strng", "enum[a,a]"])
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(st.sampled_from(["params", "input_schema", "output_schema"]), JSON_VALUES)
def test_random_json_values(key: str, value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    check(f'user: "{{{{x}}}}"\n{key}: {text}\n'.encode())


@FUZZ
@given(st.integers(0, 2 * MAX_DEPTH), st.sampled_from(["[", '{"a": ', '[{"a": ']))
def test_deep_nesting(depth: int, opener: str) -> None:
    closer = {"[": "]", '{"a": ': "}", '[{"a": ': "}]"}[opener]
    result = check(f'user: "x"\noutput_schema: {opener * depth}"string"{closer * depth}\n'.encode())
    if depth > MAX_DEPTH:
        assert isinstance(result, PromptError)


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_very_deep_nesting_is_an_error_not_a_recursion_error(depth: int) -> None:
    error = must_fail(b'user: "x"\noutput_schema: ' + b"[" * depth + b"\n")
    assert "nested deeper" in str(error)


# ------------------------------------------------------------------ numbers


@FUZZ
@given(
    st.sampled_from(["seed", "temperature", "max_tokens", "top_p"]),
    st.integers(min_value=-(10**60), max_value=10**60).map(str)
    | st.from_regex(r"-?(0|[1-9][0-9]{0,5})(\.[0-9]{1,5})?([eE][+-]?[0-9]{1,6})?", fullmatch=True),
)
def test_numbers_in_params(key: str, literal: str) -> None:
    check(f'user: "x"\nparams: {{"{key}": {literal}}}\n'.encode())


@pytest.mark.parametrize(
    ("literal", "message"),
    [("1e400", "number out of range"), ("-1e400", "number out of range"), ("9" * 5000, "number too long")],
)
def test_huge_numbers_are_positioned_errors(literal: str, message: str) -> None:
    assert message in str(must_fail(f'user: "x"\nparams: {{"seed": {literal}}}\n'.encode()))


def test_huge_integer_seed_within_python_limits_compiles() -> None:
    compiled = must_compile(b'user: "x"\nparams: {"seed": ' + b"9" * 300 + b"}\n")
    assert compiled.document["params"]["seed"] == int("9" * 300)


# ------------------------------------------------------------------ \u escapes and surrogates


@FUZZ
@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF), st.sampled_from(["user", "output_schema_key", "params_stop"]))
def test_unicode_escapes_including_lone_surrogates(first: int, second: int, where: str) -> None:
    escaped = f"\\u{first:04x}\\u{second:04X}"
    text = {
        "user": f'user: "{escaped}"\n',
        "output_schema_key": f'user: "x"\noutput_schema: {{"{escaped}": "string"}}\n',
        "params_stop": f'user: "x"\nparams: {{"stop": "{escaped}"}}\n',
    }[where]
    result = check(text.encode())
    lone = 0xD800 <= first <= 0xDFFF and not (first <= 0xDBFF and 0xDC00 <= second <= 0xDFFF)
    if lone:
        assert isinstance(result, PromptError) and "surrogate" in str(result)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud800\\u0041", "\\udc00\\ud800"])
def test_lone_surrogate_in_a_json_string_is_a_positioned_error(escape: str) -> None:
    error = must_fail(f'user: "ok"\nsystem: "a{escape}"\n'.encode())
    assert str(error).startswith(f"{PATH}:2:11: lone ")


def test_lone_surrogate_inside_a_quoted_enum_item_is_a_prompt_error() -> None:
    # The notation text is enum["\ud800"]: the JSON level decodes \\ to \, the enum level sees \ud800.
    must_fail(b'user: "x"\noutput_schema: {"a": "enum[\\"\\\\ud800\\"]"}\n')


# ------------------------------------------------------------------ no hang on large inputs


@pytest.mark.parametrize(
    "data",
    [
        b'user: "' + b"\\\\{{" * 30_000 + b'"\n',
        b'user: "' + b"{{a}}" * 30_000 + b'"\n',
        b'user: "x"\noutput_schema: {"a": "enum[' + b",".join(b"i%d" % i for i in range(3000)) + b']"}\n',
        b'user: "x"\noutput_schema: {' + b",".join(b'"k%d": "string?"' % i for i in range(2000)) + b"}\n",
        b'user: "x"\n' * 10_000,
        b'user: """x\n' * 10_000,
        b"//" + b"x" * 500_000 + b'\nuser: "x"\n',
    ],
    ids=["escaped-braces", "placeholders", "enum-3000", "props-2000", "entries", "triples", "long-comment"],
)
def test_large_inputs_finish_quickly(data: bytes) -> None:
    start = time.monotonic()
    check(data)
    assert time.monotonic() - start < 3.0
