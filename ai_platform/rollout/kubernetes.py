"""Blue/green on Kubernetes: manifests rendered from the model spec, applied server-side.

Per model: a Deployment per color (`vllm/vllm-openai`, the model mounted from
our OCI model image as an image volume, KEP-4639), a Service whose selector
names the live color, a KEDA ScaledObject on `vllm:kv_cache_usage_perc`, a
PodMonitor, PrometheusRule alerts, and the Grafana dashboard as a ConfigMap. A rollout applies the idle color, waits
for it to be ready, flips the Service selector, and keeps the old color for
rollback. The canary eval runs against a candidate Deployment of its own.

What is live is one `records.ModelState` in the artifact store (`gateway_state`):
the cluster's gateway replicas route by it, a rollback returns to its `previous`,
and any machine with the registry artifact store reads it (`live_state`). The
image every Deployment mounts is the one its `ModelImage` record names
(`image.locations.locate`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ai_platform.config import PINNED_IMAGE, ModelSpec, Platform
from ai_platform.errors import ServingError
from ai_platform.image.locations import locate
from ai_platform.kube import gpu_scheduling
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle, Records
from ai_platform.serving import dashboard
from ai_platform.serving.release import release_id
from ai_platform.serving.state import record_live, settings
from ai_platform.serving.upstream import VLLM_API_KEY_ENV
from ai_platform.serving.vllm import server_args

PORT = 8000
MOUNT = "/model-image"
MANAGER = "ai-platform"
CANARY = "canary"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"  # KEDA scales the target to this and stops scaling it


def labels(model: str, color: str | None = None) -> dict[str, str]:
    found = {
        "app.kubernetes.io/name": model,
        "app.kubernetes.io/component": "inference",
        "app.kubernetes.io/part-of": "ai-platform",
        "app.kubernetes.io/managed-by": MANAGER,
    }
    if color:
        found["app.kubernetes.io/instance"] = f"{model}-{color}"
        found["ai-platform/color"] = color
    return found


def release(platform: Platform, spec: ModelSpec, image: str) -> str:
    """The release `image` is in the cluster: with the spec's server settings, on the pinned vLLM image."""
    return release_id(image, spec.serving, vllm_image(platform))


def vllm_image(platform: Platform) -> str:
    """The vLLM image of every colour and of the canary's candidate: what passed the canary is what serves."""
    image = platform.config.kubernetes.gpu.image
    if not image or not PINNED_IMAGE.match(image):
        raise ServingError(
            f"kubernetes.gpu.image: {image or 'not set'}; the vLLM image must be pinned by digest"
            " (e.g. vllm/vllm-openai:v0.30.0@sha256:…)"
        )
    return image


def deployment(platform: Platform, spec: ModelSpec, color: str, image_ref: str, bundle: str) -> dict[str, Any]:
    k8s = platform.config.kubernetes
    gpu = {k8s.gpu.resource: str(k8s.gpu.count)}
    args = server_args(Path(MOUNT) / "models" / spec.name, spec.name, spec.serving, "gpu", "0.0.0.0", PORT)
    probe = {"httpGet": {"path": "/health", "port": "http"}}
    pod: dict[str, Any] = {
        "containers": [
            {
                "name": "vllm",
                "image": vllm_image(platform),
                "args": args,
                "ports": [{"name": "http", "containerPort": PORT}],
                # vLLM's --api-key, from the Secret the gateway and the run pods also carry
                "env": [
                    {
                        "name": "VLLM_API_KEY",
                        "valueFrom": {"secretKeyRef": {"name": k8s.vllm_api_key_secret, "key": VLLM_API_KEY_ENV}},
                    }
                ],
                "resources": {"limits": gpu, "requests": gpu},
                "volumeMounts": [{"name": "model", "mountPath": MOUNT, "readOnly": True}],
                "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 90},  # big models load slowly
                "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
                "livenessProbe": {**probe, "periodSeconds": 15, "failureThreshold": 4},
            }
        ],
        "volumes": [{"name": "model", "image": {"reference": image_ref, "pullPolicy": "IfNotPresent"}}],
    }
    pod.update(gpu_scheduling(platform))
    selector = {"app.kubernetes.io/name": spec.name, "ai-platform/color": color}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"{spec.name}-{color}",
            "namespace": k8s.namespace,
            "labels": labels(spec.name, color),
            "annotations": {"ai-platform/image": image_ref, "ai-platform/bundle": bundle},
        },
        "spec": {
            "replicas": max(1, k8s.autoscaling.min_replicas),
            "progressDeadlineSeconds": 1200,  # past the startup probe's 900 s: a stuck rollout says so
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": labels(spec.name, color)}, "spec": pod},
        },
    }


