"""Kubernetes manifests for a model: rendered by `ai-platform rollout render`, every built-in kind
validated strictly (`k8s_schema.validate_strictly`): built-in kinds against Kubernetes 1.35, the custom resources
(KEDA, Prometheus operator) against their projects' CRD schemas at pinned versions (tests/crds/).
Applying them needs a cluster: that test is marked `k8s` and skips without one."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from conftest import MODEL
from k8s_schema import CRD_FILES, SchemaError, validate_strictly

from ai_platform.backend.kubernetes import KubernetesBackend
from ai_platform.config import load_platform
from ai_platform.errors import ServingError
from ai_platform.records import ImageLocation, LiveRelease, ModelImage, ModelState, PromptBundle, Records
from ai_platform.rollout.kubernetes import canary_manifests, candidate_server, render, rollout_status

DIGEST = "sha256:" + "ab" * 32
GATEWAY_IMAGE = "registry.example.com/ai-platform/code@sha256:" + "ef" * 32


def rendered(demo_repo: Path) -> list[dict]:
    platform = load_platform(demo_repo)
    return render(
        platform,
        platform.model(MODEL),
        f"registry.example.com/ml/{MODEL}@{DIGEST}",
        "sha256:" + "cd" * 32,
        color="green",
        live="blue",
    )


def test_every_manifest_validates(demo_repo: Path) -> None:
    manifests = rendered(demo_repo)
    kinds = {"Deployment", "Service", "ScaledObject", "NetworkPolicy", "PodMonitor", "PrometheusRule", "ConfigMap"}
    kinds |= {"PodDisruptionBudget"}
    assert {m["kind"] for m in manifests} == kinds
    for manifest in manifests:
        assert manifest["metadata"]["labels"]["app.kubernetes.io/part-of"] == "ai-platform"
        if manifest["kind"] != "ConfigMap":  # the dashboard: one for every model
            assert manifest["metadata"]["labels"]["app.kubernetes.io/name"] == MODEL
        validate_strictly(manifest)


@pytest.mark.parametrize(
    ("kind", "where", "misspelt"),
    [
        ("ScaledObject", ("spec",), "minReplicas"),  # KEDA's is minReplicaCount
        ("ScaledObject", ("spec", "triggers", 0), "metrictype"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0), "scrapeInterval"),  # the operator's is interval
        ("PrometheusRule", ("spec", "groups", 0, "rules", 0), "for_"),
        ("PrometheusRule", ("metadata",), "label"),  # ObjectMeta's is labels
    ],
)
def test_a_misspelt_field_in_a_custom_resource_is_rejected(
    demo_repo: Path, kind: str, where: tuple[str | int, ...], misspelt: str
) -> None:
    """The CRD schemas are closed as the API server closes them: `kubectl apply` (strict field validation) refuses
    an unknown field, and without it the field is pruned: a setting that silently does nothing."""
    manifest = next(m for m in rendered(demo_repo) if m["kind"] == kind)
    validate_strictly(manifest)
    node: Any = manifest
    for step in where:
        node = node[step]
    node[misspelt] = node.get("labels", 1) if misspelt == "label" else 1
    with pytest.raises(SchemaError, match=misspelt):
        validate_strictly(manifest)


def test_a_kind_no_schema_covers_is_an_error() -> None:
    with pytest.raises(SchemaError, match="no schema"):
        validate_strictly({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    with pytest.raises(SchemaError, match="no schema"):  # a version the pinned CRD does not serve
        validate_strictly({"apiVersion": "keda.sh/v1beta9", "kind": "ScaledObject", "metadata": {"name": "w"}})


def test_deployment_serves_the_model_image_on_a_gpu_with_health_probes(demo_repo: Path) -> None:
    deployment = next(m for m in rendered(demo_repo) if m["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"].startswith("vllm/vllm-openai")
    assert pod["volumes"][0] == {
        "name": "model",
        "image": {"reference": f"registry.example.com/ml/{MODEL}@{DIGEST}", "pullPolicy": "IfNotPresent"},
    }
    assert container["args"][container["args"].index("--model") + 1] == f"/model-image/models/{MODEL}"
    assert "--quantization" not in container["args"]  # the checkpoint's own config says how it is quantized
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/health"
    assert deployment["metadata"]["name"] == f"{MODEL}-green"


def test_service_selects_the_live_color_and_keda_watches_the_kv_cache(demo_repo: Path) -> None:
    manifests = {m["kind"]: m for m in rendered(demo_repo)}
    assert manifests["Service"]["spec"]["selector"]["ai-platform/color"] == "blue"
    query = manifests["ScaledObject"]["spec"]["triggers"][0]["metadata"]["query"]
    assert "vllm:kv_cache_usage_perc" in query and "gpu_cache_usage_perc" not in query
    alerts = {r["alert"] for r in manifests["PrometheusRule"]["spec"]["groups"][0]["rules"]}
    assert {
        "VllmKvCacheSaturated",
        "VllmDown",
        "ReplyRepetitionHigh",
        "PiiInReplies",
        "SystemPromptLeaked",
        "PromptInjectionAttempts",
    } <= alerts


def render_cli(demo_repo: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = ["rollout", "render", MODEL, "--repo", str(demo_repo), "--out", str(out), "--json", *extra]
    env = {**os.environ, "AI_PLATFORM_HOME": str(out / "home")}
    return subprocess.run([sys.executable, "-m", "ai_platform.cli", *command], capture_output=True, text=True, env=env)


def test_render_cli_writes_one_file_per_manifest(demo_repo: Path, tmp_path: Path) -> None:
    image = f"registry.example.com/ml/{MODEL}@{DIGEST}"
    done = render_cli(demo_repo, tmp_path, "--image", image, "--gateway-image", GATEWAY_IMAGE)
    assert done.returncode == 0, done.stderr
    files = sorted(tmp_path.glob("*.yaml"))
    kinds = sorted(yaml.safe_load(path.read_text())["kind"] for path in files)
    model = ["Deployment", "Deployment", "ScaledObject", "ScaledObject", "Service", "NetworkPolicy", "PodMonitor"]
    model += ["PodDisruptionBudget", "PodDisruptionBudget"]  # each colour has its own, the idle one too
    shared = ["PrometheusRule", "ConfigMap", "ServiceAccount", "Role", "RoleBinding"]  # the dashboard, the run pods
    shared += ["Role", "CronJob"]  # the operator's Role, the reap
    gateway = ["Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"]
    gateway += ["PodMonitor", "PrometheusRule"]  # its /metrics, GatewayDown
    gateway += ["Deployment", "Service", "NetworkPolicy"]  # the kit's Redis: the replicas' admission windows
    assert kinds == sorted([*model, *shared, *gateway]), kinds
    idle = yaml.safe_load((tmp_path / f"scaledobject-{MODEL}-green.yaml").read_text())
    assert idle["metadata"]["annotations"] == {"autoscaling.keda.sh/paused-replicas": "0"}  # both colours, one idle
    for path in files:
        text = path.read_text()
        assert "&id" not in text and "*id" not in text, f"{path.name}: YAML anchors"
        assert ":latest" not in text and "0" * 64 not in text, f"{path.name}: an unpinned or placeholder image"
        validate_strictly(yaml.safe_load(text))
    deployment = yaml.safe_load((tmp_path / f"deployment-{MODEL}-blue.yaml").read_text())
    assert deployment["spec"]["template"]["spec"]["volumes"][0]["image"]["reference"] == image


def test_render_cli_refuses_a_placeholder_or_an_unpinned_image(demo_repo: Path, tmp_path: Path) -> None:
    done = render_cli(demo_repo, tmp_path)  # nothing shipped yet and no --image: no placeholder either
    assert done.returncode != 0 and "model_image has not been materialized" in done.stderr, done.stderr
    done = render_cli(demo_repo, tmp_path, "--image", f"registry.example.com/ml/{MODEL}:v1")
    assert done.returncode != 0 and "pin the model image by digest" in done.stderr, done.stderr
    assert not list(tmp_path.glob("*.yaml"))


def test_the_canary_candidate_has_its_own_deployment_and_service_that_users_never_reach(demo_repo: Path) -> None:
    platform = load_platform(demo_repo)
    spec = platform.model(MODEL)
    candidate, own = canary_manifests(platform, spec, f"registry.example.com/ml/{MODEL}@{DIGEST}", DIGEST)
    for manifest in (candidate, own):
        validate_strictly(manifest)
        assert manifest["metadata"]["name"] == f"{MODEL}-canary-{'ab' * 6}"
    assert candidate["spec"]["replicas"] == 1
    assert "ai-platform/bundle" not in candidate["metadata"]["annotations"]  # the eval sends the prompts
    pods = candidate["spec"]["template"]["metadata"]["labels"]
    assert all(pods.get(k) == v for k, v in own["spec"]["selector"].items())
    users = next(m for m in rendered(demo_repo) if m["kind"] == "Service")["spec"]["selector"]
    assert not all(pods.get(k) == v for k, v in users.items())  # the model's Service never selects the candidate


def test_a_prompt_only_canary_on_kubernetes_uses_the_live_service(demo_repo: Path, tmp_path: Path) -> None:
    from ai_platform.rollout.kubernetes import release

    platform = load_platform(demo_repo, home=tmp_path)
    spec = platform.model(MODEL)
    snap = SimpleNamespace(platform=platform, spec=spec)
    on_disk = ModelImage(DIGEST, ImageLocation(str(tmp_path / "oci" / MODEL)), "sha256:" + "0" * 64)  # not pushed
    prompts = PromptBundle("sha256:" + "cd" * 32, "c", str(tmp_path / "oci" / f"{MODEL}-prompts"))
    live = LiveRelease(
        "green", "http://x", 0, DIGEST, prompts.digest, "", "d", release(platform, spec, DIGEST), "", on_disk, prompts
    )
    records = Records(platform.artifacts())
    records.publish(ModelState(MODEL, "", live=live), MODEL)
    logged: list[str] = []
    with candidate_server(snap, on_disk, log=logged.append) as url:  # same release: no cluster call at all
        # <name>.<namespace>.svc: every pod's resolv.conf search path completes it, whatever the cluster domain
        assert url == f"http://{MODEL}.{platform.config.kubernetes.namespace}.svc"
    assert "live green Service" in logged[0]

    # the same image under other server settings is another release: the candidate needs its own Deployment
    # (here its image reference fails first: the record says it was never pushed); the champion is still the live one
    records.publish(ModelState(MODEL, "", live=replace(live, release="sha256:" + "0" * 64)), MODEL)
    with (
        pytest.raises(ServingError, match="a cluster pulls images from a registry"),
        candidate_server(snap, on_disk, log=logged.append),
    ):
        pass
    with candidate_server(snap, on_disk, log=logged.append, champion=True) as url:
        assert url.startswith(f"http://{MODEL}.")


@pytest.mark.k8s
def test_apply_on_a_live_cluster(demo_repo: Path) -> None:
    """The API server itself accepts the rollout's and the canary's core objects (server-side dry run;
    the CRD kinds need KEDA and the Prometheus operator installed, so they are left out here). The
    image volume needs Kubernetes >= 1.35 (or the ImageVolume feature gate)."""
    from kubernetes import client, config, dynamic

    config.load_config()
    assert client.VersionApi().get_code().major == "1"
    api = dynamic.DynamicClient(client.ApiClient())
    platform = load_platform(demo_repo)
    core = [m for m in rendered(demo_repo) if (m["apiVersion"], m["kind"]) not in CRD_FILES]
    core += canary_manifests(platform, platform.model(MODEL), f"registry.example.com/ml/{MODEL}@{DIGEST}", DIGEST)
    for manifest in core:
        manifest["metadata"]["namespace"] = "default"  # one that every cluster has
        resource = api.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        resource.server_side_apply(
            body=manifest,
            name=manifest["metadata"]["name"],
            namespace=manifest["metadata"].get("namespace"),
            field_manager="ai-platform-test",
            dry_run="All",
        )


def deployment_status(generation: int, desired: int, **status: object) -> dict:
    """A Deployment as the API server returns it (camelCase; zero counts omitted, as the API omits them)."""
    found = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"{MODEL}-green", "namespace": "ai-platform", "generation": generation},
        "spec": {
            "replicas": desired,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "vllm"}]}},
        },
        "status": {k: v for k, v in status.items() if v},
    }
    validate_strictly(found)
    return found


PROGRESSING = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
STUCK = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet x"}


@pytest.mark.parametrize(
    ("case", "deployment", "done"),
    [
        # just created: the controller has not counted anything (ready == replicas == None passed the old check)
        ("fresh", deployment_status(1, 2), False),
        # the idle colour still runs the image of two rollouts ago: its old pods are ready, none of the new exist
        (
            "old pods ready",
            deployment_status(3, 2, observedGeneration=2, replicas=2, readyReplicas=2, availableReplicas=2,
                              updatedReplicas=2),
            False,
        ),
        (
            "old pods ready, new spec observed",
            deployment_status(3, 2, observedGeneration=3, replicas=2, readyReplicas=2, availableReplicas=2,
                              updatedReplicas=0),
            False,
        ),
        (
            "rolling",
            deployment_status(3, 2, observedGeneration=3, replicas=3, readyReplicas=2, availableReplicas=2,
                              updatedReplicas=2, conditions=[PROGRESSING]),
            False,
        ),
        (
            "updated, not yet available",
            deployment_status(3, 2, observedGeneration=3, replicas=2, readyReplicas=1, availableReplicas=1,
                              updatedReplicas=2),
            False,
        ),
        (
            "complete",
            deployment_status(3, 2, observedGeneration=3, replicas=2, readyReplicas=2, availableReplicas=2,
                              updatedReplicas=2, conditions=[PROGRESSING]),
            True,
        ),
    ],
)  # fmt: skip
def test_rollout_complete_means_what_kubectl_rollout_status_means(case: str, deployment: dict, done: bool) -> None:
    assert rollout_status(deployment)[0] is done, case


def test_a_stuck_rollout_is_an_error_not_a_wait() -> None:
    stuck = deployment_status(
        3, 2, observedGeneration=3, replicas=3, updatedReplicas=1, availableReplicas=2, conditions=[STUCK]
    )
    with pytest.raises(ServingError, match="exceeded its progress deadline"):
        rollout_status(stuck)


def desired_replicas(scaled: dict, usage_per_pod: list[float]) -> int:
    """What KEDA's HPA asks for: the trigger's query evaluated on the colour's pods (its outer aggregation
    over each pod's windowed KV-cache use), then the HPA's formula for an AverageValue external metric,
    ceil(value / target), within the ScaledObject's bounds."""
    trigger = scaled["spec"]["triggers"][0]
    assert trigger.get("metricType", "AverageValue") == "AverageValue"
    outer = re.match(r"^(sum|avg|max|min)\(avg_over_time\(vllm:kv_cache_usage_perc\{[^}]*\}\[\w+\]\)\)$",
                     trigger["metadata"]["query"])  # fmt: skip
    assert outer, trigger["metadata"]["query"]
    aggregate = {"sum": sum, "max": max, "min": min, "avg": lambda v: sum(v) / len(v)}[outer[1]]
    want = math.ceil(aggregate(usage_per_pod) / float(trigger["metadata"]["threshold"]))
    return max(scaled["spec"]["minReplicaCount"], min(scaled["spec"]["maxReplicaCount"], want))


