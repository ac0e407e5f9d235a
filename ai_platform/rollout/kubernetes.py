"""Blue/green on Kubernetes: manifests rendered from the model spec, applied server-side.

Per model: a Deployment per color (`vllm/vllm-openai`, the model mounted from
our OCI model image as an image volume, KEP-4639), a Service whose selector
names the live color, a KEDA ScaledObject on `vllm:kv_cache_usage_perc`, a
PodMonitor, PrometheusRule alerts, and the Grafana dashboard as a ConfigMap. A rollout starts the idle color at
the live color's replicas, waits until it has rolled out and every pod answered a warm-up completion, flips the
Service selector, and keeps the old color at its replicas for the spec's rollback window (its pods drain first:
a preStop sleep, then a grace period past the longest request). The canary eval runs against a candidate
Deployment of its own.

What is live is one `records.ModelState` in the artifact store (`gateway_state`):
the cluster's gateway replicas route by it, a rollback returns to its `previous`,
and any machine with the registry artifact store reads it (`live_state`). The
image every Deployment mounts is the one its `ModelImage` record names
(`image.locations.locate`).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ai_platform.config import PINNED_IMAGE, ModelSpec, Platform
from ai_platform.errors import ServingError, WarmUpError
from ai_platform.image.locations import locate
from ai_platform.kube import gpu_scheduling
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle, Records
from ai_platform.serving import dashboard
from ai_platform.serving.release import release_id
from ai_platform.serving.state import record_live, settings
from ai_platform.serving.upstream import VLLM_API_KEY_ENV, Upstream, upstream_headers
from ai_platform.serving.vllm import server_args

PORT = 8000
MOUNT = "/model-image"
MANAGER = "ai-platform"
CANARY = "canary"
PAUSED_REPLICAS = "autoscaling.keda.sh/paused-replicas"  # KEDA scales the target to this and stops scaling it
# The longest a gateway waits for a model server's next byte (its upstream client's read timeout, the first byte
# included: queueing and prefill), as the gateway's `Upstream()` is built.
GATEWAY_SILENCE_S = Upstream().read_timeout_s
# The slowest decoding still called serving: 10 tokens a second for one sequence (a GPU that slow is broken, and
# the liveness probe and VllmSlowFirstToken say so); with it a whole context's worth of tokens has a time bound.
SLOWEST_TOKEN_S = 0.1
WARM_UP_RETRY_S = 2.0  # between warm-up attempts on a pod that has not answered yet


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


def grace_period_s(spec: ModelSpec) -> int:
    """The vLLM pod's terminationGracePeriodSeconds: longer than the longest request the spec allows, counted from
    when the pod is told to stop (the preStop sleep runs inside the grace period):

        drain_s + GATEWAY_SILENCE_S + max_model_len * SLOWEST_TOKEN_S

    the preStop sleep (`rollout.drain_s`), then a request that arrived just before the endpoint left: it may wait
    in vLLM's queue and prefill for as long as the gateway waits for a first byte (300 s), then stream every
    token its context can hold (`serving.max_model_len`; a request cannot ask for more) at the slowest decoding
    still called serving. The defaults give 15 + 300 + 2048 * 0.1 = 520 s. vLLM's server stops taking
    connections on SIGTERM and finishes the requests it has; the kubelet kills it at the end of this period."""
    return math.ceil(spec.rollout.drain_s + GATEWAY_SILENCE_S + spec.serving.max_model_len * SLOWEST_TOKEN_S)


def deployment(
    platform: Platform, spec: ModelSpec, color: str, image_ref: str, bundle: str, *, count: int | None = None
) -> dict[str, Any]:
    """A colour's Deployment at `count` replicas (default: `replicas(platform)`, what a colour starts with)."""
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
                # Drain: on deletion the pod leaves the Service's endpoints while this sleep runs, so kube-proxy
                # and the gateways stop sending to it before vLLM is told to stop (the 1.29+ sleep action: no
                # `sleep` binary needed in the image); vLLM then finishes its requests within the grace period.
                "lifecycle": {"preStop": {"sleep": {"seconds": spec.rollout.drain_s}}},
                "volumeMounts": [{"name": "model", "mountPath": MOUNT, "readOnly": True}],
                "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 90},  # big models load slowly
                "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
                "livenessProbe": {**probe, "periodSeconds": 15, "failureThreshold": 4},
            }
        ],
        "volumes": [{"name": "model", "image": {"reference": image_ref, "pullPolicy": "IfNotPresent"}}],
        "terminationGracePeriodSeconds": grace_period_s(spec),
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
            "replicas": replicas(platform) if count is None else count,
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


