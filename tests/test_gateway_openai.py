"""The gateway's OpenAI API, checked with the official `openai` client, over a stand-in model server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fake_upstream import FakeUpstream
from gateway_harness import MODEL, api_key, roll_out, served

from ai_platform.warehouse import Warehouse

CONTEXT_ERROR = "This model's maximum context length is 1024 tokens. However, you requested 5000 tokens."


@pytest.fixture
def client(tmp_path: Path, upstream: FakeUpstream) -> Iterator[openai.OpenAI]:
    upstream.default = "Risk: the termination clause is one-sided."
    roll_out(tmp_path, upstream, prompt=b'user: "{{text}}"\n', prompt_name="p", color="green")
    raw = api_key(tmp_path, "app")
    with served(tmp_path) as (url, _):
        yield openai.OpenAI(base_url=f"{url}/v1", api_key=raw, max_retries=0)


def logged(home: Path) -> list[tuple[str, str]]:
    _, rows = Warehouse(home / "wh.duckdb").query("SELECT prompt_name, output FROM generations ORDER BY created_at")
    return rows


def test_models_list_names_every_live_model(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == [MODEL]


def test_chat_completions_answer_and_are_logged(client: openai.OpenAI, tmp_path: Path) -> None:
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Review this."}])
    assert reply.choices[0].message.content == "Risk: the termination clause is one-sided."
    client.close()
    time.sleep(1.5)  # the log writes in batches
    assert logged(tmp_path) == [("openai:chat/completions", "Risk: the termination clause is one-sided.")]


def test_streamed_chat_completions_arrive_whole_and_are_logged(client: openai.OpenAI, tmp_path: Path) -> None:
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Review this."}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "Risk: the termination clause is one-sided."
    time.sleep(1.5)
    assert logged(tmp_path) == [("openai:chat/completions", text)]


def test_response_format_reaches_the_model_server(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    schema = {"type": "object", "properties": {"risk": {"type": "string"}}, "required": ["risk"]}
    client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "x"}],
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
    )
    assert upstream.requests[-1]["response_format"]["json_schema"]["schema"] == schema
    assert upstream.requests[-1]["max_tokens"] == 512, "every request is bounded"


def test_completions_work(client: openai.OpenAI) -> None:
    assert client.completions.create(model=MODEL, prompt="Clause 1:").choices[0].text.startswith("Risk")


def test_errors_come_as_the_client_expects(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4", messages=[{"role": "user", "content": "x"}])
    assert missing.value.code == "model_not_found"
    anonymous = openai.OpenAI(base_url=str(client.base_url), api_key="aip-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        anonymous.models.list()
    upstream.reply(CONTEXT_ERROR, status=400)
    with pytest.raises(openai.BadRequestError) as too_long:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "long " * 5000}])
    assert "maximum context length is 1024 tokens" in str(too_long.value)
    assert upstream.url.split("//")[1] not in str(too_long.value) and "green" not in str(too_long.value)


def test_pii_in_a_passthrough_reply_is_withheld(client: openai.OpenAI, upstream: FakeUpstream) -> None:
    upstream.reply("Call Zhang San, ID 11010519491231002X.")
    reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Who signs?"}])
    assert reply.choices[0].message.content == "" and reply.choices[0].finish_reason == "content_filter"
