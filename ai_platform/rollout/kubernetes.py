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
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ai_platform.config import CANARY_HEX, PINNED_IMAGE, ModelSpec, Platform
from ai_platform.errors import ServingError, WarmUpError
from ai_platform.hosts import service_host
from ai_platform.image.locations import locate
from ai_platform.kube import gpu_resources, gpu_scheduling, shared_memory
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle, Records
from ai_platform.serving import dashboard
from ai_platform.serving.release import release_id, restorable, restored_spec
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
    """The release `image` is in the cluster: with the spec's server settings, on the pinned vLLM image, on the
    GPUs platform.yaml names."""
    return release_id(image, spec.serving, vllm_image(platform), gpu=gpu_shape(platform))


def gpu_shape(platform: Platform) -> dict[str, Any]:
    """What GPUs a colour's pods ask for (kubernetes.gpu): the resource, how many, the nodes that have them.
    Part of a release: moving a model to other GPUs is a new server, not a prompt change."""
    gpu = platform.config.kubernetes.gpu
    return {"resource": gpu.resource, "count": gpu.count, "node_selector": dict(gpu.node_selector)}


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
    model_dir = Path(MOUNT) / "models" / spec.name
    args = server_args(model_dir, spec.name, spec.serving, "gpu", "0.0.0.0", PORT, gpus=k8s.gpu.count)
    shm, shm_mount = shared_memory(platform)
    selector = {"app.kubernetes.io/name": spec.name, "ai-platform/color": color}
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
                "resources": gpu_resources(platform),
                # Drain: on deletion the pod leaves the Service's endpoints while this sleep runs, so kube-proxy
                # and the gateways stop sending to it before vLLM is told to stop (the 1.29+ sleep action: no
                # `sleep` binary needed in the image); vLLM then finishes its requests within the grace period.
                "lifecycle": {"preStop": {"sleep": {"seconds": spec.rollout.drain_s}}},
                "volumeMounts": [{"name": "model", "mountPath": MOUNT, "readOnly": True}, shm_mount],
                "startupProbe": {**probe, "periodSeconds": 10, "failureThreshold": 90},  # big models load slowly
                "readinessProbe": {**probe, "periodSeconds": 5, "failureThreshold": 3},
                "livenessProbe": {**probe, "periodSeconds": 15, "failureThreshold": 4},
            }
        ],
        "volumes": [{"name": "model", "image": {"reference": image_ref, "pullPolicy": "IfNotPresent"}}, shm],
        "terminationGracePeriodSeconds": grace_period_s(spec),
        "topologySpreadConstraints": spread(selector),
    }
    pod.update(gpu_scheduling(platform))
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