def test_keda_scales_a_saturated_colour_past_two_replicas(demo_repo: Path) -> None:
    scaled = next(m for m in rendered(demo_repo) if m["kind"] == "ScaledObject")
    assert scaled["spec"]["maxReplicaCount"] == 4
    pods = [0.95, 0.95]
    for _ in range(4):  # every pod saturated: each evaluation asks for more, up to max_replicas
        pods = [0.95] * desired_replicas(scaled, pods)
    assert len(pods) == 4
    assert desired_replicas(scaled, [0.2, 0.2, 0.2, 0.2]) == 1  # idle: back down to min


def test_after_a_switch_the_old_colour_keeps_its_objects_but_no_gpus(demo_repo: Path) -> None:
    from ai_platform.rollout.kubernetes import PAUSED_REPLICAS, switch

    platform = load_platform(demo_repo)
    ref = f"registry.example.com/ml/{MODEL}@{DIGEST}"
    plan = switch(platform, platform.model(MODEL), ref, "sha256:" + "cd" * 32, color="green", old="blue")
    started = {(m["kind"], m["metadata"]["name"]): m for m in plan.start}
    assert PAUSED_REPLICAS not in started["ScaledObject", f"{MODEL}-green"]["metadata"].get("annotations", {})
    assert plan.route["spec"]["selector"]["ai-platform/color"] == "green"
    (retired,) = plan.retire
    assert retired["metadata"]["name"] == f"{MODEL}-blue"
    assert retired["metadata"]["annotations"] == {PAUSED_REPLICAS: "0"}  # KEDA scales blue to 0 and holds it
    first = switch(platform, platform.model(MODEL), ref, "sha256:" + "cd" * 32, color="blue", old=None)
    assert first.retire == []


