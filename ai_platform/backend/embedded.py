"""The embedded backend: vLLM subprocesses on this machine, behind the local gateway."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ai_platform.backend.base import RolloutReport, announce
from ai_platform.backend.workload import Steps, Subprocess
from ai_platform.config import Platform, PlatformConfig
from ai_platform.errors import WorkloadError
from ai_platform.logs import Log
from ai_platform.records import LiveRelease, ModelImage, ModelState, PromptBundle
from ai_platform.rollout import local
from ai_platform.serving import state
from ai_platform.serving.release import restored_spec
from ai_platform.serving.runtime import Runtime, probe
from ai_platform.serving.vllm import SERVE_PYTHON, healthy, launch_image
from ai_platform.specs import SpecSnapshot

QUANTIZE_PYTHON = Path(__file__).resolve().parents[2] / ".venvs" / "quantize" / "bin" / "python"
WORKLOAD_ENV = {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "TOKENIZERS_PARALLELISM": "false"}


class EmbeddedBackend:
    target = "embedded"

    def runtime(self) -> Runtime:
        return probe(SERVE_PYTHON)

    def state(self, platform: Platform, model: str) -> ModelState | None:
        return state.load(platform.home, model)

    def colors(self, platform: Platform, model: str) -> dict[str, dict[str, int]]:
        """The live colour, one vLLM process: available while it answers `/health` (the others are stopped)."""
        live = self.live(platform, model)
        return {live.color: {"replicas": 1, "available": int(healthy(live.base_url))}} if live else {}

    def live(self, platform: Platform, model: str) -> LiveRelease | None:
        return state.load(platform.home, model).live

    def release(self, snap: SpecSnapshot, image: str) -> str:
        return local.release_of(snap, image)

    @contextmanager
    def serve_candidate(
        self, snap: SpecSnapshot, image: ModelImage, log: Log, *, champion: bool = False
    ) -> Iterator[str]:
        """The live color when it already serves this exact release, else a vLLM of its own.

        A prompt-only change is evaluated on the live server (no vLLM start, which takes
        ~50 s here): the weights, server settings and runtime are the same, only the requests
        differ. A change to `serving` alone gets a server started with the new settings.
        """
        live = self.live(snap.platform, snap.spec.name)
        digest = image.digest
        wanted = digest if champion else self.release(snap, digest)
        if live and (live.image if champion else live.release) == wanted and healthy(live.base_url):
            what = "the champion as users get it" if champion else "same release"
            log(f"evaluating on the live {live.color} server ({digest[:19]}): {what}, no new vLLM")
            yield live.base_url
            return
        spec = snap.spec
        if champion and live and live.serving:  # the live server is down: start the champion as it was served
            spec = restored_spec(spec, live)
        log_path = snap.platform.artifacts_path / "logs" / f"vllm-canary-{digest[7:19]}.log"
        log(f"starting vLLM for {digest[:19]}; its output goes to {log_path}")  # the run log keeps our lines
        started = time.monotonic()
        with launch_image(snap.platform, spec, image, log_path=log_path) as server:
            log(f"vLLM ready in {time.monotonic() - started:.0f} s at {server.base_url}")
            yield server.base_url

    def rollout(self, snap: SpecSnapshot, image: ModelImage, bundle: PromptBundle, log: Log) -> RolloutReport:
        return announce(snap.spec.name, _report(snap, local.deploy(snap, image, bundle, log=log)), log)

    def rollback(self, snap: SpecSnapshot, log: Log) -> RolloutReport:
        return announce(snap.spec.name, _report(snap, local.rollback(snap, log=log)), log)

    def stop(self, snap: SpecSnapshot, log: Log) -> str | None:
        return local.stop(snap.platform.home, snap.spec.name, log=log)

    def idle_color(self, snap: SpecSnapshot) -> str:
        return state.idle_color(snap.platform.home, snap.spec.name)

    def steps(self, config: PlatformConfig) -> Steps:
        return Steps(max_concurrent=2)  # two cores on the embedded default; heavy stages run out of process anyway

    def workload(self, platform: Platform, module: str) -> Subprocess:
        """A subprocess in the quantize environment's own Python (`make envs` creates it)."""
        if not QUANTIZE_PYTHON.is_file():
            raise WorkloadError(f"{QUANTIZE_PYTHON} is missing: `make envs` creates the quantize environment")
        return Subprocess([str(QUANTIZE_PYTHON), "-m", module], dict(WORKLOAD_ENV))

    def workload_site(self, platform: Platform) -> str:
        return self.target

    def submit_rollback(self, snap: SpecSnapshot, here: bool, log: Log) -> str | None:
        return None  # the colours are this machine's processes

    def reap(
        self, platform: Platform, models: Sequence[str], log: Log, *, rolled_out_only: bool
    ) -> dict[str, str | None]:
        return {}  # the switch stops the old colour at once: nothing is kept warm


def _report(snap: SpecSnapshot, rollout: local.Rollout) -> RolloutReport:
    live = rollout.state.live
    assert live is not None, "a finished rollout leaves a live color"
    details: dict[str, str | int | float | bool] = {
        "gateway": state.gateway_url(snap.platform.home) or "not running",
        "drained": rollout.drained,
    }
    if rollout.switch_s is not None:
        details["switch_ms"] = round(rollout.switch_s * 1000, 1)
    return RolloutReport(rollout.kind, live.color, live.image, live.bundle, live.base_url, details)