def spread(selector: dict[str, str]) -> list[dict[str, Any]]:
    """topologySpreadConstraints for a Deployment's pods (`selector`, its own): over nodes, then zones, as a
    preference (ScheduleAnyway: a GPU pod that cannot be spread still runs; DoNotSchedule would leave it Pending on
    a cluster of one GPU node or one zone). `matchLabelKeys: pod-template-hash` counts this revision's pods only,
    so a rolling update's old pods do not skew where the new ones go."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": dict(selector)},
            "matchLabelKeys": ["pod-template-hash"],
        }
        for key in ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
    ]


def disruption_budget(platform: Platform, spec: ModelSpec, color: str) -> dict[str, Any]:
    """The colour's PodDisruptionBudget: a node drain (an upgrade, the autoscaler) evicts one of its vLLM pods at a
    time, and waits for its replacement to be ready before the next.

    One per colour, not one per model: it selects exactly its Deployment's pods (a pod matched by two budgets
    cannot be evicted at all), the idle colour's pods (kept for the rollback window) never use up the live
    colour's allowance, and a colour paused at 0 has nothing to protect. `maxUnavailable: 1`, not `minAvailable`:
    with one replica a `minAvailable: 1` budget blocks every drain until someone deletes it, while this lets the
    one pod go (the Deployment starts it elsewhere; one replica is an outage the operator chose) and holds
    N replicas to N-1. `unhealthyPodEvictionPolicy: AlwaysAllow`: a pod that is not ready (crash-looping, still
    loading) protects no traffic, so it never blocks a drain. The canary has none: one replica, for minutes."""
    name = f"{spec.name}-{color}"
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": name,
            "namespace": platform.config.kubernetes.namespace,
            "labels": labels(spec.name, color),
        },
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": spec.name, "ai-platform/color": color}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


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
            # Prometheus unreadable: keep what runs, at least `fallback_replicas` (KEDA needs the AverageValue
            # metric type for a fallback, as the trigger has)
            "fallback": {
                "failureThreshold": scale.fallback_failures,
                "replicas": scale.fallback_replicas,
                "behavior": "currentReplicasIfHigher",
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": prometheus_url(platform),
                        "query": query,
                        "threshold": str(scale.kv_cache_threshold),
                    },
                }
            ],
        },
    }


def prometheus_url(platform: Platform) -> str:
    """Where KEDA asks Prometheus: `autoscaling.prometheus_url`, else the operator's `prometheus-operated` Service
    (every Prometheus it runs is behind it) in the monitoring namespace."""
    k8s = platform.config.kubernetes
    return (
        k8s.autoscaling.prometheus_url or f"http://{service_host('prometheus-operated', k8s.monitoring.namespace)}:9090"
    )


def monitored(platform: Platform, own: dict[str, str]) -> dict[str, str]:
    """A PodMonitor's or PrometheusRule's labels: its own, and the ones the Prometheus's selectors match
    (`kubernetes.monitoring.labels`); without them the operator never loads it."""
    return {**own, **platform.config.kubernetes.monitoring.labels}


def pod_monitor(platform: Platform, spec: ModelSpec) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": spec.name,
            "namespace": platform.config.kubernetes.namespace,
            "labels": monitored(platform, labels(spec.name)),
        },
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": spec.name}},
            "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
        },
    }


def no_target_up(selector: str) -> str:
    """PromQL that returns 1 while no target `selector` matches is up: none scraped successfully, or none there at
    all (`absent`; a `sum(up) == 0` is no data, never firing, when the pods or their monitor are gone)."""
    return f"absent(up{{{selector}}} == 1)"


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
        (
            "VllmDown",  # not while every colour is meant to run 0 (`rollout stop`), as kube-state-metrics says
            f'{no_target_up(match)} unless on() (sum(kube_deployment_spec_replicas{{namespace="{ns}",'
            f'deployment=~"{name}-(blue|green)"}}) == 0)',
            "5m",
            "critical",
            "no vLLM pod of the model is up (none scraped, or none running) though a colour is meant to run",
        ),
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
            "SystemPromptLeaked",
            f'sum(increase(ai_platform_reply_prompt_leaks_total{{model="{name}"}}[5m])) > 0',
            "0m",
            "warning",
            "a reply repeated a run of its compiled system prompt (guards.leak)",
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
        "metadata": {"name": name, "namespace": ns, "labels": monitored(platform, labels(name))},
        "spec": {"groups": [{"name": f"{name}.vllm", "rules": rules}]},
    }


def render(
    platform: Platform, spec: ModelSpec, image_ref: str, bundle: str, color: str, live: str
) -> list[dict[str, Any]]:
    """Everything one rollout applies: the `color` Deployment, autoscaler and disruption budget, the Service on
    `live`, who may call vLLM, monitoring."""
    return [
        deployment(platform, spec, color, image_ref, bundle),
        scaled_object(platform, spec, color),
        disruption_budget(platform, spec, color),
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
    pods (the canary, the warm-up) only, and scrapes from the monitoring namespace (`kubernetes.monitoring`)."""
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
                {"from": [prometheus_peer(platform)], "ports": [{"port": "http"}]},
            ],
        },
    }


def prometheus_peer(platform: Platform) -> dict[str, Any]:
    """Prometheus, as a NetworkPolicy peer: every pod of the monitoring namespace (`kubernetes.monitoring`)."""
    namespace = platform.config.kubernetes.monitoring.namespace
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}


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
    return f"http://{service_host(name, namespace)}"


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
        disruption_budget(platform, spec, color),
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