def replicas(platform: Platform) -> int:
    """The replicas a colour starts with (KEDA moves it from there)."""
    return max(1, platform.config.kubernetes.autoscaling.min_replicas)


def service(platform: Platform, spec: ModelSpec, live_color: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": spec.name, "namespace": platform.config.kubernetes.namespace, "labels": labels(spec.name)},
        "spec": {
            "selector": {"app.kubernetes.io/name": spec.name, "ai-platform/color": live_color},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    }


def scaled_object(platform: Platform, spec: ModelSpec, color: str, *, retired: bool = False) -> dict[str, Any]:
    """KEDA on the colour's KV-cache use. The query sums over the colour's pods: with KEDA's AverageValue
    target the HPA wants ceil(sum / threshold) replicas, which grows with load; an average (at most 1.0)
    capped that at ceil(1 / threshold), 2 replicas, whatever `max_replicas` said. A retired colour (the one
    a switch left idle) is paused at 0 replicas: it keeps its objects for a rollback, not its GPUs."""
    k8s = platform.config.kubernetes
    scale = k8s.autoscaling
    query = (
        f'sum(avg_over_time(vllm:kv_cache_usage_perc{{namespace="{k8s.namespace}",'
        f'pod=~"{spec.name}-{color}-.*"}}[{scale.window}]))'
    )
    metadata: dict[str, Any] = {
        "name": f"{spec.name}-{color}",
        "namespace": k8s.namespace,
        "labels": labels(spec.name, color),
    }
    if retired:
        metadata["annotations"] = {PAUSED_REPLICAS: "0"}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": metadata,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{spec.name}-{color}"},
            "minReplicaCount": scale.min_replicas,
            "maxReplicaCount": scale.max_replicas,
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": scale.prometheus_url,
                        "query": query,
                        "threshold": str(scale.kv_cache_threshold),
                    },
                }
            ],
        },
    }


def pod_monitor(platform: Platform, spec: ModelSpec) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": spec.name, "namespace": platform.config.kubernetes.namespace, "labels": labels(spec.name)},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": spec.name}},
            "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
        },
    }


def prometheus_rule(platform: Platform, spec: ModelSpec) -> dict[str, Any]:
    ns, name = platform.config.kubernetes.namespace, spec.name
    match = f'namespace="{ns}",pod=~"{name}-(blue|green)-.*"'
    alerts = [
        (
            "VllmKvCacheSaturated",
            f"max(vllm:kv_cache_usage_perc{{{match}}}) > 0.95",
            "10m",
            "warning",
            "KV cache above 95% for 10 minutes: requests queue; scale out or cap max_num_seqs",
        ),
        (
            "VllmRequestsQueued",
            f"sum(vllm:num_requests_waiting{{{match}}}) > 20",
            "5m",
            "warning",
            "more than 20 requests waiting for 5 minutes",
        ),
        (
            "VllmSlowFirstToken",
            f"histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{match}}}[5m]))) > 5",
            "10m",
            "warning",
            "p95 time to first token above 5 s",
        ),
        ("VllmDown", f"sum(up{{{match}}}) == 0", "5m", "critical", "no vLLM pod of the model is scraped"),
        (
            "VllmRestartingRepeatedly",  # the kubelet's restarts here; the embedded supervisor's on its gateway
            f"sum(increase(kube_pod_container_status_restarts_total{{{match}}}[15m])) >= 3"
            f' or max(delta(ai_platform_gateway_upstream_restarts{{model="{name}"}}[15m])) >= 3',
            "0m",
            "critical",
            "its vLLM was restarted 3 times or more in 15 minutes",
        ),
    ]
    golden = [  # the gateway's golden metrics, at the reference article's thresholds
        (
            "ReplyRepetitionHigh",
            f'sum(rate(ai_platform_reply_repetition_ratio_sum{{model="{name}"}}[10m]))'
            f' / sum(rate(ai_platform_reply_repetition_ratio_count{{model="{name}"}}[10m])) > 0.05',
            "10m",
            "warning",
            "mean seq-rep-4 of replies above 5%: the model is looping",
        ),
        (
            "PiiInReplies",
            f'sum(increase(ai_platform_reply_pii_entities_total{{model="{name}"}}[5m])) > 0',
            "0m",
            "critical",
            "a reply carried validated PII",
        ),
        (
            "PromptInjectionAttempts",
            f'sum(rate(ai_platform_request_injection_score_count{{model="{name}"}}[5m]))'
            f' - sum(rate(ai_platform_request_injection_score_bucket{{model="{name}",le="0.8"}}[5m])) > 0',
            "0m",
            "warning",
            "inputs with a prompt-injection score above 0.8",
        ),
        (
            "ReplySchemaInvalid",
            f'1 - sum(rate(ai_platform_replies_schema_valid_total{{model="{name}"}}[10m]))'
            f' / sum(rate(ai_platform_replies_total{{model="{name}"}}[10m])) > 0.01',
            "10m",
            "warning",
            "more than 1% of replies fail the prompt's output schema",
        ),
    ]
    rules = [
        {
            "alert": alert,
            "expr": expr,
            "for": window,
            "labels": {"severity": severity, "model": name},
            "annotations": {"summary": f"{name}: {summary}"},
        }
        for alert, expr, window, severity, summary in alerts + golden
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": ns, "labels": labels(name)},
        "spec": {"groups": [{"name": f"{name}.vllm", "rules": rules}]},
    }