def scaled_object(
    platform: Platform,
    spec: ModelSpec,
    color: str,
    *,
    retired: bool = False,
    paused: int | None = None,
    floor: int | None = None,
) -> dict[str, Any]:
    """KEDA on the colour's KV-cache use. The query sums over the colour's pods: with KEDA's AverageValue
    target the HPA wants ceil(sum / threshold) replicas, which grows with load; an average (at most 1.0)
    capped that at ceil(1 / threshold), 2 replicas, whatever `max_replicas` said.

    `paused`: KEDA scales the colour to that many replicas and stops autoscaling it (the colour a switch left
    is paused at its replicas for the rollback window, then at 0: it keeps its objects, not its GPUs); `retired`
    is `paused=0`. `floor`: the HPA's minimum while a switch is under way (the live colour's replicas), so the
    HPA KEDA owns does not scale the new colour down before it takes the traffic."""
    if retired:
        paused = 0
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
    if paused is not None:
        metadata["annotations"] = {PAUSED_REPLICAS: str(paused)}
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": metadata,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{spec.name}-{color}"},
            "minReplicaCount": scale.min_replicas if floor is None else max(floor, scale.min_replicas),
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
    """One blue/green switch, in the order it is applied.

    Replicas and KEDA: KEDA's ScaledObject owns an HPA, and the HPA owns the Deployment's `spec.replicas`; a
    count set on the Deployment alone lasts until the HPA's next sync, which, with no traffic on the new colour
    yet, scales it down to `minReplicaCount`. So the new colour starts with its ScaledObject's minimum raised to
    `replicas` (the HPA holds that floor) and its Deployment at `replicas` (the pods start at once, without
    waiting for KEDA); once it takes the traffic its ScaledObject goes back to the spec's minimum and KEDA
    follows the load from there (the HPA scales down no faster than its stabilization window, 5 minutes)."""

    start: list[dict[str, Any]]  # the new colour's ScaledObject held at `replicas`, its Deployment, monitoring
    route: dict[str, Any]  # the Service, selecting the new colour: applied once it has rolled out and warmed up
    release: list[dict[str, Any]]  # the new colour's ScaledObject at the spec's minimum: KEDA takes over
    retire: list[dict[str, Any]]  # the old colour's ScaledObject, paused at `kept` replicas: the rollback window
    replicas: int  # the new colour's, the live colour's at the switch (within the autoscaler's bounds)
    kept: int  # the old colour's for the rollback window


