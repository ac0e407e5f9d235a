"""A cluster's gateway replicas follow rollouts kept in the registry, not a file: two real gateway processes,
each with a home of its own (two pods share no disk), read the model's state from the artifact store in a real
docker-registry and pull its prompt bundle from there by digest; a prompt-only rollout (a new bundle, the same
model server) reaches both without a reload call and without touching the model server."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
from conftest import MODEL, LocalRegistry
from fake_upstream import FakeUpstream
from gateway_harness import api_key
from gateway_process import start

from ai_platform.config import ModelSpec, load_platform
from ai_platform.oci.layout import OciLayout
from ai_platform.oci.registry import Reference, push
from ai_platform.oci.store import RegistryStore
from ai_platform.prompts import bundle
from ai_platform.prompts.compiler import compile_bytes
from ai_platform.records import ImageLocation, ModelImage, PromptBundle
from ai_platform.rollout.kubernetes import next_state
from ai_platform.serving.state import GATEWAY_STATE, Color, ModelState

BEFORE, AFTER = b'user: "Review: {{text}}"\n', b'user: "Review this contract: {{text}}"\n'


def ship(store: RegistryStore, registry: LocalRegistry, upstream: FakeUpstream, prompt: bytes, tmp: Path) -> str:
    """What a Kubernetes rollout leaves in the registry: the bundle by digest, and the model's state."""
    layout = OciLayout(tmp / "build" / "prompts")
    compiled = compile_bytes(prompt, "prompts/review.prompt")
    digest = bundle.build(layout, MODEL, [compiled]).digest
    repository = f"{registry.host}/cluster/{MODEL}-prompts"
    push(layout, "latest", Reference.parse(f"{repository}:sha-{digest[7:23]}"))
    live = Color("blue", upstream.url, 0, "sha256:" + "a" * 64, digest, f"{repository}@{digest}", "d", "r")
    store.set_ref(GATEWAY_STATE, MODEL, ModelState(MODEL, str(tmp / "wh.duckdb"), live=live).to_json())
    return compiled.version


def run(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{url}/v1/prompts/review:run", json={"variables": {"text": "x"}}, headers=headers, timeout=30)


def test_replicas_follow_a_clusters_rollouts_from_the_registry(
    tmp_path: Path, registry: LocalRegistry, upstream: FakeUpstream
) -> None:
    url = f"http://{registry.host}/cluster"
    store = RegistryStore(url, tmp_path / "rollout-pod")
    pods = [tmp_path / "gateway-a", tmp_path / "gateway-b"]
    key = api_key(pods[0], "app")
    shutil.copytree(pods[0] / "gateway", pods[1] / "gateway")  # the same Secret, mounted in each pod
    headers = {"Authorization": f"Bearer {key}"}
    upstream.default = '{"risk": "low"}'
    first = ship(store, registry, upstream, BEFORE, tmp_path)
    replicas = [start(pod, "--states-from", url) for pod in pods]
    try:
        for _, gateway in replicas:
            reply = run(gateway, headers)
            assert reply.status_code == 200 and reply.json()["prompt_version"] == first, reply.text
        served_before = len(upstream.requests)

        second = ship(store, registry, upstream, AFTER, tmp_path)
        changed, seen = time.monotonic(), [first, first]
        while seen != [second, second] and time.monotonic() < changed + 30:
            seen = [run(gateway, headers).json()["prompt_version"] for _, gateway in replicas]
        assert seen == [second, second], "each replica follows the registry within its state watch"
        print(f"prompt-only rollout reached both replicas in {time.monotonic() - changed:.2f} s")
        assert len(upstream.requests) > served_before  # the same model server kept serving
    finally:
        for process, _ in replicas:
            process.terminate()
            process.wait(timeout=10)
    assert not any((pod / "rollout" / f"{MODEL}.json").exists() for pod in pods), "no state file was involved"


def test_a_kubernetes_rollout_tells_the_gateway_the_service_and_the_bundle_by_digest(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    vllm = f"vllm/vllm-openai:v0.30.0@sha256:{'3' * 64}"
    (root / "platform.yaml").write_text(
        f"name: acme\nregistry: {{url: https://registry.example.com/ml}}\nkubernetes: {{gpu: {{image: {vllm}}}}}\n"
    )
    platform = load_platform(root, home=tmp_path / "home")
    spec = ModelSpec.model_validate(
        {
            "name": MODEL,
            "source": {"kind": "local", "path": "w"},
            "prompts": ["review"],
            "canary": {"evals": ["e"], "gates": [{"metric": "schema_valid_rate", "min": 0.9}]},
        }
    )
    pullable = f"registry.example.com/ml/{MODEL}@sha256:{'1' * 64}"
    image = ModelImage("sha256:" + "1" * 64, ImageLocation("/nowhere", pullable), "w")
    pushed = f"registry.example.com/ml/{MODEL}-prompts@sha256:{'2' * 64}"
    prompts = PromptBundle("sha256:" + "2" * 64, "c", "/nowhere", pushed)
    state = next_state(platform, spec, None, "green", image, prompts, "dep")
    assert state.live is not None
    assert state.live.base_url == f"http://{MODEL}.ai-platform.svc"
    assert state.live.bundle_layout == f"registry.example.com/ml/{MODEL}-prompts@sha256:{'2' * 64}"
    assert state.live.model_image == image and state.live.prompt_bundle == prompts  # the records, for a rollback
    assert state.inbox == "" and state.keys_file == "" and state.guards  # no paths of the rollout's machine
