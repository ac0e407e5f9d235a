"""Pod specs for workloads on Kubernetes, from platform.yaml's `kubernetes` section.

One place for the facts every pod of ours shares: the GPU scheduling (resource name and count, CPU, memory and
/dev/shm, node selector, tolerations, service account), the Secrets the kubelet pulls private images with, the
user the images run as and the volumes it must own (the lake's data claim, the shared home claim), used by every
workload that runs as a pod (the quantize pod, the step pods, the gateway; serving renders its Deployments from
the same fields).
"""

from __future__ import annotations

from typing import Any

from ai_platform.config import Platform, PlatformConfig
from ai_platform.errors import ConfigError

UID = 10001  # the user our images run as (deploy/docker/*.Dockerfile: USER 10001)
LAKE_VOLUME = "lake"


def pull_secrets(platform: Platform | PlatformConfig) -> dict[str, Any]:
    """The pod's `imagePullSecrets` (V1PodSpec field): the `dockerconfigjson` Secrets platform.yaml names. The
    kubelet pulls with them a container's image and an image volume's (a model image) alike."""
    config = platform.config if isinstance(platform, Platform) else platform
    names = config.kubernetes.image_pull_secrets
    return {"imagePullSecrets": [{"name": name} for name in names]} if names else {}


def non_root() -> dict[str, Any]:
    """The pod securityContext of our images: their user, and the group that owns every volume it mounts
    (`fsGroup`), so the non-root user can write a claim or an emptyDir and read a Secret volume."""
    return {
        "runAsUser": UID,
        "runAsGroup": UID,
        "fsGroup": UID,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def lake_volume(platform: Platform | PlatformConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The lake's data claim as (volumes, volumeMounts), mounted at storage.warehouse_data; none without one (the
    schema refuses a kubernetes config whose data path has no claim)."""
    config = platform.config if isinstance(platform, Platform) else platform
    claim, data = config.kubernetes.lake_claim, config.storage.warehouse_data
    if not claim or not data or "://" in data:
        return [], []
    volume = {"name": LAKE_VOLUME, "persistentVolumeClaim": {"claimName": claim}}
    return [volume], [{"name": LAKE_VOLUME, "mountPath": data}]


def step_pod(config: PlatformConfig) -> dict[str, Any]:
    """A step pod's own fields (`backend.workload.Steps`): its pod spec (pull Secrets, the image's user, the lake's
    claim) and its container's mounts. The code location's Helm values mount the same claim in the same words
    (deploy/helm/dagster-values.yaml), and dagster-k8s merges the two into one volume."""
    volumes, mounts = lake_volume(config)
    pod: dict[str, Any] = {**pull_secrets(config), "securityContext": non_root()}
    if volumes:
        pod["volumes"] = volumes
    return {"pod_spec": pod, "volume_mounts": mounts}


def gpu_scheduling(platform: Platform) -> dict[str, Any]:
    """What every GPU pod shares (V1PodSpec fields, camelCase): where it may run (node selector, tolerations),
    its service account, and the Secrets its private images are pulled with."""
    k8s = platform.config.kubernetes
    fields: dict[str, Any] = {**pull_secrets(platform)}
    if k8s.gpu.node_selector:
        fields["nodeSelector"] = dict(k8s.gpu.node_selector)
    if k8s.gpu.tolerations:
        fields["tolerations"] = [t.model_dump(exclude_none=True) for t in k8s.gpu.tolerations]
    if k8s.service_account:
        fields["serviceAccountName"] = k8s.service_account
    return fields


SHM = "dshm"  # the volume at /dev/shm


def gpu_resources(platform: Platform) -> dict[str, Any]:
    """A GPU container's `resources`: its GPUs, CPU and memory requested (`kubernetes.gpu.resources`); GPUs and
    memory limited, CPU only where `cpu_limit` says so."""
    gpu = platform.config.kubernetes.gpu
    sizes = gpu.resources
    limits = {gpu.resource: str(gpu.count), **({"cpu": sizes.cpu_limit} if sizes.cpu_limit else {})}
    return {
        "requests": {gpu.resource: str(gpu.count), "cpu": sizes.cpu, "memory": sizes.memory},
        "limits": {**limits, "memory": sizes.memory_limit_or_request},
    }


def shared_memory(platform: Platform) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod's /dev/shm (a memory-backed emptyDir of `shm_size`, as vLLM's production-stack chart mounts it) and
    the container's mount of it: PyTorch and NCCL pass tensors between processes there."""
    size = platform.config.kubernetes.gpu.resources.shm_size
    return (
        {"name": SHM, "emptyDir": {"medium": "Memory", "sizeLimit": size}},
        {"name": SHM, "mountPath": "/dev/shm"},
    )


def gpu_pod_spec(platform: Platform, image: str | None, command: list[str], image_field: str) -> dict[str, Any]:
    """A V1PodSpec (camelCase, as the Kubernetes API and dagster-k8s take it) for one GPU container."""
    k8s = platform.config.kubernetes
    if not image:
        raise ConfigError(f"platform.yaml: kubernetes.gpu.{image_field}: required to run on Kubernetes")
    shm, shm_mount = shared_memory(platform)
    container: dict[str, Any] = {
        "name": "workload",
        "image": image,
        "command": command,
        "resources": gpu_resources(platform),
        "volumeMounts": [shm_mount],
        "env": [{"name": "HF_HUB_OFFLINE", "value": "1"}, {"name": "HF_HUB_DISABLE_UPDATE_CHECK", "value": "1"}],
    }
    if k8s.registry_secret:
        container["envFrom"] = [{"secretRef": {"name": k8s.registry_secret}}]
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [shm],
        "securityContext": non_root(),  # the image's user, owning what it mounts
        **gpu_scheduling(platform),
    }
    if k8s.home_claim:
        home = str(platform.home)
        spec["volumes"] += [{"name": "home", "persistentVolumeClaim": {"claimName": k8s.home_claim}}]
        container["volumeMounts"] += [{"name": "home", "mountPath": home}]
    return spec
