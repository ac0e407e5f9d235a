"""The execution backend seam: where the pipeline serves candidates and rolls models out.

Two implementations, chosen once from platform.yaml (`ai_platform.backend.for_config`):
`embedded` (subprocesses on this machine) and `kubernetes` (pods, Deployments and
Services in a cluster). Stages and assets call these methods and never ask which
one they have. The backend also says how a run's steps and its workloads execute
(`steps`, `workload`: plain data, `backend/workload.py`); `assets/execution.py`
hands that to Dagster (the executor, Pipes) as the `execution` resource.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from ai_platform.backend.workload import Steps, Workload
from ai_platform.config import Platform, PlatformConfig
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle
from ai_platform.rollout.notify import notify
from ai_platform.serving.runtime import Runtime
from ai_platform.specs import SpecSnapshot


@dataclass(frozen=True)
class RolloutReport:
    """What a rollout left live, as the deployment asset reports it."""

    kind: str  # model | prompts | unchanged | rollback
    color: str
    image: str
    bundle: str
    endpoint: str
    details: dict[str, str | int | float | bool] = field(default_factory=dict)  # backend-specific figures

    def announcement(self, model: str) -> str | None:
        """The webhook's text for this rollout (None: nothing changed, nothing to say)."""
        switch = f"; switch took {self.details['switch_ms']:.0f} ms" if "switch_ms" in self.details else ""
        return {
            "model": f"{model}: image {self.image[:19]} live on {self.color}{switch}",
            "prompts": f"{model}: prompts {self.bundle[:19]} live on {self.color}"
            f" (image {self.image[:19]}, no restart)",
            "rollback": f"{model}: rolled back to image {self.image[:19]}, prompts {self.bundle[:19]} on {self.color}",
        }.get(self.kind)


def announce(model: str, report: RolloutReport, log: Log) -> RolloutReport:
    """Tell the rollout webhook, the same words from either backend (a failed delivery never fails a rollout)."""
    text = report.announcement(model)
    if text:
        notify(text, log)
    return report


class Backend(Protocol):
    target: str  # the name deployments rows carry: "embedded" | "kubernetes"

    def runtime(self) -> Runtime | None:
        """What the serving runtime can execute (the serving preflight); None where it cannot be probed from here."""
        ...

    def state(self, platform: Platform, model: str) -> ModelState | None:
        """`model`'s rollout state (live, previous, rollback window, stopped) from where this target keeps it: the
        platform home here, the artifact store there (readable from any machine with platform.yaml and the
        registry's credentials); None: never rolled out."""
        ...

    def colors(self, platform: Platform, model: str) -> dict[str, dict[str, int]]:
        """Each colour that exists for `model` and what runs of it: {"replicas": asked, "available": serving}; read
        through the cluster's API there, the live colour's health here."""
        ...

    def live(self, platform: Platform, model: str) -> LiveRelease | None:
        """What `model`'s users are served on this target (None: nothing yet), from the one place its rollouts
        keep it: the platform home here, the artifact store (the registry the cluster's gateway follows) there."""
        ...

    def release(self, snap: SpecSnapshot, image: str) -> str:
        """The release `image` would be on this target with the spec's server settings (`serving/release.py`):
        what a live release is compared with to know whether a commit changes what users are served."""
        ...

    def serve_candidate(
        self, snap: SpecSnapshot, image: ModelImage, log: Log, *, champion: bool = False
    ) -> AbstractContextManager[str]:
        """A server of `image`, started from where its record says it is (`image.locations.locate`), while the
        context is open; yields its base URL. The candidate's runs this release (image, server settings, runtime:
        `serving/release.py`); the champion's is the live server when it serves `image`, whatever settings it was
        started with: that is what users get."""
        ...

    def rollout(self, snap: SpecSnapshot, image: ModelImage, bundle: PromptBundle, log: Log) -> RolloutReport:
        """Make `image` with `bundle` what users are served, blue/green."""
        ...

    def rollback(self, snap: SpecSnapshot, log: Log) -> RolloutReport:
        """Return the model to its previous release as the state recorded it: image, bundle, server settings, and
        in a cluster its vLLM image and GPU shape (`snap` gives the rest: the branch's spec and platform.yaml).
        Clears a stop."""
        ...

    def stop(self, snap: SpecSnapshot, log: Log) -> str | None:
        """Stop serving the model and record it in its state (`ModelState.stopped_at`, cleared by the next rollout
        or a rollback); what was stopped, in words (None: nothing was live)."""
        ...

    def idle_color(self, snap: SpecSnapshot) -> str:
        """The color the next rollout of the model would start."""
        ...

    def steps(self, config: PlatformConfig) -> Steps:
        """Where a run's steps execute."""
        ...

    def workload(self, platform: Platform, module: str) -> Workload:
        """How `python -m module` (a heavy stage's workload, e.g. quantization) runs for `platform`."""
        ...

    def workload_site(self, platform: Platform) -> str:
        """Where a workload runs, in words that change when its result could (the quantization's inputs key)."""
        ...

    def submit_rollback(self, snap: SpecSnapshot, here: bool, log: Log) -> str | None:
        """Where the switch back cannot run in this process (a cluster's colours warm up at pod IPs that only its
        own pods reach), submit it to run there and wait for it; the name of what ran it. None: roll back here
        (`backend.rollback`). `here`: this machine reaches where the colours run (`rollout rollback --here`)."""
        ...

    def reap(
        self, platform: Platform, models: Sequence[str], log: Log, *, rolled_out_only: bool
    ) -> dict[str, str | None]:
        """Pause each model's colour the last switch left warm once its rollback window has passed; per model, the
        colour paused (None: nothing to pause yet). `rolled_out_only`: leave out models never rolled out."""
        ...