def restored(platform: Platform, spec: ModelSpec, previous: LiveRelease) -> tuple[Platform, ModelSpec]:
    """The platform and spec that render `previous` as it was served: its server settings, its vLLM image and its
    GPU shape in place of what the branch says now (the rest, namespace, autoscaling, guards, is the branch's).
    A record that lacks one of them is refused (`serving.release.restorable`)."""
    restorable(spec.name, previous, cluster=True)
    gpu = platform.config.kubernetes.gpu.model_copy(
        update={
            "image": previous.runtime,
            "resource": previous.gpu["resource"],
            "count": previous.gpu["count"],
            "node_selector": dict(previous.gpu["node_selector"]),
        }
    )
    k8s = platform.config.kubernetes.model_copy(update={"gpu": gpu})
    config = platform.config.model_copy(update={"kubernetes": k8s})
    return platform.model_copy(update={"config": config}), restored_spec(spec, previous)


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
    stopped = bool(current and current.stopped)  # `rollout stop` left every colour at 0: start one, whatever changed
    if current and current.live and current.live.release == this_release and not stopped:  # prompts only
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
    deleted, at its IP on its container's `http` port; at least `count` of them, and never none: the Service is
    switched to this colour next, and a colour with no ready pod serves nothing ("0 of 0" is not rolled out). Their
    base URLs."""
    from kubernetes.client import ApiClient

    deadline = time.monotonic() + timeout_s
    selector = f"app.kubernetes.io/name={model},ai-platform/color={color}"
    count = max(1, count)
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
        release(platform, spec, image.digest),
        model_image=image,
        prompt_bundle=bundle,
        serving=spec.serving.model_dump(mode="json"),
        runtime=runtime,
        replicas=replicas(platform) if count is None else count,
        gpu=gpu_shape(platform),
    )
    previous = current.live if current else None
    return ModelState(spec.name, live=live, previous=previous, **settings(platform, spec, local=False))


CANARY_LABEL = "ai-platform/canary"  # on a canary's Deployment and Service: the next run lists them by it
# How long a canary with no owner (made off the cluster) may live: its run waits up to `candidate_server`'s
# timeout_s (30 minutes) for it and then evaluates it; one older than this is a killed run's, and the next
# canary deletes it.
CANARY_MAX_AGE_S = 6 * 3600
# Where every pod with a service-account token has its own namespace (the in-cluster config reads the same folder)
POD_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def canary_color(digest: str) -> str:
    """A candidate's colour label: `canary-` and the first `CANARY_HEX` hex of its image digest."""
    return f"{CANARY}-{digest.removeprefix('sha256:')[:CANARY_HEX]}"


