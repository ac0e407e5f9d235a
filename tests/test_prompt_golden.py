"""Golden tests of the .prompt compiler: every notation row, entry and error of docs/prompt-language.md.

Each `tests/golden/prompts/NAME.prompt` has beside it exactly one of
- `NAME.json`: the expected compiled document (compared as parsed JSON, whole), where
  `source.sha256` is written as `<sha256 of the .prompt file>` and checked against the input's bytes;
- `NAME.err`: the exact expected error line `NAME.prompt:LINE:COL: message`;
and optionally `NAME.warn` (the exact warning lines, in order; no file means no warnings) and
`NAME.xfail` (the reason: a known compiler bug, run as a strict xfail).

The expected files were derived by hand from docs/prompt-language.md and are reviewed by hand: there is
deliberately no switch that rewrites them from the compiler's output.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ai_platform.errors import PromptError, PromptSourceError
from ai_platform.prompts.compiler import compile_bytes, compile_file

GOLDEN = Path(__file__).parent / "golden" / "prompts"
SHA_PLACEHOLDER = "<sha256 of the .prompt file>"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _cases() -> list[Any]:
    cases = []
    for prompt in sorted(GOLDEN.glob("*.prompt")):
        xfail = prompt.with_suffix(".xfail")
        marks = []
        if xfail.exists():
            marks.append(pytest.mark.xfail(strict=True, reason=xfail.read_text(encoding="utf-8").strip()))
        cases.append(pytest.param(prompt, id=prompt.stem, marks=marks))
    return cases


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_corpus_is_complete() -> None:
    prompts = sorted(GOLDEN.glob("*.prompt"))
    assert len(prompts) >= 60
    for prompt in prompts:
        expected = [s for s in (".json", ".err") if prompt.with_suffix(s).exists()]
        assert len(expected) == 1, f"{prompt.name}: needs exactly one of .json/.err, has {expected}"
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prompt.stem), "a golden's stem must be a valid default name"
    for other in GOLDEN.glob("*.*"):
        if other.name != ".gitattributes":
            assert other.with_suffix(".prompt").exists(), f"{other.name} has no .prompt beside it"


def test_byte_exact_inputs_survived_checkout() -> None:
    """CRLF, BOM and invalid UTF-8 inputs only test something if git kept their bytes."""
    assert b"\r\n" in (GOLDEN / "crlf.prompt").read_bytes()
    assert (GOLDEN / "bom.prompt").read_bytes().startswith(b"\xef\xbb\xbf")
    assert b"\xff" in (GOLDEN / "err_invalid_utf8.prompt").read_bytes()


@pytest.mark.parametrize("prompt", _cases())
def test_golden(prompt: Path) -> None:
    data = prompt.read_bytes()
    display = prompt.name
    err_file, json_file, warn_file = (prompt.with_suffix(s) for s in (".err", ".json", ".warn"))
    if err_file.exists():
        expected_error = err_file.read_text(encoding="utf-8").rstrip("\n")
        with pytest.raises(PromptSourceError) as info:
            compile_bytes(data, display)
        assert isinstance(info.value, PromptError)
        assert str(info.value) == expected_error
        return
    compiled = compile_bytes(data, display)
    expected = json.loads(json_file.read_text(encoding="utf-8"))
    assert expected["source"]["sha256"] == SHA_PLACEHOLDER
    expected["source"]["sha256"] = hashlib.sha256(data).hexdigest()
    assert compiled.document == expected
    # The version is the sha256 of the canonical bytes: sorted keys, UTF-8, no insignificant whitespace.
    assert compiled.canonical() == _canonical(expected)
    assert compiled.version == hashlib.sha256(_canonical(expected)).hexdigest()
    warnings = warn_file.read_text(encoding="utf-8").splitlines() if warn_file.exists() else []
    assert [str(w) for w in compiled.warnings] == warnings


@pytest.mark.parametrize("prompt", [p for p in sorted(GOLDEN.glob("*.prompt")) if p.with_suffix(".json").exists()])
def test_compiled_output_schemas_are_valid_2020_12(prompt: Path) -> None:
    expected = json.loads(prompt.with_suffix(".json").read_text(encoding="utf-8"))
    schema = expected["output_schema"]
    if schema is None:
        assert expected["request"] == {}
        return
    assert schema["$schema"] == DRAFT
    Draft202012Validator.check_schema(schema)
    assert expected["request"]["response_format"]["json_schema"]["schema"] == schema


def test_name_defaults_to_the_stem_of_the_real_path(tmp_path: Path) -> None:
    path = tmp_path / "my_prompt.prompt"
    path.write_bytes(b'user: "x"\n')
    compiled = compile_file(path)
    assert compiled.name == "my_prompt"
    assert compiled.document["source"]["path"] == path.as_posix()
    assert compile_file(path, display_path="shown/other.prompt").name == "other"


def test_error_names_the_display_path() -> None:
    with pytest.raises(PromptSourceError, match=r"^dir/x\.prompt:1:1: unknown key 'usr'"):
        compile_bytes(b'usr: "x"\n', "dir/x.prompt")


def test_crlf_and_lf_compile_to_the_same_messages() -> None:
    lf = (GOLDEN / "crlf.prompt").read_bytes().replace(b"\r\n", b"\n")
    crlf = compile_bytes((GOLDEN / "crlf.prompt").read_bytes(), "crlf.prompt").document
    assert compile_bytes(lf, "crlf.prompt").document["messages"] == crlf["messages"]


def test_bom_is_dropped_without_changing_the_document_beyond_the_source_hash() -> None:
    plain = b'user: "hello"\n'
    with_bom = compile_bytes(b"\xef\xbb\xbf" + plain, "bom.prompt").document
    without = compile_bytes(plain, "bom.prompt").document
    assert with_bom["source"]["sha256"] != without["source"]["sha256"]
    assert {**with_bom, "source": None} == {**without, "source": None}


# ------------------------------------------------------------------ acceptance (issue 4)

REFERENCE = GOLDEN / "contract_review.prompt"
GOOD_REPLY = {
    "risk_points": [{"point": "付款", "level": "高", "basis": "民法典第五百七十七条", "suggestion": "明确期限"}]
}


def _reference_validator() -> Draft202012Validator:
    compiled = compile_file(REFERENCE)
    assert compiled.name == "contract_review"
    return Draft202012Validator(compiled.document["output_schema"])


def test_reference_prompt_compiles_and_accepts_the_good_reply() -> None:
    assert _reference_validator().is_valid(GOOD_REPLY)


def _bad_level(item: dict[str, str]) -> None:
    item["level"] = "严重"


def _missing_basis(item: dict[str, str]) -> None:
    del item["basis"]


def _extra_key(item: dict[str, str]) -> None:
    item["extra"] = "x"


@pytest.mark.parametrize("change", [_bad_level, _missing_basis, _extra_key], ids=["bad-level", "no-basis", "extra"])
def test_reference_schema_rejects(change: Any) -> None:
    item = dict(GOOD_REPLY["risk_points"][0])
    change(item)
    assert not _reference_validator().is_valid({"risk_points": [item]})


def test_reference_schema_rejects_an_extra_top_level_key() -> None:
    assert not _reference_validator().is_valid({**GOOD_REPLY, "extra": []})
