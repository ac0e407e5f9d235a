"""The gateway in a cluster: one Deployment for every model, in front of each model's vLLM Service.

Its replicas run `ai-platform serve --states-from REGISTRY`: each follows the rollouts kept in the artifact
store (which Service a model is behind, its prompt bundle by digest, the gateway settings), so a prompt-only
change reaches every replica without touching vLLM. A HorizontalPodAutoscaler scales them on CPU, a
PodDisruptionBudget keeps one while nodes drain, and vLLM takes requests from them (and the run pods) only
(`kubernetes.network_policy`), with its API key from the Secret they carry. Prometheus scrapes each replica's
/metrics on its `http` port (a PodMonitor: the golden metrics the models' alerts read, the dashboard's gateway
panels), an alert fires when no replica is up, and the replicas share their admission windows in the kit's Redis
(`redis_kit`) unless platform.yaml names another.

What a replica holds is what it uses: a pull-only registry login of its own (`kubernetes.gateway.registry_secret`;
it reads rollouts and bundles, never pushes), the lake's password and data claim (it writes every reply to the
warehouse, `serving/gateway/generations.py`, in batches past DuckLake's inlining limit, so as Parquet files under
storage.warehouse_data), vLLM's API key, and its hashed API keys: a Secret volume mounted as a directory, never a
`subPath`, so the kubelet's atomic swap of a rotated Secret reaches the file the gateway re-reads. It runs as the
image's user with a read-only root filesystem; its home and /tmp are emptyDirs that user owns (`fsGroup`).
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import PINNED_IMAGE, Platform
from ai_platform.errors import ServingError
from ai_platform.kube import lake_volume, non_root, pull_secrets
from ai_platform.rollout import redis_kit
from ai_platform.rollout.kubernetes import GATEWAY, monitored, no_target_up, spread

NAME = "ai-platform-gateway"
PORT = 8080
HOME = "/var/lib/ai-platform"
KEYS_DIR = "/etc/ai-platform/gateway-keys"  # the keys Secret, outside the home; the Secret's key is keys.json
KEYS_FILE = "keys.json"


def secrets(platform: Platform) -> list[str]:
    """The Secrets a gateway replica takes its environment from: its read-only registry login, the lake's
    password, vLLM's API key (the ones platform.yaml names); never the pipeline's push login."""
    k8s = platform.config.kubernetes
    return [name for name in (k8s.gateway.registry_secret, k8s.lake_secret, k8s.vllm_api_key_secret) if name]


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
    lake_volumes, lake_mounts = lake_volume(platform)
    container = {
        "name": "gateway",
        "image": gateway_image(platform, image),
        "command": ["ai-platform", "serve", "--host", "0.0.0.0", "--port", str(PORT)],
        "args": [
            *("--home", HOME, "--states-from", platform.config.registry.url),
            *("--keys", f"{KEYS_DIR}/{KEYS_FILE}"),  # re-read when it changes: a rotated key needs no restart
            *("--window-storage", redis_kit.window_storage(platform)),  # the replicas' one window
            *("--drain-s", str(platform.config.gateway.drain_s)),  # requests in flight finish on SIGTERM
        ],
        "ports": [{"name": "http", "containerPort": PORT}],
        "envFrom": [{"secretRef": {"name": name}} for name in secrets(platform)],
        "env": [{"name": "TMPDIR", "value": "/tmp"}],
        "workingDir": HOME,  # the root filesystem is read-only: whatever lands in the working directory is here
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
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "keys", "mountPath": KEYS_DIR, "readOnly": True},  # a directory: the kubelet updates it
            *lake_mounts,
        ],
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        # SIGTERM only once the pod's endpoint has left every node's rules (kube-proxy), so no new request
        # reaches a replica that stopped accepting
        "lifecycle": {"preStop": {"sleep": {"seconds": PRE_STOP_S}}},
    }
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            # no `replicas`: the HPA owns the scale (its minReplicas starts it), so `kubectl apply` of the kit never
            # resets it to the minimum, as the production-stack chart leaves it out with autoscaling on
            "spec": {
                "selector": {"matchLabels": GATEWAY},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        # the endpoint's removal, then the drain, then a margin before SIGKILL
                        "terminationGracePeriodSeconds": PRE_STOP_S + platform.config.gateway.drain_s + 5,
                        "topologySpreadConstraints": spread(GATEWAY),  # replicas on other nodes and zones
                        "securityContext": non_root(),
                        "automountServiceAccountToken": False,  # it never calls the API server
                        **pull_secrets(platform),
                        "containers": [container],
                        "volumes": [
                            {"name": "home", "emptyDir": {}},
                            {"name": "tmp", "emptyDir": {}},
                            {"name": "keys", "secret": {"secretName": settings.keys_secret, "defaultMode": 0o440}},
                            *lake_volumes,
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
        *monitoring(platform, labels),
    ]


def monitoring(platform: Platform, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The gateway's PodMonitor (its /metrics, on the port that serves callers, unauthenticated) and its alert."""
    namespace = platform.config.kubernetes.namespace
    meta = {"name": NAME, "namespace": namespace, "labels": monitored(platform, labels)}
    down = no_target_up(f'namespace="{namespace}",pod=~"{NAME}-.*"')
    return [
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": meta,
            "spec": {
                "selector": {"matchLabels": GATEWAY},
                "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
            },
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": meta,
            "spec": {
                "groups": [
                    {
                        "name": f"{NAME}.rules",
                        "rules": [
                            {
                                "alert": "GatewayDown",
                                "expr": down,
                                "for": "5m",
                                "labels": {"severity": "critical"},
                                "annotations": {
                                    "summary": "no gateway replica is up (none scraped, or none running): no model"
                                    " is reachable"
                                },
                            }
                        ],
                    }
                ]
            },
        },
    ]
