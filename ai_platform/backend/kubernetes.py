"""The Kubernetes backend: a Deployment per color behind the model's Service, in the cluster."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ai_platform.backend.base import RolloutReport, announce
from ai_platform.config import Platform
from ai_platform.errors import ServingError
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, PromptBundle
from ai_platform.rollout import kubernetes
from ai_platform.specs import SpecSnapshot


class KubernetesBackend:
    target = "kubernetes"

    def runtime(self) -> None:
        return None  # the GPU pool is not probed from the code location: the spec's scheme is produced

    def live(self, platform: Platform, model: str) -> LiveRelease | None:
        current = kubernetes.live_state(platform, model)
        return current.live if current else None

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
        current = kubernetes.live_state(snap.platform, snap.spec.name)
        image, bundle = kubernetes.rollback_target(current, snap.spec.name)
        done = kubernetes.apply_rollout(snap, image, bundle, log=log, reason=f"rollback to {image.digest[:19]}")
        details: dict[str, str | int | float | bool] = {"image_ref": done["image_ref"], "namespace": done["namespace"]}
        report = RolloutReport("rollback", done["color"], image.digest, bundle.digest, done["endpoint"], details)
        return announce(snap.spec.name, report, log)

    def stop(self, snap: SpecSnapshot, log: Log) -> None:
        raise ServingError(
            f"{snap.spec.name}: stop on Kubernetes is not built yet; scale the model's Deployments to zero with kubectl"
        )

    def idle_color(self, snap: SpecSnapshot) -> str:
        return kubernetes.idle_color(kubernetes.live_state(snap.platform, snap.spec.name))