def switch(
    platform: Platform,
    spec: ModelSpec,
    image_ref: str,
    bundle: str,
    color: str,
    old: str | None,
    *,
    live_replicas: int = 0,
) -> Switch:
    """The switch to `color` from `old`, which runs `live_replicas` now (0: nothing runs, or none was read)."""
    scale = platform.config.kubernetes.autoscaling
    count = min(max(replicas(platform), live_replicas), max(scale.max_replicas, scale.min_replicas))
    start = [
        scaled_object(platform, spec, color, floor=count),  # before the Deployment: a colour paused at 0 unpauses
        deployment(platform, spec, color, image_ref, bundle, count=count),
        network_policy(platform, spec),
        pod_monitor(platform, spec),
        prometheus_rule(platform, spec),
        dashboard_config_map(platform),
    ]
    retiring = old is not None and old != color
    # the old colour keeps what it runs (nothing, if it was stopped) for the window; with no window, 0 at once
    kept = live_replicas if retiring and spec.rollout.rollback_window_s else 0
    retire = [scaled_object(platform, spec, old, paused=kept)] if old is not None and retiring else []
    return Switch(start, service(platform, spec, color), [scaled_object(platform, spec, color)], retire, count, kept)


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
    """Server-side apply the idle color at the live color's replicas, wait until it has rolled out and every pod
    answers, flip the Service, and keep the old color at its replicas for the spec's rollback window (then
    `reap_idle` pauses it at 0; its objects stay). A rollback is this switch back to the previous image and
    bundle: within the window, onto warm pods."""
    platform, spec = snap.platform, snap.spec
    current = live_state(platform, spec.name)
    ref = locate(image, pull=True)
    ns, this_release = platform.config.kubernetes.namespace, release(platform, spec, image.digest)
    records = Records(platform.artifacts())
    if current and current.live and current.live.release == this_release:  # prompts only: vLLM stays as it is
        color, kind = current.live.color, "prompts"
        log(f"{spec.name}: same release on {color}; the gateway replicas pick up prompts {bundle.digest[:19]}")
        # The colour the last switch left is no rollback target past this (the new state's `previous` is the live
        # colour with the old prompts): it is paused at 0 now, its window open or not.
        _reap(platform, spec, current, math.inf, log)
        count, idle_until = current.live.replicas, 0.0
    else:
        color, kind = idle_color(current), "model"
        old = current.live.color if current and current.live else None
        if current and current.idle_until:  # the warm colour is this rollout's now: no reaper may pause it
            current = replace(current, idle_until=0.0)
            records.publish(current, spec.name)
        count, kept = _switch(platform, spec, ref, bundle.digest, color, old, log, timeout_s)
        idle_until = time.time() + spec.rollout.rollback_window_s if kept else 0.0
    deployment_id = uuid.uuid4().hex
    state = next_state(platform, spec, current, color, image, bundle, deployment_id, count=count)
    records.publish(replace(state, idle_until=idle_until), spec.name)
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
) -> tuple[int, int]:
    """The switch, applied: (the new colour's replicas, the old colour's kept for the rollback window)."""
    from kubernetes import client

    api = _client()
    apps = client.AppsV1Api()
    ns, deadline = platform.config.kubernetes.namespace, time.monotonic() + timeout_s
    live = live_replicas(apps, f"{spec.name}-{old}", ns) if old and old != color else 0
    plan = switch(platform, spec, ref, bundle, color, old, live_replicas=live)
    for manifest in plan.start:
        _apply(api, manifest)
    name = f"{spec.name}-{color}"
    log(f"{spec.name}: {name} applied at {plan.replicas} replicas ({old or 'no colour'} runs {live})")
    consequence = "the Service still routes to the old color"
    _wait_ready(apps, name, ns, timeout_s, consequence)
    warmed = warm_up_pods(
        client.CoreV1Api(), spec.name, color, ns, plan.replicas, max(0.0, deadline - time.monotonic()), consequence
    )
    log(f"{spec.name}: {len(warmed)} pods of {name} answered a warm-up completion")
    _apply(api, plan.route)
    log(f"{spec.name}: Service now routes to {color} ({ref})")
    for manifest in plan.release:
        _apply(api, manifest)
    for manifest in plan.retire:
        _apply(api, manifest)
        window = spec.rollout.rollback_window_s
        log(f"{spec.name}: {manifest['metadata']['name']} kept at {plan.kept} replicas for {window} s (a rollback)")
    return plan.replicas, plan.kept


def live_replicas(apps: Any, name: str, namespace: str) -> int:
    """How many replicas the Deployment `name` runs now: the most of what its autoscaler asks (`spec.replicas`)
    and what is available; 0 where there is none."""
    from kubernetes.client import ApiClient
    from kubernetes.client.exceptions import ApiException

    try:
        found = ApiClient().sanitize_for_serialization(apps.read_namespaced_deployment(name, namespace))
    except ApiException as exc:
        if exc.status == 404:
            return 0
        raise ServingError(f"{namespace}/{name}: reading the Deployment: {exc.status} {exc.reason}") from None
    wanted = (found.get("spec") or {}).get("replicas") or 0
    return max(int(wanted), int((found.get("status") or {}).get("availableReplicas") or 0))