def test_rollback_on_kubernetes_returns_to_what_was_live_before_the_last_switch(own_demo_repo: Path) -> None:
    from ai_platform.rollout.kubernetes import next_state, rollback_target

    config = yaml.safe_load((own_demo_repo / "platform.yaml").read_text())
    config["registry"] = {"url": "https://registry.example.com/ml"}  # a cluster's gateway pulls bundles
    (own_demo_repo / "platform.yaml").write_text(yaml.safe_dump(config))
    platform = load_platform(own_demo_repo)
    spec = platform.model(MODEL)

    def shipped(n: str) -> tuple[ModelImage, PromptBundle]:
        where = ImageLocation("/built/elsewhere", f"registry.example.com/ml/{MODEL}@sha256:{n * 64}")
        pushed = f"registry.example.com/ml/{MODEL}-prompts@sha256:{n * 64}"
        return ModelImage(f"sha256:{n * 64}", where, "w"), PromptBundle(f"sha256:{n * 64}", "c", "/elsewhere", pushed)

    with pytest.raises(ServingError, match="nothing to roll back to"):
        rollback_target(None, MODEL)
    image, prompts = shipped("1")
    with pytest.raises(ServingError, match="never pushed"):  # the gateway pulls the bundle the record names, or none
        next_state(platform, spec, None, "blue", image, replace(prompts, pullable=""), "d0")
    first = next_state(platform, spec, None, "blue", *shipped("1"), "d1")
    assert first.live is not None and first.live.bundle_layout == prompts.pullable
    with pytest.raises(ServingError, match="nothing to roll back to"):
        rollback_target(first, MODEL)
    second = next_state(platform, spec, first, "green", *shipped("2"), "d2")
    assert rollback_target(second, MODEL) == shipped("1")  # the records, as the first rollout kept them
    assert second.previous is not None and second.previous.color == "blue"
    # the rollback is a switch back to blue; rolling back again returns to green
    back = next_state(platform, spec, second, "blue", *rollback_target(second, MODEL), "d3")
    assert rollback_target(back, MODEL) == shipped("2")
    # what a machine with an empty home reads: the state in the artifact store, typed
    Records(platform.artifacts()).publish(back, MODEL)
    live = KubernetesBackend().live(platform, MODEL)
    assert live is not None and live.model_image == shipped("1")[0] and live.color == "blue"
    assert live.runtime == platform.config.kubernetes.gpu.image and live.replicas >= 1