def render(
    platform: Platform, spec: ModelSpec, image_ref: str, bundle: str, color: str, live: str
) -> list[dict[str, Any]]:
    """Everything one rollout applies: the `color` Deployment and autoscaler, the Service on `live`, who may call
    vLLM, monitoring."""
    return [
        deployment(platform, spec, color, image_ref, bundle),
        scaled_object(platform, spec, color),
        service(platform, spec, live),
        network_policy(platform, spec),
        pod_monitor(platform, spec),
        prometheus_rule(platform, spec),
        dashboard_config_map(platform),
    ]


GATEWAY = {"app.kubernetes.io/name": "ai-platform-gateway", "app.kubernetes.io/component": "gateway"}
RUN_POD = {"ai-platform/role": "run"}  # set on run and step pods by deploy/helm/dagster-values.yaml


def network_policy(platform: Platform, spec: ModelSpec) -> dict[str, Any]:
    """The model's vLLM pods (every colour, the canary's candidate) take requests from the gateway and from run
    pods (the canary, the warm-up) only, and scrapes from the monitoring namespace."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": f"{spec.name}-vllm",
            "namespace": platform.config.kubernetes.namespace,
            "labels": labels(spec.name),
        },
        "spec": {
            "podSelector": {
                "matchLabels": {"app.kubernetes.io/name": spec.name, "app.kubernetes.io/component": "inference"}
            },
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": GATEWAY}}, {"podSelector": {"matchLabels": RUN_POD}}]},
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
                    "ports": [{"port": "http"}],
                },
            ],
        },
    }


def dashboard_config_map(platform: Platform) -> dict[str, Any]:
    """The Grafana dashboard (every model's, one object), labelled for Grafana's dashboard sidecar."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "ai-platform-dashboard",
            "namespace": platform.config.kubernetes.namespace,
            "labels": {"grafana_dashboard": "1", "app.kubernetes.io/part-of": "ai-platform"},
        },
        "data": {"ai-platform.json": dashboard.text()},
    }


def live_state(platform: Platform, model: str) -> ModelState | None:
    """The model's state as the last rollout left it in the artifact store (None: never rolled out)."""
    return Records(platform.artifacts()).find(ModelState, model)


def idle_color(current: ModelState | None) -> str:
    """The color a rollout starts: the one the last rollout did not leave live."""
    return current.idle_color if current else "blue"


def service_url(name: str, namespace: str) -> str:
    """A Service's in-cluster address: the canary step runs in the cluster (k8s_job_executor), so it resolves."""
    return f"http://{name}.{namespace}.svc.cluster.local"


@dataclass(frozen=True)
class Switch:
    """One blue/green switch, in the order it is applied."""

    start: list[dict[str, Any]]  # the new colour (unpaused), monitoring: applied, then waited on
    route: dict[str, Any]  # the Service, selecting the new colour: applied once it has rolled out
    retire: list[dict[str, Any]]  # the old colour's ScaledObject, paused at 0 replicas: applied last


def switch(platform: Platform, spec: ModelSpec, image_ref: str, bundle: str, color: str, old: str | None) -> Switch:
    manifests = render(platform, spec, image_ref, bundle, color, live=color)
    route = manifests.pop(2)
    retire = [scaled_object(platform, spec, old, retired=True)] if old and old != color else []
    return Switch(manifests, route, retire)


def rollback_target(current: ModelState | None, model: str) -> tuple[ModelImage, PromptBundle]:
    """The image and bundle a rollback returns to: what was live before the last switch, as records."""
    previous = current.previous if current else None
    if previous is None or previous.model_image is None or previous.prompt_bundle is None:
        raise ServingError(f"{model}: nothing to roll back to on Kubernetes (no previous rollout recorded)")
    return previous.model_image, previous.prompt_bundle


