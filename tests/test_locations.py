"""Records say where things are: `image.locations.locate` is the one function that turns a `ModelImage` record into
what a server starts from, and the backends and the canary get the location from it, never from platform.yaml as it
is now. What is live is the backend's typed `LiveRelease` (`Backend.live`), which the canary's champion lookup reads.
No vLLM here: a stand-in server plays the live colour."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import MODEL
from fake_upstream import FakeUpstream, serving

from ai_platform.backend.embedded import EmbeddedBackend
from ai_platform.backend.kubernetes import KubernetesBackend
from ai_platform.cli import main
from ai_platform.errors import ServingError
from ai_platform.evaluation.stage import run_canary
from ai_platform.image import build as image_build
from ai_platform.image.locations import image_location, local_registry, locate
from ai_platform.oci.layout import OciLayout
from ai_platform.platform_repo import git
from ai_platform.prompts import bundle
from ai_platform.prompts.compiler import CompiledPrompt, compile_file
from ai_platform.records import (
    CanaryPass,
    ImageLocation,
    LiveRelease,
    ModelImage,
    ModelState,
    PromptBundle,
    Records,
)
from ai_platform.rollout import local
from ai_platform.serving import state
from ai_platform.specs import SpecSnapshot, snapshot_model_spec


def tiny_image(root: Path) -> ModelImage:
    """An image of one file, built in a layout of its own (not where platform.yaml's registry is)."""
    folder = root / "weights"
    folder.mkdir(parents=True)
    (folder / "weights.txt").write_text("not a model\n")
    layout = OciLayout(root / "built" / MODEL)
    built = image_build.build(layout, folder, MODEL, created="2026-01-01T00:00:00Z", mtime=0)
    return ModelImage(built.digest, ImageLocation(str(layout.root)), "sha256:" + "0" * 64)


def bundles(snap: SpecSnapshot, root: Path) -> tuple[PromptBundle, PromptBundle]:
    """Two prompt bundles of the spec's prompt: as committed, and reworded."""
    layout = OciLayout(root / "bundles")
    document = compile_file(snap.platform.file("prompts/contract_review.prompt")).document
    found = []
    for doc in (document, {**document, "description": "reviewed by legal"}):
        descriptor = bundle.build(layout, MODEL, [CompiledPrompt(doc, "", ())])
        found.append(PromptBundle(descriptor.digest, snap.commit.sha, str(layout.root)))
    return found[0], found[1]


def test_the_embedded_backend_and_the_canary_serve_from_the_records_layout(own_demo_repo: Path, tmp_path: Path) -> None:
    snap = snapshot_model_spec(own_demo_repo, tmp_path / "home", MODEL)
    image = tiny_image(tmp_path)
    assert local_registry(snap.platform, MODEL).root != Path(image.location.layout)  # platform.yaml says elsewhere
    assert locate(image).root == Path(image.location.layout)
    logged: list[str] = []
    # no live colour: the candidate gets a vLLM of its own, from the image unpacked out of the record's layout
    # (the image has no config.json, so the launch stops there, before any process starts)
    with (
        pytest.raises(ServingError, match=r"not a model folder|serve environment not found"),
        EmbeddedBackend().serve_candidate(snap, image, logged.append),
    ):
        pass
    assert [p.name for p in (snap.platform.artifacts_path / "serving").rglob("weights.txt")] == ["weights.txt"]

    # the canary goes through the backend and `locate`: a record whose layout is gone is refused, by `locate`
    moved = replace(image, location=ImageLocation(str(tmp_path / "gone"), ""))
    prompts, _ = bundles(snap, tmp_path)
    with pytest.raises(ServingError, match="is not on this machine"):
        run_canary(snap, moved, prompts, backend=EmbeddedBackend(), log=logged.append)


def test_a_cluster_gets_the_records_pullable_ref_or_none(own_demo_repo: Path, tmp_path: Path) -> None:
    """The image a cluster pulls is the one model_image pushed, whatever platform.yaml's registry says now."""
    pushed = ModelImage(
        "sha256:" + "ab" * 32, ImageLocation("/built/there", f"old.example.com/ml/{MODEL}@sha256:" + "ab" * 32), "w"
    )
    assert locate(pushed, pull=True) == f"old.example.com/ml/{MODEL}@sha256:" + "ab" * 32
    never = replace(pushed, location=ImageLocation("/built/there", ""))
    with pytest.raises(ServingError, match="never pushed"):
        locate(never, pull=True)

    # `rollout render` without --image: the manifests carry the record's ref, though the registry moved since
    config = yaml.safe_load((own_demo_repo / "platform.yaml").read_text())
    config["registry"] = {"url": "https://new.example.com/ml"}
    (own_demo_repo / "platform.yaml").write_text(yaml.safe_dump(config))
    git(own_demo_repo, "commit", "--quiet", "-am", "the registry moved")
    home = own_demo_repo / ".state"
    snap = snapshot_model_spec(own_demo_repo, home, MODEL)
    assert image_location(snap.platform, MODEL, OciLayout("/x"), pushed.digest).pullable.startswith("new.example.com")
    Records(snap.platform.artifacts()).publish(pushed, MODEL)
    out = tmp_path / "k8s"
    gateway = "registry.example.com/ai-platform/code@sha256:" + "ef" * 32
    args = ["rollout", "render", MODEL, "--repo", str(own_demo_repo), "--out", str(out), "--gateway-image", gateway]
    assert main(args) == 0
    deployment = yaml.safe_load((out / f"deployment-{MODEL}-blue.yaml").read_text())
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["image"]["reference"] == locate(pushed, pull=True)

    # the Kubernetes backend's canary goes through `locate`: an image never pushed is refused before any cluster call
    with pytest.raises(ServingError, match="never pushed"), KubernetesBackend().serve_candidate(snap, never, print):
        pass


def test_the_champion_is_the_backends_live_release(own_demo_repo: Path, tmp_path: Path) -> None:
    """The canary compares with what `Backend.live` says users are served (nothing is in the warehouse's
    deployments table here), and a pass hands the rollout the candidate's records."""
    home = tmp_path / "home"
    snap = snapshot_model_spec(own_demo_repo, home, MODEL)
    image = ModelImage("sha256:" + "1" * 64, ImageLocation(str(tmp_path / "not-needed")), "sha256:" + "0" * 64)
    live_bundle, candidate_bundle = bundles(snap, tmp_path)
    backend = EmbeddedBackend()
    assert backend.live(snap.platform, MODEL) is None
    with serving(FakeUpstream(default='{"risk_points": []}')) as upstream:
        live = LiveRelease(
            "blue",
            upstream.url,
            0,
            image.digest,
            live_bundle.digest,
            live_bundle.layout,
            "d",
            local.release_of(snap, image.digest),
            model_image=image,
            prompt_bundle=live_bundle,
        )
        state.save(home, ModelState(MODEL, "", live=live))
        assert backend.live(snap.platform, MODEL) == live
        logged: list[str] = []
        result = run_canary(snap, image, candidate_bundle, backend=backend, log=logged.append)
    assert result.champion is not None and result.champion.bundle_digest == live_bundle.digest
    assert result.candidate.bundle_digest == candidate_bundle.digest
    assert any("the champion as users get it" in m for m in logged)
    assert result.record == CanaryPass(image, candidate_bundle, result.candidate.run_id)


def test_a_state_an_older_platform_wrote_routes_but_cannot_be_rolled_back_to(
    own_demo_repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    snap = snapshot_model_spec(own_demo_repo, home, MODEL)
    old = {
        "color": "blue",
        "base_url": "http://x",
        "pid": 1,
        "image": "sha256:" + "1" * 64,
        "bundle": "b",
        "bundle_layout": "/l",
        "deployment_id": "d",
    }
    path = state.state_dir(home) / f"{MODEL}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"model": MODEL, "warehouse": "", "live": old, "previous": old}))
    live = EmbeddedBackend().live(snap.platform, MODEL)
    assert live is not None and live.base_url == "http://x" and live.model_image is None
    with pytest.raises(ServingError, match="recorded by an older platform"):
        local.rollback(snap, log=print)
