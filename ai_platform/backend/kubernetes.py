"""The Kubernetes backend: a Deployment per color behind the model's Service, in the cluster."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import dagster as dg

from ai_platform.backend.base import RolloutReport
from ai_platform.config import Platform, PlatformConfig
from ai_platform.errors import ServingError
from ai_platform.kube import gpu_pod_spec, gpu_step_config
from ai_platform.logs import Log
from ai_platform.rollout import kubernetes
from ai_platform.specs import SpecSnapshot


class KubernetesBackend:
    """Runs are launched by the instance's K8sRunLauncher (deploy/dagster-instance.kubernetes.yaml);
    each step is a pod of k8s_job_executor; GPU work gets GPU pods from platform.yaml's `kubernetes`."""

    target = "kubernetes"

    def __init__(self, config: PlatformConfig) -> None:
        self.config = config

    def executor(self) -> dg.ExecutorDefinition:
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor.configured({"job_namespace": self.config.kubernetes.namespace, "max_concurrent": 4})

    def gpu_step_tags(self) -> dict[str, Any]:
        return {"dagster-k8s/config": gpu_step_config(self.config)}

    def run_workload(self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any],
                     platform: Platform) -> dg.PipesClientCompletedInvocation:  # fmt: skip
        """A GPU pod of the workload's image (`kubernetes.gpu.quantize_image`)."""
        from dagster_k8s import PipesK8sClient

        k8s = platform.config.kubernetes
        spec = gpu_pod_spec(platform, k8s.gpu.quantize_image, ["python", "-m", module], image_field="quantize_image")
        return PipesK8sClient().run(context=context, extras={"job": job}, namespace=k8s.namespace, base_pod_spec=spec)

    def runtime(self) -> None:
        return None  # the GPU pool is not probed from the code location: the spec's scheme is produced

    def serve_candidate(self, snap: SpecSnapshot, image: str, log: Log) -> AbstractContextManager[str]:
        return kubernetes.candidate_server(snap, image, log=log)

    def rollout(self, snap: SpecSnapshot, image: str, bundle: str, log: Log) -> RolloutReport:
        done = kubernetes.apply_rollout(snap, image, bundle, log=log)
        details: dict[str, str | int | float | bool] = {"image_ref": done["image_ref"], "namespace": done["namespace"]}
        return RolloutReport("model", done["color"], image, bundle, done["endpoint"], details)

    def rollback(self, snap: SpecSnapshot, log: Log) -> RolloutReport:
        raise ServingError(f"{snap.spec.name}: rollback on Kubernetes is not built yet; apply the previous image's"
                           " manifests (`ai-platform rollout render`) to return to it")  # fmt: skip

    def stop(self, snap: SpecSnapshot, log: Log) -> None:
        raise ServingError(f"{snap.spec.name}: stop on Kubernetes is not built yet; scale the model's Deployments"
                           " to zero with kubectl")  # fmt: skip

    def idle_color(self, snap: SpecSnapshot) -> str:
        return kubernetes.idle_color(kubernetes.live_rollout(snap.platform, snap.spec.name))