def apply_rollout(
    snap: Any,
    image: ModelImage,
    bundle: PromptBundle,
    *,
    log: Log,
    reason: str = "canary passed",
    timeout_s: float = 1800.0,
) -> dict[str, Any]:
    """Server-side apply the idle color, wait until it has rolled out, flip the Service, and pause the old
    color at 0 replicas (its objects stay, for a rollback). A rollback is this switch back to the previous
    image and bundle."""
    platform, spec = snap.platform, snap.spec
    current = live_state(platform, spec.name)
    ref = locate(image, pull=True)
    ns, this_release = platform.config.kubernetes.namespace, release(platform, spec, image.digest)
    if current and current.live and current.live.release == this_release:  # prompts only: vLLM stays as it is
        color, kind = current.live.color, "prompts"
        log(f"{spec.name}: same release on {color}; the gateway replicas pick up prompts {bundle.digest[:19]}")
    else:
        color, kind = idle_color(current), "model"
        old = current.live.color if current and current.live else None
        _switch(platform, spec, ref, bundle.digest, color, old, log, timeout_s)
    deployment_id = uuid.uuid4().hex
    state = next_state(platform, spec, current, color, image, bundle, deployment_id)
    Records(platform.artifacts()).publish(state, spec.name)
    endpoint = service_url(spec.name, ns)
    with platform.warehouse().write() as con:
        record_live(
            con,
            deployment_id=deployment_id,
            model=spec.name,
            target="kubernetes",
            color=color,
            image=image.digest,
            bundle=bundle.digest,
            reason=reason,
            endpoint=endpoint,
        )
    return {
        "kind": kind,
        "color": color,
        "image": image.digest,
        "bundle": bundle.digest,
        "image_ref": ref,
        "namespace": ns,
        "endpoint": endpoint,
    }


def _switch(
    platform: Platform, spec: ModelSpec, ref: str, bundle: str, color: str, old: str | None, log: Log, timeout_s: float
) -> None:
    from kubernetes import client

    api = _client()
    plan = switch(platform, spec, ref, bundle, color, old)
    for manifest in plan.start:
        _apply(api, manifest)
    name, ns = f"{spec.name}-{color}", platform.config.kubernetes.namespace
    _wait_ready(client.AppsV1Api(), name, ns, timeout_s, "the Service still routes to the old color")
    _apply(api, plan.route)
    log(f"{spec.name}: Service now routes to {color} ({ref})")
    for manifest in plan.retire:
        _apply(api, manifest)
        log(f"{spec.name}: {manifest['metadata']['name']} paused at 0 replicas (kept for a rollback)")


def next_state(
    platform: Platform,
    spec: ModelSpec,
    current: ModelState | None,
    color: str,
    image: ModelImage,
    bundle: PromptBundle,
    deployment_id: str,
) -> ModelState:
    """The model's state after a switch to `color`, what the cluster's gateway replicas follow (`ai-platform serve
    --states-from REGISTRY`): the model's Service (which colour it selects is the Service's business), the prompt
    bundle in the registry by digest (as its record says), the gateway settings from platform.yaml and the spec;
    and what was live before (the rollback's target: one step of history, not a chain)."""
    if not bundle.pullable:
        raise ServingError(
            f"prompt bundle {bundle.digest[:19]} was built into an OCI layout on disk and never pushed; a cluster's"
            " gateway pulls bundles from a registry (set registry.url: https://HOST/PREFIX and materialize"
            " prompt_bundle again)"
        )
    runtime = vllm_image(platform)
    live = LiveRelease(
        color,
        service_url(spec.name, platform.config.kubernetes.namespace),
        0,  # no process of ours: the Service and its pods
        image.digest,
        bundle.digest,
        bundle.pullable,
        deployment_id,
        release_id(image.digest, spec.serving, runtime),
        model_image=image,
        prompt_bundle=bundle,
        serving=spec.serving.model_dump(mode="json"),
        runtime=runtime,
        replicas=replicas(platform),
    )
    previous = current.live if current else None
    return ModelState(spec.name, live=live, previous=previous, **settings(platform, spec, local=False))


