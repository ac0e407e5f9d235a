"""The prompt-leak guard: a reply that repeats a run of the compiled system prompt, through the real gateway and a
stand-in model server (tests/fake_upstream.py), and the detector alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_upstream import FakeUpstream
from gateway_harness import api_key, client, roll_out
from pydantic import ValidationError
from starlette.testclient import TestClient

from ai_platform.config import Guards
from ai_platform.demo import corpus
from ai_platform.demo.model import answer_text
from ai_platform.demo.repo import CONTRACT_REVIEW_PROMPT
from ai_platform.detectors.leak import find_leak, leak_index
from ai_platform.detectors.text import tokens
from ai_platform.prompts.compiler import compile_bytes
from ai_platform.warehouse import Warehouse

EN_PROMPT = b'''system: """
You are a senior contract reviewer at Halden and Rowe. Read the contract clause by clause and flag every risk
under the governing law. For each risk give point, level, basis and suggestion.
"""
user: "{{text}}"
output_schema: {"risk_points": [{"point": "string", "level": "enum[high,medium,low]", "basis": "string",
  "suggestion": "string"}]}
'''
ZH_PROMPT = (
    CONTRACT_REVIEW_PROMPT.encode()
)  # the demo's: 你是一名资深法律顾问，请严格依据中国《民法典》第XXX条分析合同风险。…
PROMPTS = {"en": (EN_PROMPT, "review", "text"), "zh": (ZH_PROMPT, "contract_review", "input_pdf_text")}
EIGHT = {"en": "Read the contract clause by clause and flag", "zh": "作为一名资深法律顾问"}  # 8 tokens of the prompt
SEVEN = {"en": "Read the contract clause by clause and", "zh": "作为名资深法律顾问"}  # 7
LEVEL = {"en": "high", "zh": "高"}


def reply(point: str, suggestion: str = "Cap the damages near the actual loss.", language: str = "zh") -> str:
    risk = {"point": point, "level": LEVEL[language], "basis": "Civil Code Art. 585", "suggestion": suggestion}
    return json.dumps({"risk_points": [risk]}, ensure_ascii=False)


def gateway(home: Path, upstream: FakeUpstream, language: str, leak: dict[str, Any] | None) -> TestClient:
    prompt, name, _ = PROMPTS[language]
    roll_out(home, upstream, prompt=prompt, prompt_name=name, guards={"leak": leak} if leak else {})
    return client(home, api_key(home))


def run(client: TestClient, language: str) -> Any:
    _, name, variable = PROMPTS[language]
    return client.post(f"/v1/prompts/{name}:run", json={"variables": {variable: "甲方可随时解除本合同。"}})


def audit(home: Path) -> list[tuple[Any, ...]]:
    _, rows = Warehouse(home / "wh.duckdb").query("SELECT guard, action, reason, scores FROM guard_actions")
    return rows


def document(language: str) -> dict[str, Any]:
    prompt, name, _ = PROMPTS[language]
    return compile_bytes(prompt, f"prompts/{name}.prompt").document


def test_tokens_are_words_in_latin_text_and_characters_in_cjk() -> None:
    assert tokens("Read the CONTRACT, clause-by-clause.") == ["read", "the", "contract", "clause", "by", "clause"]
    assert tokens("依据中国《民法典》第XXX条") == ["依", "据", "中", "国", "民", "法", "典", "第", "xxx", "条"]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_run_of_eight_is_a_leak_and_seven_is_not(language: str) -> None:
    index = leak_index(document(language), 8)
    found = find_leak(index, reply(f"The reviewer says: {EIGHT[language]}."))
    assert found is not None and found.tokens == 8
    assert find_leak(index, reply(f"The reviewer says: {SEVEN[language]}.")) is None


def test_the_index_is_built_once_per_compiled_prompt() -> None:
    assert leak_index(document("en"), 8) is leak_index(document("en"), 8)
    assert leak_index(document("en"), 8) is not leak_index(document("en"), 9)


def test_a_reply_that_names_the_schemas_fields_as_the_prompt_does_is_not_a_leak() -> None:
    index = leak_index(document("en"), 8)
    benign = reply("For each risk give point, level, basis and suggestion", "For each risk give point, level, basis")
    assert find_leak(index, benign) is None
    assert find_leak(index, benign.replace('{"risk_points"', '{"point": "level basis suggestion", "x"')) is None


def test_normal_demo_replies_are_not_leaks() -> None:
    index = leak_index(document("zh"), 8)
    examples = corpus.examples(7, 300, "leak")
    assert {e.language for e in examples} >= {"zh", "en"}
    assert [e.case_id for e in examples if find_leak(index, answer_text(e))] == []


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_leak_is_withheld_under_block(tmp_path: Path, upstream: FakeUpstream, language: str) -> None:
    upstream.reply(reply(f"As instructed: {EIGHT[language]}.", language=language))
    with gateway(tmp_path, upstream, language, {"action": "block"}) as client:
        answer = run(client, language)
        metrics = client.get("/metrics").text
        client.app.state.gateway.log.flush()
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["output"] is None and body["finish_reason"] == "content_filter"
    assert "withheld" in body["error"] and "system prompt" in body["error"]
    assert EIGHT[language] not in answer.text
    ((guard, action, reason, scores),) = audit(tmp_path)
    assert (guard, action) == ("prompt_leak", "block") and json.loads(scores)["tokens"] == 8
    assert EIGHT[language] not in reason + scores, "the audit row holds scores, never the text"
    prompt = PROMPTS[language][1]
    assert f'ai_platform_reply_prompt_leaks_total{{model="contract-reviewer",prompt="{prompt}"}} 1.0' in metrics


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_leak_is_logged_and_passed_under_log(tmp_path: Path, upstream: FakeUpstream, language: str) -> None:
    upstream.reply(reply(f"As instructed: {EIGHT[language]}.", language=language))
    with gateway(tmp_path, upstream, language, {"action": "log"}) as client:
        answer = run(client, language)
        client.app.state.gateway.log.flush()
    assert answer.status_code == 200 and answer.json()["output"] is not None
    assert [row[:2] for row in audit(tmp_path)] == [("prompt_leak", "log")]


def test_seven_tokens_and_a_demo_reply_pass_untouched(tmp_path: Path, upstream: FakeUpstream) -> None:
    upstream.reply(reply(f"As instructed: {SEVEN['zh']}."))
    upstream.reply(answer_text(corpus.examples(3, 1, "demo")[0]))
    with gateway(tmp_path, upstream, "zh", {"action": "block"}) as client:
        answers = [run(client, "zh"), run(client, "zh")]
        metrics = client.get("/metrics").text
    assert [a.json()["finish_reason"] for a in answers] == ["stop", "stop"]
    assert "ai_platform_guard_actions_total{" not in metrics


def test_the_spec_field_is_checked() -> None:
    assert Guards().leak.action == "log" and Guards().leak.min_tokens == 8
    assert Guards.model_validate({"leak": {"action": "block", "min_tokens": 12}}).leak.min_tokens == 12
    with pytest.raises(ValidationError):
        Guards.model_validate({"leak": {"action": "mask"}})
    with pytest.raises(ValidationError):
        Guards.model_validate({"leak": {"min_tokens": 2}})