def canary_manifests(
    platform: Platform, spec: ModelSpec, image_ref: str, digest: str, *, owner: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The candidate alone: one replica and a ClusterIP Service of its own. Its color label is
    `canary-<digest>`, so the model's Service, which selects blue or green, never sends users to it. Both carry
    `ai-platform/canary: "true"` (the next run finds them by it) and, made from a step pod, an ownerReference to
    it (`owner`): when the pod goes, the cluster's garbage collector deletes them, whatever killed it."""
    color = canary_color(digest)
    candidate = deployment(platform, spec, color, image_ref, bundle="")
    candidate["metadata"]["annotations"].pop("ai-platform/bundle")  # the eval sends the prompts
    candidate["spec"]["replicas"] = 1
    own = service(platform, spec, color)
    own["metadata"]["name"] = f"{spec.name}-{color}"
    for manifest in (candidate, own):
        manifest["metadata"]["labels"] = {**labels(spec.name, color), CANARY_LABEL: "true"}
        if owner:
            manifest["metadata"]["ownerReferences"] = [dict(owner)]
    return [candidate, own]


def step_pod_owner(core: Any, namespace: str) -> dict[str, str] | None:
    """An ownerReference to the pod this process runs in (the canary step's), read through the API by its name
    (the pod's hostname); None off the cluster, or where the pod is in another namespace than the canary's: an
    owner must be in its dependent's namespace, or the garbage collector takes it for gone and deletes the canary
    at once."""
    from kubernetes.client.exceptions import ApiException

    try:
        where = POD_NAMESPACE_FILE.read_text(encoding="utf-8").strip()
    except OSError:
        return None  # no pod's service-account folder: not in a pod
    name = os.environ.get("HOSTNAME") or socket.gethostname()
    if where != namespace or not name:
        return None
    try:
        pod = core.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise ServingError(f"{namespace}/{name}: reading this step's own Pod: {exc.status} {exc.reason}") from None
    return {"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name, "uid": pod.metadata.uid}


def clear_stale_canaries(
    core: Any, apps: Any, api: Any, platform: Platform, spec: ModelSpec, log: Log, *, now: float | None = None
) -> list[str]:
    """Delete the model's canary Deployments and Services a killed run left: those whose owning step pod is gone
    (or has finished: a failed Job pod stays, and the garbage collector keeps what it owns), and those with no
    owner older than `CANARY_MAX_AGE_S`. A canary whose run still runs is kept. The names deleted."""
    from kubernetes.client import ApiClient

    ns = platform.config.kubernetes.namespace
    selector = f"app.kubernetes.io/name={spec.name},{CANARY_LABEL}=true"
    now = time.time() if now is None else now
    running: dict[str, bool] = {}  # owner uid -> whether that pod still runs
    deleted = []
    for api_version, listed in (
        ("apps/v1", apps.list_namespaced_deployment(ns, label_selector=selector)),
        ("v1", core.list_namespaced_service(ns, label_selector=selector)),
    ):
        for item in ApiClient().sanitize_for_serialization(listed).get("items") or []:
            meta = item["metadata"]
            why = _stale(core, ns, meta, now, running)
            if why:
                kind = "Deployment" if api_version == "apps/v1" else "Service"
                _delete(
                    api, {"apiVersion": api_version, "kind": kind, "metadata": {"name": meta["name"], "namespace": ns}}
                )
                log(f"stale canary {kind} {ns}/{meta['name']} deleted ({why})")
                deleted.append(meta["name"])
    return deleted


def _stale(core: Any, namespace: str, meta: dict[str, Any], now: float, running: dict[str, bool]) -> str | None:
    """Why a canary object is a killed run's (None: its run may still be running)."""
    from datetime import datetime

    from kubernetes.client import ApiClient
    from kubernetes.client.exceptions import ApiException

    owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"]
    for owner in owners:
        if owner["uid"] not in running:
            try:
                pod = ApiClient().sanitize_for_serialization(core.read_namespaced_pod(owner["name"], namespace))
            except ApiException as exc:
                if exc.status != 404:
                    raise ServingError(
                        f"{namespace}/{owner['name']}: reading a canary's step pod: {exc.status}"
                    ) from None
                pod = None
            running[owner["uid"]] = bool(
                pod
                and pod["metadata"].get("uid") == owner["uid"]
                and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            )
        if running[owner["uid"]]:
            return None
    if owners:
        return f"its step pod {owners[0]['name']} is gone"
    created = meta.get("creationTimestamp")
    age = now - datetime.fromisoformat(created).timestamp() if created else math.inf
    if age > CANARY_MAX_AGE_S:
        return f"no owner, made {age / 3600:.1f} h ago"
    return None


@contextmanager
def candidate_server(
    snap: Any, image: ModelImage, *, log: Log, timeout_s: float = 1800.0, champion: bool = False
) -> Iterator[str]:
    """The base URL of `image` serving in the cluster, for the canary eval.

    The live Service when it already serves this release (a prompt-only change), or, for the
    champion, when it serves `image`; otherwise a candidate Deployment and Service, applied, waited
    on until rolled out, and deleted afterwards, pass or fail. A run killed before its `finally` leaves them
    behind: they are owned by the step pod (the garbage collector deletes them with it), and the next canary
    deletes the model's stale ones first (`clear_stale_canaries`).
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
    if champion and live and live.serving:  # the champion as it was served, not with the branch's new settings
        try:
            platform, spec = restored(platform, spec, live)
        except ServingError as exc:
            log(f"the champion's release cannot be rebuilt as it was served ({exc}); the branch's settings are used")
    ref = locate(image, pull=True)
    api = _client()
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    clear_stale_canaries(core, apps, api, platform, spec, log)
    manifests = canary_manifests(platform, spec, ref, digest, owner=step_pod_owner(core, ns))
    name = manifests[0]["metadata"]["name"]
    try:
        for manifest in manifests:
            _apply(api, manifest)
        log(f"candidate Deployment {ns}/{name} applied; waiting until ready")
        _wait_ready(apps, name, ns, timeout_s, "the candidate was not evaluated")
        yield service_url(name, ns)
    finally:
        for manifest in reversed(manifests):
            _delete(api, manifest)
        log(f"candidate Deployment {ns}/{name} deleted")


def check_routes(manifests: list[dict[str, Any]]) -> None:
    """Refuse a set of manifests in which a Service selects a colour that the same set stops: the colour's
    ScaledObject paused at 0, or its Deployment at 0 replicas. Applied, it would route every request to no pod."""
    for routed in (m for m in manifests if m["kind"] == "Service"):
        selector = routed["spec"].get("selector") or {}
        color, model = selector.get("ai-platform/color"), selector.get("app.kubernetes.io/name")
        if not color:
            continue
        where = f"Service {routed['metadata']['name']} selects {color}, but the same manifests stop it"
        for manifest in manifests:
            meta = manifest["metadata"]
            ours = (meta.get("labels") or {}).get("ai-platform/color") == color and (
                (meta.get("labels") or {}).get("app.kubernetes.io/name") == model
            )
            if not ours:
                continue
            if manifest["kind"] == "ScaledObject" and (meta.get("annotations") or {}).get(PAUSED_REPLICAS) == "0":
                raise ServingError(f"{where}: ScaledObject {meta['name']} is paused at 0 replicas")
            if manifest["kind"] == "Deployment" and manifest["spec"].get("replicas") == 0:
                raise ServingError(f"{where}: Deployment {meta['name']} runs 0 replicas")


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