def canary_manifests(platform: Platform, spec: ModelSpec, image_ref: str, digest: str) -> list[dict[str, Any]]:
    """The candidate alone: one replica and a ClusterIP Service of its own. Its color label is
    `canary-<digest>`, so the model's Service, which selects blue or green, never sends users to it."""
    color = f"{CANARY}-{digest.removeprefix('sha256:')[:12]}"
    candidate = deployment(platform, spec, color, image_ref, bundle="")
    candidate["metadata"]["annotations"].pop("ai-platform/bundle")  # the eval sends the prompts
    candidate["spec"]["replicas"] = 1
    own = service(platform, spec, color)
    own["metadata"]["name"] = f"{spec.name}-{color}"
    own["metadata"]["labels"] = labels(spec.name, color)
    return [candidate, own]


@contextmanager
def candidate_server(
    snap: Any, image: ModelImage, *, log: Log, timeout_s: float = 1800.0, champion: bool = False
) -> Iterator[str]:
    """The base URL of `image` serving in the cluster, for the canary eval.

    The live Service when it already serves this release (a prompt-only change), or, for the
    champion, when it serves `image`; otherwise a candidate Deployment and Service, applied, waited
    on until rolled out, and deleted afterwards, pass or fail.
    """
    from kubernetes import client

    platform, spec = snap.platform, snap.spec
    ns = platform.config.kubernetes.namespace
    current = live_state(platform, spec.name)
    live = current.live if current else None
    digest = image.digest
    what, same = (
        ("image", live and live.image == digest)
        if champion
        else ("release", live and live.release == release(platform, spec, digest))
    )
    if live and same:
        log(f"evaluating on the live {live.color} Service ({digest[:19]}): same {what}, no new Deployment")
        yield service_url(spec.name, ns)
        return
    manifests = canary_manifests(platform, spec, locate(image, pull=True), digest)
    name = manifests[0]["metadata"]["name"]
    api = _client()
    try:
        for manifest in manifests:
            _apply(api, manifest)
        log(f"candidate Deployment {ns}/{name} applied; waiting until ready")
        _wait_ready(client.AppsV1Api(), name, ns, timeout_s, "the candidate was not evaluated")
        yield service_url(name, ns)
    finally:
        for manifest in reversed(manifests):
            _delete(api, manifest)
        log(f"candidate Deployment {ns}/{name} deleted")


def _client() -> Any:
    from kubernetes import client, config, dynamic

    config.load_config()
    return dynamic.DynamicClient(client.ApiClient())


def rollout_status(deployment: dict[str, Any]) -> tuple[bool, str]:
    """Whether a Deployment (as the API returns it, camelCase) has finished rolling out, with
    `kubectl rollout status` semantics: the controller has observed the latest spec, every desired
    replica runs the new template, no old replica is left, and every new one is available. Ready
    replicas alone are not enough: on a fresh Deployment nothing is counted yet, and on a colour that
    still runs an older image the old pods are ready before the new ones exist.
    """
    name = deployment["metadata"]["name"]
    status, desired = deployment.get("status") or {}, (deployment.get("spec") or {}).get("replicas", 1)
    if deployment["metadata"].get("generation", 0) > status.get("observedGeneration", 0):
        return False, f"{name}: waiting for the controller to observe the new spec"
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
            raise ServingError(f"{name}: exceeded its progress deadline ({condition.get('message', 'no message')})")
    updated, total, available = (status.get(k, 0) for k in ("updatedReplicas", "replicas", "availableReplicas"))
    if updated < desired:
        return False, f"{name}: {updated} of {desired} new replicas updated"
    if total > updated:
        return False, f"{name}: {total - updated} old replicas pending termination"
    if available < updated:
        return False, f"{name}: {available} of {updated} updated replicas available"
    return True, f"{name}: rolled out"


def _wait_ready(apps: Any, name: str, namespace: str, timeout_s: float, consequence: str) -> None:
    from kubernetes.client import ApiClient

    deadline = time.monotonic() + timeout_s
    while True:
        found = ApiClient().sanitize_for_serialization(apps.read_namespaced_deployment(name, namespace))
        done, why = rollout_status(found)
        if done:
            return
        if time.monotonic() > deadline:
            raise ServingError(f"{namespace}/{name} not rolled out after {timeout_s:.0f}s ({why}); {consequence}")
        time.sleep(5)


def _delete(api: Any, manifest: dict[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    resource = api.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    try:
        resource.delete(name=manifest["metadata"]["name"], namespace=manifest["metadata"]["namespace"])
    except ApiException as exc:
        if exc.status != 404:
            raise


def _apply(api: Any, manifest: dict[str, Any]) -> None:
    resource = api.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    resource.server_side_apply(
        body=manifest,
        name=manifest["metadata"]["name"],
        namespace=manifest["metadata"].get("namespace"),
        field_manager=MANAGER,
        force_conflicts=True,
    )
