"""The Kubernetes backend: a Deployment per color behind the model's Service, in the cluster."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from ai_platform.backend.base import RolloutReport, announce
from ai_platform.backend.workload import Pod, Steps
from ai_platform.config import ModelSpec, Platform, PlatformConfig, shared_window
from ai_platform.errors import ClusterUnreachableError, ConfigError, ServingError
from ai_platform.kube import gpu_pod_spec, step_pod
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle, Records
from ai_platform.rollout import kubernetes
from ai_platform.specs import SpecSnapshot

COLORS = ("blue", "green")


class KubernetesBackend:
    target = "kubernetes"

    @classmethod
    def check(cls, config: PlatformConfig) -> KubernetesBackend:
        """The backend, for a platform.yaml that names the images it runs (the schema holds them pinned)."""
        gpu = config.kubernetes.gpu
        for field, image in (("image", gpu.image), ("quantize_image", gpu.quantize_image)):
            if image is None:
                raise ConfigError(
                    f"platform.yaml: kubernetes.gpu.{field}: required on the kubernetes target, pinned by digest"
                    " (e.g. vllm/vllm-openai:v0.11.0@sha256:…)"
                )
        data = config.storage.warehouse_data
        if data and "://" not in data and not config.kubernetes.lake_claim:  # a path is each pod's own disk
            raise ConfigError(
                f"platform.yaml: storage.warehouse_data: {data} is a path in each pod's own filesystem on the"
                " kubernetes target, where the lake's Parquet files would be lost while its catalog points at them;"
                " name the ReadWriteMany claim that holds it (kubernetes.lake_claim), mounted there in every pod"
                " that uses the warehouse"
            )
        try:
            shared_window(config)  # the gateway replicas' one admission window
        except ValueError as exc:
            raise ConfigError(f"platform.yaml: {exc}") from None
        return cls()

    def runtime(self) -> None:
        return None  # the GPU pool is not probed from the code location: the spec's scheme is produced

    def state(self, platform: Platform, model: str) -> ModelState | None:
        return kubernetes.live_state(platform, model)

    def colors(self, platform: Platform, model: str) -> dict[str, dict[str, int]]:
        """Each colour's Deployment as the API has it: `spec.replicas` (what its autoscaler, or a stop, asks) and
        `status.availableReplicas`; a colour never rolled out is left out."""
        from kubernetes.client import AppsV1Api
        from kubernetes.client.exceptions import ApiException

        namespace = platform.config.kubernetes.namespace
        apps = AppsV1Api(connect(namespace).client)
        found = {}
        for color in COLORS:
            name = f"{model}-{color}"
            try:
                deployment = apps.read_namespaced_deployment(name, namespace)
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise ServingError(f"{namespace}/{name}: reading the Deployment: {exc.status} {exc.reason}") from None
            asked, status = deployment.spec.replicas, deployment.status
            found[color] = {"replicas": asked or 0, "available": (status.available_replicas if status else 0) or 0}
        return found

    def live(self, platform: Platform, model: str) -> LiveRelease | None:
        current = kubernetes.live_state(platform, model)
        return current.live if current else None

    def release(self, snap: SpecSnapshot, image: str) -> str:
        return kubernetes.release(snap.platform, snap.spec, image)

    def serve_candidate(
        self, snap: SpecSnapshot, image: ModelImage, log: Log, *, champion: bool = False
    ) -> AbstractContextManager[str]:
        return kubernetes.candidate_server(snap, image, log=log, champion=champion)

    def rollout(self, snap: SpecSnapshot, image: ModelImage, bundle: PromptBundle, log: Log) -> RolloutReport:
        done = kubernetes.apply_rollout(snap, image, bundle, log=log)
        details: dict[str, str | int | float | bool] = {"image_ref": done["image_ref"], "namespace": done["namespace"]}
        report = RolloutReport(done["kind"], done["color"], image.digest, bundle.digest, done["endpoint"], details)
        return announce(snap.spec.name, report, log)

    def rollback(self, snap: SpecSnapshot, log: Log) -> RolloutReport:
        """A switch back to the previous release with what it was served with (`kubernetes.restored`): its
        server settings, vLLM image and GPU shape, not the branch's; within the rollback window onto its warm
        pods. A stopped model starts again."""
        current = kubernetes.live_state(snap.platform, snap.spec.name)
        image, bundle = kubernetes.rollback_target(current, snap.spec.name)
        assert current is not None and current.previous is not None  # rollback_target found it
        platform, spec = kubernetes.restored(snap.platform, snap.spec, current.previous)
        back = replace(snap, platform=platform, spec=spec)
        done = kubernetes.apply_rollout(back, image, bundle, log=log, reason=f"rollback to {image.digest[:19]}")
        details: dict[str, str | int | float | bool] = {"image_ref": done["image_ref"], "namespace": done["namespace"]}
        report = RolloutReport("rollback", done["color"], image.digest, bundle.digest, done["endpoint"], details)
        return announce(snap.spec.name, report, log)

    def stop(self, snap: SpecSnapshot, log: Log) -> str | None:
        """Each colour's ScaledObject paused at 0 replicas, then its Deployment scaled to 0: no pod holds a GPU;
        then the model's state says so (`stopped_at`; no colour is kept warm any more). The Service and every
        object stay: a rollback, or the next rollout (of any release), starts the model again."""
        from kubernetes.client import AppsV1Api
        from kubernetes.client.exceptions import ApiException

        plan = stop_plan(snap.platform, snap.spec)
        api = connect(plan.namespace)
        apps = AppsV1Api(api.client)
        stopped = []
        for color, paused in plan.colors:
            name = paused["metadata"]["name"]
            try:
                apps.read_namespaced_deployment(name, plan.namespace)
            except ApiException as exc:
                if exc.status == 404:  # never rolled out on this colour: nothing to stop, nothing to create
                    continue
                raise ServingError(
                    f"{plan.namespace}/{name}: reading the Deployment: {exc.status} {exc.reason}"
                ) from None
            try:
                kubernetes._apply(api, paused)
                apps.patch_namespaced_deployment_scale(name, plan.namespace, plan.scale)
            except ApiException as exc:
                raise ServingError(f"{plan.namespace}/{name}: scaling to 0: {exc.status} {exc.reason}") from None
            log(f"{snap.spec.name}: {plan.namespace}/{name} scaled to 0 replicas, its ScaledObject paused at 0")
            stopped.append(color)
        if not stopped:
            return None
        current = kubernetes.live_state(snap.platform, snap.spec.name)
        if current is not None:  # where the gateway replicas and `rollout status` read it; the first stop's time
            mark = replace(current, stopped_at=current.stopped_at or time.time(), idle_until=0.0)
            Records(snap.platform.artifacts()).publish(mark, snap.spec.name)
        return f"{', '.join(stopped)} in {plan.namespace} (Service {plan.service} kept)"

    def idle_color(self, snap: SpecSnapshot) -> str:
        return kubernetes.idle_color(kubernetes.live_state(snap.platform, snap.spec.name))

    def steps(self, config: PlatformConfig) -> Steps:
        """Runs launched by the instance's K8sRunLauncher (deploy/dagster-instance.kubernetes.yaml), a pod per
        step that asks for no GPU, labelled as a run pod: vLLM's NetworkPolicy admits the canary and the warm-up.
        Steps write the warehouse: each mounts the lake's data claim, as the image's user that owns it."""
        return Steps(
            max_concurrent=4,
            namespace=config.kubernetes.namespace,
            pod_labels=dict(kubernetes.RUN_POD),
            **step_pod(config),
        )

    def workload(self, platform: Platform, module: str) -> Pod:
        """A GPU pod of the quantize image (`kube.gpu_pod_spec`), in the platform's namespace."""
        k8s = platform.config.kubernetes
        command = ["python", "-m", module]
        spec = gpu_pod_spec(platform, k8s.gpu.quantize_image, command, image_field="quantize_image")
        return Pod(k8s.namespace, spec)

    def workload_site(self, platform: Platform) -> str:
        return f"{self.target} {platform.config.kubernetes.gpu.quantize_image}"

    @staticmethod
    def rolls_back_in_a_job(here: bool) -> bool:
        """From outside the cluster, unless `here` says this machine reaches the pod network (a VPN, a node)."""
        from ai_platform.rollout.operator import in_cluster

        return not here and not in_cluster()

    def submit_rollback(self, snap: SpecSnapshot, here: bool, log: Log) -> str | None:
        """A Job of the cluster's own (`rollout.operator`) from outside it: the switch warms the new colour's pods
        up at their pod IPs, which only the cluster's pods reach."""
        if not self.rolls_back_in_a_job(here):
            return None
        from ai_platform.rollout import operator

        kubernetes.rollback_target(kubernetes.live_state(snap.platform, snap.spec.name), snap.spec.name)  # say so here
        namespace = snap.platform.config.kubernetes.namespace
        return operator.submit_rollback(snap.platform, snap.spec.name, connect(namespace).client, log)

    def reap(
        self, platform: Platform, models: Sequence[str], log: Log, *, rolled_out_only: bool
    ) -> dict[str, str | None]:
        """`rollout.kubernetes.reap_idle` for each (a schedule's, an operator's `rollout reap`)."""
        reaped: dict[str, str | None] = {}
        for model in models:
            if rolled_out_only and kubernetes.live_state(platform, model) is None:
                continue  # never rolled out: nothing kept warm
            reaped[model] = kubernetes.reap_idle(platform, platform.model(model), log)
        return reaped