def test_the_gateway_in_the_cluster_and_who_may_call_vllm(demo_repo: Path, tmp_path: Path) -> None:
    from ai_platform.rollout import cluster_gateway
    from ai_platform.rollout.kubernetes import GATEWAY, RUN_POD

    platform = load_platform(demo_repo)
    gateway = {m["kind"]: m for m in cluster_gateway.manifests(platform, GATEWAY_IMAGE)}
    for manifest in gateway.values():
        validate_strictly(manifest)
    pod = gateway["Deployment"]["spec"]["template"]
    # the HPA owns the scale: a Deployment that set `replicas` would be reset to it by every `kubectl apply -f kit/`
    assert "replicas" not in gateway["Deployment"]["spec"]
    assert gateway["HorizontalPodAutoscaler"]["spec"]["minReplicas"] >= 2  # what starts it
    assert pod["spec"]["automountServiceAccountToken"] is False  # it never calls the API server
    assert gateway["PodDisruptionBudget"]["spec"]["minAvailable"] == 1
    args = pod["spec"]["containers"][0]["args"]
    assert args[args.index("--states-from") + 1] == platform.config.registry.url  # rollouts from the registry
    assert args[args.index("--window-storage") + 1].startswith("redis://")  # the replicas' one window
    assert pod["metadata"]["labels"].items() >= GATEWAY.items()

    models = {m["kind"]: m for m in rendered(demo_repo)}
    policy = models["NetworkPolicy"]["spec"]
    vllm_pod = models["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= vllm_pod.items()  # it selects the model's vLLM pods
    admitted = [peer.get("podSelector", {}).get("matchLabels") for rule in policy["ingress"] for peer in rule["from"]]
    assert GATEWAY in admitted and RUN_POD in admitted and len([a for a in admitted if a]) == 2
    env = models["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "ai-platform-vllm",
            "key": "AI_PLATFORM_VLLM_API_KEY"}}} in env  # fmt: skip

    with pytest.raises(ServingError, match="pinned by digest"):
        cluster_gateway.manifests(platform, "registry.example.com/ai-platform/code:latest")


