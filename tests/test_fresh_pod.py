"""No stage needs another's disk: with the production profile (artifacts in the registry, the warehouse a
DuckLake in PostgreSQL), every stage runs in a fresh, empty home, as a new pod would, and the home of the
stage before it is deleted first. Real docker-registry, real PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import MODEL, ROOT, LocalRegistry, materialize

from ai_platform.config import load_platform
from ai_platform.errors import ConfigError
from ai_platform.platform_repo import git
from ai_platform.serving.vllm import SERVE_PYTHON
from ai_platform.warehouse import at
from assets import SHIP_CHAIN
from benchmarks.support.postgres import PostgresServer

QUANTIZE_PYTHON = ROOT / ".venvs" / "quantize" / "bin" / "python"

STAGES = SHIP_CHAIN[: SHIP_CHAIN.index("canary_eval")]  # every stage before the model server is needed


def production_profile(repo: Path, registry: LocalRegistry, catalog: str, data: Path, method: str | None) -> None:
    platform = yaml.safe_load((repo / "platform.yaml").read_text())
    platform["registry"] = {"url": f"http://{registry.host}/pods"}
    platform["storage"] = {
        "artifact_store": "registry",
        "warehouse": f"ducklake:postgres:{catalog}",
        "warehouse_data": str(data),  # the lake's data path: object storage in a cluster
    }
    (repo / "platform.yaml").write_text(yaml.safe_dump(platform))
    if method:
        spec_path = repo / f"models/{MODEL}.yaml"
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
        spec["quantization"]["method"] = method
        spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "the production profile")


def in_fresh_pods(instance, stages: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    """Each stage in a new, empty home; the home of the stage before it is deleted first."""
    results, previous = [], None
    for stage in stages:
        home = tmp_path / f"pod-{stage}-{uuid.uuid4().hex[:8]}"
        monkeypatch.setenv("AI_PLATFORM_HOME", str(home))
        if previous is not None:
            shutil.rmtree(previous)  # the stage before ran on another machine
        result = materialize(instance, stage)
        assert result.success, f"{stage} in a fresh pod: " + "; ".join(
            str(e.event_specific_data.error.message)
            for e in result.all_events
            if e.is_failure and e.event_specific_data and getattr(e.event_specific_data, "error", None)
        )
        results.append(result)
        previous = home
    return results


def test_each_stage_finds_its_inputs_in_a_fresh_pod(
    instance,
    own_demo_repo: Path,
    registry: LocalRegistry,
    postgres: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = postgres.create_database("fresh_pods")
    production_profile(own_demo_repo, registry, catalog, tmp_path / "lake-data", method="none")
    in_fresh_pods(instance, STAGES, tmp_path, monkeypatch)
    lake = at(f"ducklake:postgres:{catalog}")
    assert lake.query("SELECT model, count(*) FROM images GROUP BY model")[1] == [(MODEL, 1)]
    assert lake.query("SELECT count(*) FROM weight_files")[1][0][0] > 0
    assert lake.query("SELECT count(*) FROM prompt_versions")[1][0][0] > 0

    # `rollout render` on yet another machine renders what the pipeline shipped, pinned by digest
    (digest,) = lake.query("SELECT digest FROM images")[1][0]
    out = tmp_path / "render"
    gateway = "registry.example.com/ai-platform/code@sha256:" + "ef" * 32
    command = ["rollout", "render", MODEL, "--repo", str(own_demo_repo), "--out", str(out), "--gateway-image", gateway]
    env = {**os.environ, "AI_PLATFORM_HOME": str(tmp_path / "laptop")}
    done = subprocess.run([sys.executable, "-m", "ai_platform.cli", *command], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    deployment = yaml.safe_load((out / f"deployment-{MODEL}-blue.yaml").read_text())
    volume = deployment["spec"]["template"]["spec"]["volumes"][0]["image"]["reference"]
    assert volume == f"{registry.host}/pods/{MODEL}@{digest}"


@pytest.mark.slow
@pytest.mark.skipif(not (QUANTIZE_PYTHON.is_file() and SERVE_PYTHON.is_file()), reason="needs `make envs`")
def test_the_quantize_workload_fetches_its_inputs_and_keeps_its_output_in_the_registry(
    instance,
    own_demo_repo: Path,
    registry: LocalRegistry,
    postgres: PostgresServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The workload gets no path of the step's disk: a GPU pod on Kubernetes has none of it."""
    catalog = postgres.create_database("fresh_quantize")
    production_profile(own_demo_repo, registry, catalog, tmp_path / "lake-data", method=None)
    stages = ("model_spec", "raw_weights", "verified_weights", "quantized_weights")
    results = in_fresh_pods(instance, stages, tmp_path, monkeypatch)
    (raw,) = results[1].asset_materializations_for_node("raw_weights")
    (quantized,) = results[3].asset_materializations_for_node("quantized_weights")
    kept = quantized.metadata["folder"].value
    assert kept.startswith(f"{registry.host}/pods/ai-platform-artifacts@sha256:")
    # The step hands the workload registry names only; the workload fetched the weights into its own cache.
    (pod,) = tmp_path.glob("pod-quantized_weights-*")
    fetched = pod / "artifacts/folders" / raw.metadata["folder"].value.split("@sha256:")[1]
    assert (fetched / "model.safetensors").is_file()
    (image,) = in_fresh_pods(instance, ("model_image",), tmp_path, monkeypatch)[0].asset_materializations_for_node(
        "model_image"
    )
    assert image.metadata["weights_digest"].value == quantized.metadata["digest"].value


def test_the_registry_store_needs_a_registry(own_demo_repo: Path, tmp_path: Path) -> None:
    text = (own_demo_repo / "platform.yaml").read_text() + "\n"
    platform = yaml.safe_load(text)
    platform["storage"] = {"artifact_store": "registry"}
    (own_demo_repo / "platform.yaml").write_text(yaml.safe_dump(platform))
    with pytest.raises(ConfigError, match=r"registry\.url must name one"):
        load_platform(own_demo_repo, tmp_path / "home")