@dataclass(frozen=True)
class StopPlan:
    """What `stop` changes in the cluster, rendered without one."""

    namespace: str
    service: str  # left as it is
    colors: tuple[tuple[str, dict[str, Any]], ...]  # each colour and its ScaledObject, paused at 0 replicas
    scale: dict[str, Any]  # the patch of each colour's Deployment `scale` subresource


def stop_plan(platform: Platform, spec: ModelSpec) -> StopPlan:
    paused = tuple((color, kubernetes.scaled_object(platform, spec, color, retired=True)) for color in COLORS)
    namespace = platform.config.kubernetes.namespace
    return StopPlan(namespace, f"{namespace}/{spec.name}", paused, {"spec": {"replicas": 0}})


def connect(namespace: str) -> Any:
    """A dynamic client of the cluster the kubeconfig (or the pod's service account) names; a
    ClusterUnreachableError naming where it looked when there is none or it does not answer."""
    from kubernetes import client, config, dynamic
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION
    from urllib3.exceptions import HTTPError

    kubeconfig = os.path.expanduser(KUBE_CONFIG_DEFAULT_LOCATION)  # $KUBECONFIG, else ~/.kube/config
    try:
        if os.path.exists(kubeconfig):
            config.load_kube_config(kubeconfig)
        else:
            config.load_incluster_config()
    except ConfigException as exc:
        raise ClusterUnreachableError(
            f"no cluster for namespace {namespace}: no kubeconfig at {kubeconfig} and no in-cluster service"
            f" account ({exc})"
        ) from None
    try:
        return dynamic.DynamicClient(client.ApiClient())
    except HTTPError as exc:
        host = client.Configuration.get_default_copy().host
        raise ClusterUnreachableError(
            f"the cluster at {host} (kubeconfig {kubeconfig}) did not answer for namespace {namespace}: {exc}"
        ) from None
