"""Acceptance: the compiled contract_review.prompt, rendered for every eval case and sent as is,
gets greedy replies that parse, validate and finish by stop, on the real vLLM CPU build."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from ai_platform.demo.model import SYSTEM_PROMPT
from ai_platform.prompts.compiler import compile_file
from ai_platform.prompts.render import request_body
from ai_platform.prompts.schema import compile_schema

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
GREEDY = {"temperature": 0, "max_tokens": 512}


def post(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{base_url}/v1/chat/completions", json=body, timeout=120)
    response.raise_for_status()
    return response.json()


def ask(base_url: str, text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A hand-built request with an ad-hoc schema (for schemas no prompt file declares)."""
    body = {
        "model": "contract-reviewer",
        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text}],
        **GREEDY,
        "response_format": {"type": "json_schema", "json_schema": {"name": "adhoc", "schema": schema, "strict": True}},
    }
    return post(base_url, body)


def test_every_eval_case_parses_validates_and_stops(demo_vllm, demo_repo: Path) -> None:
    document = compile_file(demo_repo / "prompts/contract_review.prompt").document
    schema = document["output_schema"]
    cases = [json.loads(line) for line in (demo_repo / "evals/contract_review.jsonl").read_text().splitlines()]
    bodies = [{**request_body(document, c["vars"], model="contract-reviewer"), **GREEDY} for c in cases]
    assert bodies[0]["messages"][0]["content"] == SYSTEM_PROMPT  # the prompt file says what training saw
    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(pool.map(lambda body: post(demo_vllm.base_url, body), bodies))
    problems = []
    exact = 0
    for case, reply in zip(cases, replies, strict=True):
        choice = reply["choices"][0]
        try:
            answer = json.loads(choice["message"]["content"])
            jsonschema.validate(answer, schema)
        except (json.JSONDecodeError, jsonschema.ValidationError) as exc:
            problems.append(f"{case['id']}: {exc}")
            continue
        if choice["finish_reason"] != "stop":
            problems.append(f"{case['id']}: finish_reason {choice['finish_reason']}")
        exact += answer == case["expected"]["answer"]
    assert problems == []
    # Not a gate (issue 7 owns quality), but a trained model must do far better than chance.
    assert exact >= len(cases) // 2, f"only {exact}/{len(cases)} answers match the expected risk points"


def test_schema_is_enforced_not_just_followed(demo_vllm) -> None:
    """A schema the model was never trained on still comes back valid: vLLM enforces it."""
    schema = compile_schema({"verdict": "enum[accept,reject]", "reason": "string"})
    schema["properties"]["reason"]["maxLength"] = 40
    choice = ask(demo_vllm.base_url, "第1条 甲方可随时解除本合同且无需承担任何责任。", schema)["choices"][0]
    jsonschema.validate(json.loads(choice["message"]["content"]), schema)


def test_a_cpu_model_server_yields_the_cores_to_the_gateway(demo_vllm) -> None:
    """vLLM on CPU runs at CPU_NICE, and so do the engine and worker processes it starts: on a machine it shares
    with the gateway, the gateway's short work on every request's path does not wait behind the model's."""
    import os

    from ai_platform.serving.vllm import CPU_NICE

    root = demo_vllm.process.pid
    children = Path(f"/proc/{root}/task/{root}/children").read_text().split()
    assert children, "vLLM started no engine process"
    ours = os.getpriority(os.PRIO_PROCESS, 0)  # the rest of the machine (this test) keeps its own
    for pid in [root, *map(int, children)]:
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + CPU_NICE), f"pid {pid}"


def test_a_second_start_of_the_same_model_takes_its_compiled_graphs_from_the_cache(
    demo_vllm, demo_model_dir: Path, tmp_path: Path
) -> None:
    """vLLM 0.32's CPU build saves an AOT-compiled model at its first start and fails to load it at every later
    one, so it compiled again each time (tens of seconds a start; the 30-layer published model's a minute). The
    launcher turns AOT compilation off: a second start of the model the session's server runs, with the same
    settings, takes Inductor's compiled graphs from its cache and never logs the failed load."""
    from ai_platform.config import Serving
    from ai_platform.serving.vllm import SERVE_PYTHON, launch

    log = tmp_path / "second.log"
    serving = Serving(max_model_len=1024, dtype="float32", block_size=32, max_num_seqs=8)  # demo_vllm's
    with launch(demo_model_dir, "contract-reviewer", serving, python=SERVE_PYTHON, log_path=log) as server:
        assert httpx.get(f"{server.base_url}/health", timeout=10).status_code == 200
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Warming up done" in text
    assert "Compiling model again due to a load failure" not in text
