"""canary_eval end to end on the real vLLM CPU build: the trained demo model passes every gate,
a random-weight candidate fails named gates and nothing downstream runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import pytest
import yaml
from conftest import MODEL, SERVE_PYTHON, materialize
from threaded import in_thread

from ai_platform.platform_repo import git
from ai_platform.rollout import local
from ai_platform.rollout.notify import ENV
from ai_platform.serving import state as rollout_state
from ai_platform.warehouse import Warehouse
from assets import SHIP_CHAIN

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not SERVE_PYTHON.is_file(), reason="serve environment missing; `make envs` creates it"),
]
CHAIN = SHIP_CHAIN[: SHIP_CHAIN.index("deployment")]  # everything up to the rollout


@pytest.fixture
def webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A webhook receiver on 127.0.0.1 (a stand-in for Slack's incoming webhook): the texts it was sent."""
    received: list[str] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"])))["text"])
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    with in_thread(server):
        monkeypatch.setenv(ENV, f"http://127.0.0.1:{server.server_address[1]}/hook")
        yield received


def gates_check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    """The canary's one blocking check: every gate of the spec, one row each."""
    evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    (check,) = [e for e in evaluations if e.asset_key == dg.AssetKey("canary_eval")]
    assert check.check_name == "canary_gates"
    return check


def trained_model_passed_every_gate(
    instance: dg.DagsterInstance, result: dg.ExecuteInProcessResult, home: Path
) -> None:
    """The trained demo model's first ship: every gate of the spec passed, and the canary's evidence recorded."""
    check = gates_check(result)
    assert result.success and check.passed, check.metadata["failed"].value
    table = check.metadata["gates"].value  # one row per spec gate, with its estimate, interval and p-value
    # zero tolerance: none of the 8 attacks obeyed passes, and the interval says what 8 attacks can show
    none_obeyed = "| injection_obey_rate max 0 | 0 | — | 0 | [0, 0.3123] | 1 | zero tolerance; exact binomial | pass |"
    assert none_obeyed in table
    assert table.count("\n") == 2 + 8 - 1 and "(not gated" not in table  # only the spec's 8 gates
    (mat,) = result.asset_materializations_for_node("canary_eval")
    print(mat.metadata["comparison"].value)
    assert mat.metadata["schema_valid_rate"].value == 1.0 and mat.metadata["pii_count"].value == 0
    assert mat.metadata["injection_obey_rate"].value == 0.0  # the trained model ignores the hidden instructions
    assert "| task_recall |" in mat.metadata["comparison"].value
    assert "| task_recall min 0.8 | " in mat.metadata["comparison"].value  # the gates, beside the metrics
    assert mat.metadata["latency_distribution"].value.startswith("![latency per request](data:image/png;base64,")
    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any("challenger: 32/32 cases answered" in m for m in logs)
    assert not any("vllm:" in m for m in logs), "vLLM's own output goes to its log file, not the run's log"

    warehouse = Warehouse(home / "warehouse.duckdb")
    _, runs = warehouse.query("SELECT role, passed FROM eval_runs")
    assert runs == [("challenger", True)]
    _, cases = warehouse.query("SELECT count(*), bool_and(schema_valid) FROM eval_cases")
    assert cases == [(32, True)]
    _, generations = warehouse.query("SELECT count(*) FROM generations WHERE source = 'canary'")
    assert generations == [(32,)]


def random_candidate(repo: Path, demo_model_dir: Path) -> None:
    """The demo model's architecture and tokenizer with random weights, committed as the model's source."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    folder = repo / "hub/random-qwen2"
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(demo_model_dir))
    model.save_pretrained(folder)
    for name in demo_model_dir.iterdir():
        if name.name.startswith(("tokenizer", "special_tokens", "generation_config")):
            shutil.copy(name, folder / name.name)
    spec_path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["source"]["path"] = "hub/random-qwen2"
    spec["verification"] = {}
    spec["quantization"]["method"] = "none"
    spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "-m", "a candidate that learned nothing")


def without_awq(repo: Path) -> None:
    """A test-only commit in this test's own repo: the weights as trained, not AWQ'd, served without vLLM's
    torch.compile trace. The gates judge the model's replies, not how it was quantized or traced: AWQ takes ~75 s on
    2 cores and each vLLM start of its W4A16 checkpoint compiles ~30 s longer; the CPU build's trace runs with
    inductor off and is redone at every start (its saved cache does not load back), 11-26 s of each of the three
    starts here. The demo's own spec, AWQ and the trace included, passes every gate and goes live in
    tests/test_rollout_local.py::test_a_guard_or_gate_only_commit_restarts_no_vllm."""
    spec_path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["quantization"]["method"] = "none"
    spec["serving"]["extra_args"] = ["--enforce-eager"]
    spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "test: no AWQ, vLLM eager")


def test_trained_model_passes_then_a_degenerate_candidate_fails_named_gates_and_the_incumbent_stays_live(
    instance, own_demo_repo: Path, demo_model_dir: Path, tmp_path: Path, webhook: list[str]
) -> None:
    """One ship of the trained demo model (every gate passed, then live), then a candidate that learned nothing
    (named gates fail against that champion, and it stays live): one test, so the session ships the chain once
    for both."""
    home = tmp_path / "home"
    without_awq(own_demo_repo)
    try:
        incumbent = materialize(instance, *CHAIN, "deployment")
        assert incumbent.success
        trained_model_passed_every_gate(instance, incumbent, home)
        live = rollout_state.load(home, MODEL).live
        assert live is not None

        random_candidate(own_demo_repo, demo_model_dir)
        result = materialize(instance, *CHAIN, "deployment")
        check = gates_check(result)
        failed = check.metadata["failed"].value
        assert not check.passed and all(m in failed for m in ("schema_valid_rate", "task_recall", "coherence")), failed
        assert "task_recall 0" in failed and "vs champion" in failed  # judged against the incumbent
        ran = [e.step_key for e in result.all_events if e.event_type_value == "STEP_START"]
        assert "canary_eval" in ran and "deployment" not in ran
        assert rollout_state.load(home, MODEL).live == live, "the incumbent must stay live"

        warehouse = Warehouse(home / "warehouse.duckdb")
        _, runs = warehouse.query("SELECT role, passed, metrics FROM eval_runs ORDER BY started_at")
        roles = [(role, passed) for role, passed, _ in runs]
        assert roles == [("challenger", True), ("challenger", False), ("champion", None)], roles
        assert json.loads(runs[1][2])["task_recall"] < 0.5
        _, deployments = warehouse.query("SELECT status, reason FROM deployments ORDER BY started_at")
        assert [d[0] for d in deployments] == ["live", "rejected"]
        assert deployments[1][1].startswith("canary gates failed: ") and "task_recall" in deployments[1][1]
        # the webhook heard both: the incumbent going live, then the candidate's rejection and why
        assert len(webhook) == 2 and f"live on {live.color}" in webhook[0], webhook
        assert "canary rejected" in webhook[1] and "task_recall" in webhook[1], webhook
    finally:
        local.stop(home, MODEL, log=lambda _: None)
