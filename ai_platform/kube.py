"""Pod specs for GPU workloads on Kubernetes, from platform.yaml's `kubernetes` section.

One place for the GPU scheduling facts (resource name and count, node selector,
tolerations, service account, registry credentials, the shared home claim), used by every workload
that runs as a pod (quantization now; serving renders its Deployments from the
same fields).
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import Platform
from ai_platform.errors import ConfigError


def gpu_scheduling(platform: Platform) -> dict[str, Any]:
    """Where GPU pods may run (V1PodSpec fields, camelCase): node selector, tolerations, service account."""
    k8s = platform.config.kubernetes
    fields: dict[str, Any] = {}
    if k8s.gpu.node_selector:
        fields["nodeSelector"] = dict(k8s.gpu.node_selector)
    if k8s.gpu.tolerations:
        fields["tolerations"] = [t.model_dump(exclude_none=True) for t in k8s.gpu.tolerations]
    if k8s.service_account:
        fields["serviceAccountName"] = k8s.service_account
    return fields


def gpu_pod_spec(platform: Platform, image: str | None, command: list[str], image_field: str) -> dict[str, Any]:
    """A V1PodSpec (camelCase, as the Kubernetes API and dagster-k8s take it) for one GPU container."""
    k8s = platform.config.kubernetes
    if not image:
        raise ConfigError(f"platform.yaml: kubernetes.gpu.{image_field}: required to run on Kubernetes")
    gpu = {k8s.gpu.resource: str(k8s.gpu.count)}
    container: dict[str, Any] = {
        "name": "workload",
        "image": image,
        "command": command,
        "resources": {"limits": gpu, "requests": gpu},
        "env": [{"name": "HF_HUB_OFFLINE", "value": "1"}, {"name": "HF_HUB_DISABLE_UPDATE_CHECK", "value": "1"}],
    }
    if k8s.registry_secret:
        container["envFrom"] = [{"secretRef": {"name": k8s.registry_secret}}]
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container], **gpu_scheduling(platform)}
    if k8s.home_claim:
        home = str(platform.home)
        spec["volumes"] = [{"name": "home", "persistentVolumeClaim": {"claimName": k8s.home_claim}}]
        container["volumeMounts"] = [{"name": "home", "mountPath": home}]
    return spec
