"""raw_weights and verified_weights in Dagster on the demo repo, and the blocking check on tampered weights."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
from conftest import materialize

from ai_platform.platform_repo import git
from ai_platform.warehouse import Warehouse

WEIGHTS = "hub/contract-qwen2/model.safetensors"


def check_result(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    (evaluation,) = [e for e in evaluations if e.asset_key == dg.AssetKey("verified_weights")]
    return evaluation


def test_demo_weights_verify_and_land_in_the_warehouse(instance, own_demo_repo: Path, tmp_path: Path) -> None:
    result = materialize(instance, "model_spec", "raw_weights", "verified_weights")
    assert result.success
    assert check_result(result).passed
    (mat,) = result.asset_materializations_for_node("verified_weights")
    assert "trusted manifest manifests/contract-qwen2.json" in mat.metadata["against"].value
    trusted = json.loads((own_demo_repo / "manifests/contract-qwen2.json").read_text())
    expected = sum(len(f.get("tensors", [])) for f in trusted["files"])
    _, rows = Warehouse(tmp_path / "home/warehouse.duckdb").query(
        "SELECT count(*) FROM tensor_hashes WHERE path = 'model.safetensors'"
    )
    assert rows == [(expected,)] and expected > 10


def test_tampered_weights_fail_the_blocking_check_and_stop_the_chain(instance, own_demo_repo: Path) -> None:
    trusted = json.loads((own_demo_repo / "manifests/contract-qwen2.json").read_text())
    entry = next(f for f in trusted["files"] if f["path"] == "model.safetensors")
    victim = entry["tensors"][len(entry["tensors"]) // 2]
    path = own_demo_repo / WEIGHTS
    data = bytearray(path.read_bytes())
    data[victim["data_begin"] + 1] ^= 0x40
    path.write_bytes(bytes(data))
    git(own_demo_repo, "commit", "--quiet", "-am", "a quiet edit to the weights")

    result = materialize(instance, "model_spec", "raw_weights", "verified_weights", "quantized_weights")
    evaluation = check_result(result)
    assert not evaluation.passed
    problems = evaluation.metadata["problems"].value
    assert "model.safetensors" in problems and victim["name"] in problems
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "quantized_weights" not in ran, "a blocking check failure must stop everything downstream"
