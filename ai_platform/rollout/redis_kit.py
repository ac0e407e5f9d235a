"""The kit's Redis: where the cluster's gateway replicas keep one set of admission windows.

Each gateway replica admitting from its own memory would let N replicas admit N times a model's budget, so on the
kubernetes target the gateway's `--window-storage` is this Redis unless platform.yaml names another
(`config.shared_window`). One replica of the official image pinned by digest (`kubernetes.redis.image`), as its
non-root `redis` user, with a read-only root filesystem; no persistence (a lost window is a fresh one, not a lost
record) and a memory cap that evicts the oldest windows; pulled with `kubernetes.image_pull_secrets`, like
every pod of the kit; a NetworkPolicy that admits the gateway pods only.
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import REDIS_SERVICE, Platform, shared_window
from ai_platform.errors import ConfigError
from ai_platform.kube import pull_secrets
from ai_platform.rollout.kubernetes import GATEWAY

PORT = 6379
REDIS = {"app.kubernetes.io/name": REDIS_SERVICE, "app.kubernetes.io/component": "admission-windows"}
REDIS_UID = 999  # the `redis` user of the official image (Debian and Alpine variants alike; its group from the image)


def window_storage(platform: Platform) -> str:
    """The gateway replicas' `--window-storage` (see `config.shared_window`), a ConfigError naming the field."""
    try:
        return shared_window(platform.config)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def wanted(platform: Platform) -> bool:
    """Whether the gateway uses the kit's Redis (platform.yaml names no other window storage)."""
    return "window_storage" not in platform.config.gateway.model_fields_set


def manifests(platform: Platform) -> list[dict[str, Any]]:
    """The Redis Deployment, its Service, and who may reach it; none where platform.yaml names another Redis."""
    if not wanted(platform):
        return []
    k8s = platform.config.kubernetes
    settings, namespace = k8s.redis, k8s.namespace
    meta = {
        "name": REDIS_SERVICE,
        "namespace": namespace,
        "labels": {**REDIS, "app.kubernetes.io/part-of": "ai-platform"},
    }
    memory = settings.max_memory_mb
    container = {
        "name": "redis",
        "image": settings.image,
        "args": [
            *("--port", str(PORT), "--protected-mode", "no"),  # the NetworkPolicy decides who connects
            *("--save", "", "--appendonly", "no"),  # windows only: nothing worth a disk
            *("--maxmemory", f"{memory}mb", "--maxmemory-policy", "volatile-lru"),
        ],
        "ports": [{"name": "redis", "containerPort": PORT}],
        # the cap, Redis's own bookkeeping and a margin: the kubelet never kills it before it evicts
        "resources": {
            "requests": {"cpu": "100m", "memory": f"{memory + 64}Mi"},
            "limits": {"memory": f"{memory * 2 + 64}Mi"},
        },
        "readinessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 5},
        "livenessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 15, "failureThreshold": 4},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": REDIS_UID,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],  # its working directory
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": REDIS},
                "template": {
                    "metadata": {"labels": meta["labels"]},
                    "spec": {
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "automountServiceAccountToken": False,
                        **pull_secrets(platform),  # kubernetes.redis.image may be on an authenticated mirror
                        "containers": [container],
                        "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "64Mi"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": REDIS, "ports": [{"name": "redis", "port": PORT, "targetPort": "redis"}]},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": meta,
            "spec": {
                "podSelector": {"matchLabels": REDIS},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": GATEWAY}}], "ports": [{"port": "redis"}]}],
            },
        },
    ]
