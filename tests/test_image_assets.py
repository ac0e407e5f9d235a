"""model_image in Dagster: built from the quantized weights, recorded, pushed to the registry
platform.yaml names, and unchanged (digest for digest) by a prompt-only commit."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import yaml
from conftest import MODEL, LocalRegistry, materialize

from ai_platform.platform_repo import git
from ai_platform.warehouse import Warehouse

CHAIN = ("model_spec", "raw_weights", "verified_weights", "quantized_weights", "model_image")


def configure(repo: Path, registry: LocalRegistry) -> None:
    platform = yaml.safe_load((repo / "platform.yaml").read_text())
    platform["registry"] = {"url": f"http://{registry.host}/ai-platform"}
    (repo / "platform.yaml").write_text(yaml.safe_dump(platform))
    spec_path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec["quantization"]["method"] = "none"  # the image stage is under test here, not AWQ
    spec_path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "push images to the test registry")


def image_digest(result) -> str:
    (mat,) = result.asset_materializations_for_node("model_image")
    return mat.metadata["digest"].value


def test_model_image_is_pushed_recorded_and_stable_across_prompt_commits(
    instance, own_demo_repo: Path, registry: LocalRegistry, tmp_path: Path
) -> None:
    configure(own_demo_repo, registry)
    first = materialize(instance, *CHAIN)
    assert first.success
    digest = image_digest(first)
    (mat,) = first.asset_materializations_for_node("model_image")
    # the record says where the image is, pinned by digest: what a cluster pulls (and `locate` hands it)
    assert mat.metadata["ref"].value == f"{registry.host}/ai-platform/{MODEL}@{digest}"
    annotations = mat.metadata["annotations"].value
    assert annotations["ai-platform.quantization.recipe"] == "none"
    assert annotations["org.opencontainers.image.created"].endswith("Z")

    manifest = httpx.get(
        f"http://{registry.host}/v2/ai-platform/{MODEL}/manifests/{digest}",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    assert manifest.status_code == 200 and json.loads(manifest.content)["annotations"] == annotations
    _, rows = Warehouse(tmp_path / "home/warehouse.duckdb").query("SELECT digest, model, ref FROM images")
    assert rows == [(digest, MODEL, mat.metadata["ref"].value)]

    prompt = own_demo_repo / "prompts/contract_review.prompt"
    prompt.write_text(prompt.read_text(encoding="utf-8") + 'description: "reviewed wording"\n', encoding="utf-8")
    git(own_demo_repo, "commit", "--quiet", "-am", "a prompt-only change")
    second = materialize(instance, *CHAIN)
    assert second.success and image_digest(second) == digest, "a prompt change must not make a new model image"
    (again,) = second.asset_materializations_for_node("model_image")
    assert again.metadata["pushed_blobs"].value == 0 and again.metadata["bytes_written"].value == 0


def edit_spec(repo: Path, change, message: str) -> None:
    path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(spec)
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", message)


def test_the_image_depends_on_the_weights_only(instance, own_demo_repo: Path, registry: LocalRegistry) -> None:
    """A gate, a guard or a description edited in the spec changes nothing the image is made of: the same digest,
    whatever commit last touched the spec file. A different quantization recipe is another image."""
    from dataclasses import replace

    from ai_platform.image.stage import build_model_image
    from ai_platform.records import QuantizedWeights, RawWeights, Records
    from ai_platform.specs import pinned_spec

    configure(own_demo_repo, registry)
    first = materialize(instance, *CHAIN)
    assert first.success
    digest = image_digest(first)
    annotations = first.asset_materializations_for_node("model_image")[0].metadata["annotations"].value
    assert "org.opencontainers.image.description" not in annotations  # descriptive fields are not in the image

    def gate(spec: dict) -> None:
        spec["canary"]["gates"][0]["min"] = 0.5

    def guard(spec: dict) -> None:
        spec.setdefault("guards", {})["pii"] = "mask"

    def described(spec: dict) -> None:
        spec["description"] = "reworded: " + spec.get("description", "")

    for change, what in ((gate, "a gate"), (guard, "a guard"), (described, "the description")):
        edit_spec(own_demo_repo, change, f"change {what} only")
        again = materialize(instance, *CHAIN)
        assert again.success and image_digest(again) == digest, f"{what} must not make a new model image"

    snap = pinned_spec(own_demo_repo.parent / "home", MODEL)
    records = Records(snap.platform.artifacts())
    quantized, raw = records.read(QuantizedWeights, MODEL), records.read(RawWeights, MODEL)
    assert build_model_image(snap, quantized, raw).built.digest == digest  # rebuilt from the records: the same
    other = build_model_image(snap, replace(quantized, recipe_digest="0" * 64), raw)
    assert other.built.digest != digest, "another quantization recipe is another image"
