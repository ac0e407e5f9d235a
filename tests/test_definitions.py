"""The code location: the asset graph of docs/architecture.md, model_spec for real, no rollout before a canary pass."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import dagster as dg
from conftest import MODEL, materialize

from ai_platform.platform_repo import git, resolve
from assets.partitions import models_partitions
from definitions import defs

ROOT = Path(__file__).resolve().parent.parent

EXPECTED_DEPS = {
    "model_spec": set(),
    "raw_weights": {"model_spec"},
    "verified_weights": {"raw_weights"},
    "quantized_weights": {"verified_weights", "model_spec"},
    "model_image": {"quantized_weights", "raw_weights"},
    "compiled_prompts": {"model_spec"},
    "prompt_bundle": {"compiled_prompts"},
    "canary_eval": {"model_image", "prompt_bundle"},
    "deployment": {"canary_eval"},
    "generations": {"deployment"},
    "feedback_labels": {"generations"},
    "trust_model": {"feedback_labels"},
    "trust_champion": {"trust_model"},
    "gateway": {"deployment", "trust_champion"},
}
UNPARTITIONED = {"generations", "feedback_labels", "gateway"}


def test_definitions_validate() -> None:
    done = subprocess.run(
        [str(ROOT / ".venv/bin/dagster"), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "All code locations passed validation" in done.stdout + done.stderr


def test_asset_graph_matches_design() -> None:
    graph = defs.resolve_asset_graph()
    specs = {key.to_user_string(): graph.get(key) for key in graph.get_all_asset_keys()}
    assert set(specs) == set(EXPECTED_DEPS)
    for name, node in specs.items():
        assert {p.to_user_string() for p in node.parent_keys} == EXPECTED_DEPS[name], name
        assert node.group_name and node.group_name != "default", name
        assert node.owners and node.kinds, name
        if name in UNPARTITIONED:
            assert node.partitions_def is None
        else:
            assert node.partitions_def == models_partitions, name


def test_the_learning_loop_reads_as_one_chain_in_the_lineage() -> None:
    """deployment -> generations -> labels -> trust model -> champion -> gateway, the gateway not run by Dagster."""
    graph = defs.resolve_asset_graph()
    chain = ["deployment", "generations", "feedback_labels", "trust_model", "trust_champion", "gateway"]
    for parent, child in itertools.pairwise(chain):
        assert dg.AssetKey(parent) in graph.get(dg.AssetKey(child)).parent_keys, (parent, child)
    assert not graph.get(dg.AssetKey("gateway")).is_materializable
    champion = graph.get(dg.AssetKey("trust_champion"))
    assert "all_deps_blocking_checks_passed" in str(champion.automation_condition)
    checks = {k.name for k in graph.get(dg.AssetKey("trust_model")).check_keys}
    assert checks == {"beats_best_single_feature", "auc_above_floor", "ece_within_bound"}


def test_rollout_requires_blocking_checks() -> None:
    node = defs.resolve_asset_graph().get(dg.AssetKey("deployment"))
    assert "all_deps_blocking_checks_passed" in str(node.automation_condition)


def test_jobs() -> None:
    ship = defs.resolve_job_def("ship_model")
    feedback = {"generations", "feedback_labels", "trust_model", "trust_champion", "gateway"}
    assert {n.name for n in ship.nodes} == set(EXPECTED_DEPS) - feedback
    assert {n.name for n in defs.resolve_job_def("ingest_feedback").nodes} == {"generations", "feedback_labels"}
    assert {n.name for n in defs.resolve_job_def("learn_from_feedback").nodes} == {"trust_model", "trust_champion"}


def data_version(instance: dg.DagsterInstance) -> str:
    record = instance.get_latest_materialization_event(dg.AssetKey("model_spec"))
    assert record and record.asset_materialization
    return record.asset_materialization.tags["dagster/data_version"]


def test_model_spec_materializes_pinned_to_the_commit(instance, own_demo_repo: Path) -> None:
    result = materialize(instance, "model_spec")
    assert result.success
    (mat,) = result.asset_materializations_for_node("model_spec")
    assert mat.metadata["commit"].value == resolve(own_demo_repo).sha
    assert mat.metadata["spec"].value["name"] == MODEL
    first = data_version(instance)

    (own_demo_repo / "README.txt").write_text("an unrelated change\n")
    git(own_demo_repo, "add", "README.txt")
    git(own_demo_repo, "commit", "--quiet", "-m", "docs only")
    assert materialize(instance, "model_spec").success
    assert data_version(instance) == first, "a commit that leaves the spec alone keeps its version"

    spec = own_demo_repo / f"models/{MODEL}.yaml"
    spec.write_text(spec.read_text().replace("max_num_seqs: 8", "max_num_seqs: 4"))
    git(own_demo_repo, "commit", "--quiet", "-am", "fewer sequences")
    assert materialize(instance, "model_spec").success
    assert data_version(instance) != first


def test_model_spec_fails_on_bad_config(instance, own_demo_repo: Path) -> None:
    spec = own_demo_repo / f"models/{MODEL}.yaml"
    spec.write_text(spec.read_text().replace("method: awq", "method: magic"))
    git(own_demo_repo, "commit", "--quiet", "-am", "typo")
    result = materialize(instance, "model_spec")
    assert not result.success
    (failure,) = result.get_step_failure_events()
    assert "quantization.method: must be one of" in failure.step_failure_data.error.to_string()


def test_deployment_refuses_a_candidate_no_canary_passed(instance) -> None:
    """Run alone (no blocking check to stop it), deployment still finds no passed canary and says so."""
    assert materialize(instance, "model_spec").success
    result = materialize(instance, "deployment")
    assert not result.success
    (failure,) = result.get_step_failure_events()
    assert "canary_eval has not been materialized" in failure.step_failure_data.error.to_string()
    assert not result.asset_materializations_for_node("deployment")