def warm_up(base_url: str, model: str, timeout_s: float, *, retry_s: float = WARM_UP_RETRY_S) -> None:
    """Ask the vLLM server at `base_url` (one pod) for a one-token completion until it answers one, within
    `timeout_s`: `/health` says the server is up, a completion that it serves the model, and whatever a first
    request warms is warmed by this one, not a user's; else WarmUpError."""
    import httpx

    deadline = time.monotonic() + timeout_s
    body = {"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0}
    while True:
        left = deadline - time.monotonic()
        try:
            reply = httpx.post(
                f"{base_url}/v1/completions", json=body, headers=upstream_headers(), timeout=max(1.0, min(left, 60.0))
            )
            if reply.status_code == 200 and reply.json().get("choices"):
                return
            why = f"answered {reply.status_code}"
        except (httpx.HTTPError, ValueError) as exc:
            why = f"{type(exc).__name__}: {exc}"
        if time.monotonic() + retry_s > deadline:
            raise WarmUpError(f"{base_url}: no completion within {timeout_s:.0f}s (last: {why})")
        time.sleep(retry_s)


def warm_up_pods(
    core: Any, model: str, color: str, namespace: str, count: int, timeout_s: float, consequence: str
) -> list[str]:
    """Warm up every pod of the colour (`warm_up`), found through the API's pod list: each ready pod not being
    deleted, at its IP on its container's `http` port; at least `count` of them. Their base URLs."""
    from kubernetes.client import ApiClient

    deadline = time.monotonic() + timeout_s
    selector = f"app.kubernetes.io/name={model},ai-platform/color={color}"
    while True:
        listed = ApiClient().sanitize_for_serialization(core.list_namespaced_pod(namespace, label_selector=selector))
        urls = [url for pod in listed.get("items") or [] if (url := _pod_url(pod))]
        if len(urls) >= count:
            break
        if time.monotonic() > deadline:
            raise WarmUpError(
                f"{namespace}/{model}-{color}: {len(urls)} of {count} pods ready to warm up after {timeout_s:.0f}s;"
                f" {consequence}"
            )
        time.sleep(WARM_UP_RETRY_S)
    for url in urls:
        try:
            warm_up(url, model, max(0.0, deadline - time.monotonic()))
        except WarmUpError as exc:
            raise WarmUpError(f"{namespace}/{model}-{color}: {exc}; {consequence}") from None
    return urls


def _pod_url(pod: dict[str, Any]) -> str | None:
    """Where a pod's vLLM answers (http://IP:PORT), if it is ready and not being deleted."""
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    ip = status.get("podIP")
    if pod["metadata"].get("deletionTimestamp") or not ready or not ip:
        return None
    ports = [
        port["containerPort"]
        for container in pod["spec"]["containers"]
        if container["name"] == "vllm"
        for port in container.get("ports") or []
        if port.get("name") == "http"
    ]
    host = f"[{ip}]" if ":" in ip else ip
    return f"http://{host}:{ports[0] if ports else PORT}"


def reap_idle(platform: Platform, spec: ModelSpec, log: Log, *, now: float | None = None) -> str | None:
    """Pause the colour the last switch left at 0 replicas once its rollback window has passed, and say so in the
    model's state; the colour reaped, or None (nothing kept warm, or its window still open). What calls it: the
    next rollout (`apply_rollout`), and `ai-platform rollout reap MODEL` (a schedule's, an operator's)."""
    current = live_state(platform, spec.name)
    if current is None or not _reap(platform, spec, current, time.time() if now is None else now, log):
        return None
    Records(platform.artifacts()).publish(replace(current, idle_until=0.0), spec.name)
    return current.previous.color if current.previous else None


def _reap(platform: Platform, spec: ModelSpec, current: ModelState, now: float, log: Log) -> bool:
    previous, live = current.previous, current.live
    if not current.idle_until or now < current.idle_until or previous is None:
        return False
    if live is not None and live.color == previous.color:  # never the colour that serves
        return False
    _apply(_client(), scaled_object(platform, spec, previous.color, retired=True))
    log(f"{spec.name}: {spec.name}-{previous.color} paused at 0 replicas (its rollback window has passed)")
    return True


def next_state(
    platform: Platform,
    spec: ModelSpec,
    current: ModelState | None,
    color: str,
    image: ModelImage,
    bundle: PromptBundle,
    deployment_id: str,
    *,
    count: int | None = None,
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
        replicas=replicas(platform) if count is None else count,
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
