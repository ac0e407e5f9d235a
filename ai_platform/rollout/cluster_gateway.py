"""The gateway in a cluster: one Deployment for every model, in front of each model's vLLM Service.

Its replicas run `ai-platform serve --states-from REGISTRY`: each follows the rollouts kept in the artifact
store (which Service a model is behind, its prompt bundle by digest, the gateway settings), so a prompt-only
change reaches every replica without touching vLLM. A HorizontalPodAutoscaler scales them on CPU, a
PodDisruptionBudget keeps one while nodes drain, and vLLM takes requests from them (and the run pods) only
(`kubernetes.network_policy`), with its API key from the Secret they carry.
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import PINNED_IMAGE, Platform
from ai_platform.errors import ServingError
from ai_platform.rollout.kubernetes import GATEWAY

NAME = "ai-platform-gateway"
PORT = 8080
HOME = "/var/lib/ai-platform"


def gateway_image(platform: Platform, given: str | None = None) -> str:
    image = given or platform.config.kubernetes.gateway.image
    if not image or not PINNED_IMAGE.match(image):
        raise ServingError(
            f"kubernetes.gateway.image: {image or 'not set'}; the gateway runs the code-location image"
            " (deploy/docker/code-location.Dockerfile), pinned by digest (REPO@sha256:…)"
        )
    return image


PRE_STOP_S = 5  # how long a gateway pod keeps accepting after it is told to stop


def manifests(platform: Platform, image: str | None = None) -> list[dict[str, Any]]:
    k8s = platform.config.kubernetes
    settings, namespace = k8s.gateway, k8s.namespace
    labels = {**GATEWAY, "app.kubernetes.io/part-of": "ai-platform"}
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    secrets = ["ai-platform-registry", "ai-platform-lake", k8s.vllm_api_key_secret]
    container = {
        "name": "gateway",
        "image": gateway_image(platform, image),
        "command": ["ai-platform", "serve", "--host", "0.0.0.0", "--port", str(PORT)],
        "args": [
            *("--home", HOME, "--states-from", platform.config.registry.url),
            *("--window-storage", platform.config.gateway.window_storage),  # the replicas' one window
            *("--drain-s", str(platform.config.gateway.drain_s)),  # requests in flight finish on SIGTERM
        ],
        "ports": [{"name": "http", "containerPort": PORT}],
        "envFrom": [{"secretRef": {"name": name}} for name in secrets],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        # Liveness is the process, readiness the gateway's own state; a model's health is neither (it is in
        # /healthz's body and on /metrics), so one slow model never takes the replicas out or restarts them.
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "http"}, "periodSeconds": 5, "timeoutSeconds": 2},
        "livenessProbe": {
            "httpGet": {"path": "/livez", "port": "http"},
            "periodSeconds": 15,
            "timeoutSeconds": 5,
            "failureThreshold": 4,
        },
        "volumeMounts": [
            {"name": "home", "mountPath": HOME},  # the journal and the bundle cache: this pod's own
            {"name": "keys", "mountPath": f"{HOME}/gateway/keys.json", "subPath": "keys.json", "readOnly": True},
        ],
        "securityContext": {"runAsNonRoot": True, "allowPrivilegeEscalation": False},
        # SIGTERM only once the pod's endpoint has left every node's rules (kube-proxy), so no new request
        # reaches a replica that stopped accepting
        "lifecycle": {"preStop": {"sleep": {"seconds": PRE_STOP_S}}},
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": settings.replicas,
                "selector": {"matchLabels": GATEWAY},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        # the endpoint's removal, then the drain, then a margin before SIGKILL
                        "terminationGracePeriodSeconds": PRE_STOP_S + platform.config.gateway.drain_s + 5,
                        "containers": [container],
                        "volumes": [
                            {"name": "home", "emptyDir": {}},
                            {"name": "keys", "secret": {"secretName": "ai-platform-gateway-keys"}},
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": GATEWAY, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
        },
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": meta,
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
                "minReplicas": settings.replicas,
                "maxReplicas": max(settings.replicas, settings.max_replicas),
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": settings.cpu_utilization},
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": meta,
            "spec": {"minAvailable": 1, "selector": {"matchLabels": GATEWAY}},
        },
    ]