def test_our_clients_send_the_vllm_key_where_one_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from ai_platform.serving.upstream import VLLM_API_KEY_ENV, upstream_headers

    monkeypatch.delenv(VLLM_API_KEY_ENV, raising=False)
    assert upstream_headers() == {}
    monkeypatch.setenv(VLLM_API_KEY_ENV, "s3cret")
    assert upstream_headers() == {"Authorization": "Bearer s3cret"}


def test_the_stand_in_api_server_refuses_what_a_strict_cluster_refuses(demo_repo: Path, tmp_path: Path) -> None:
    """`tests/fake_kube.py` answers an apply the schemas reject with 422, so every switch test checks what it
    applies, as the API server would."""
    from fake_kube import FakeKube, kubeconfig, serving
    from kubernetes import config, dynamic
    from kubernetes.client.exceptions import ApiException

    scaled = next(m for m in rendered(demo_repo) if m["kind"] == "ScaledObject")
    with serving(FakeKube(lambda pod: 1)) as kube:
        api = dynamic.DynamicClient(config.new_client_from_config(str(kubeconfig(kube, tmp_path / "kubeconfig"))))
        resource = api.resources.get(api_version=scaled["apiVersion"], kind=scaled["kind"])
        name, ns = scaled["metadata"]["name"], scaled["metadata"]["namespace"]
        resource.server_side_apply(body=scaled, name=name, namespace=ns, field_manager="t", force_conflicts=True)
        scaled["spec"]["maxReplicas"] = 3  # KEDA's is maxReplicaCount
        with pytest.raises(ApiException) as refused:
            resource.server_side_apply(body=scaled, name=name, namespace=ns, field_manager="t", force_conflicts=True)
        assert refused.value.status == 422 and "maxReplicas" in str(refused.value.body)
