"""Resources: where the platform repo is and where runs keep state.

Read from environment variables, so the same definitions serve `make demo`, the
tests and a deployment that points elsewhere.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from ai_platform.artifacts import MissingArtifactError
from ai_platform.changes import COMMIT_TAG, local_repo, sync
from ai_platform.config import Platform
from ai_platform.errors import PlatformError
from ai_platform.kube import gpu_pod_spec
from ai_platform.specs import SpecSnapshot, pinned_spec, snapshot_model_spec
from ai_platform.warehouse import Warehouse

ROOT = Path(__file__).resolve().parent.parent


class PlatformRepoResource(dg.ConfigurableResource):
    """The platform git repository (a folder, or a remote URL read through a mirror) and the home folder
    where runs keep state."""

    path: str
    home: str
    branch: str = "main"
    _run_commit: str | None = PrivateAttr(default=None)  # the commit the git sensor planned this run for

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._run_commit = context.run.tags.get(COMMIT_TAG) if context.run else None

    def snapshot(self, model: str) -> SpecSnapshot:
        """Pin the model's spec to the run's commit, or to the branch as it is now (model_spec only)."""
        home = Path(self.home)
        if self._run_commit:
            return snapshot_model_spec(local_repo(self.path, home), home, model, ref=self._run_commit)
        return snapshot_model_spec(sync(self.path, home, self.branch), home, model, ref=self.branch)

    def pinned(self, model: str) -> SpecSnapshot:
        """The commit model_spec pinned: every later stage reads the same one.

        A run the git sensor planned reads its own commit even without model_spec in it (a
        prompt-only commit starts at compiled_prompts): its first stage moves the pin there.
        """
        home = Path(self.home)
        if not self._run_commit:
            return pinned_spec(home, model)
        with _locked(home / "locks" / f"pin-{model}"):  # parallel first stages must not export twice
            try:
                snap = pinned_spec(home, model)
                if snap.commit.sha == self._run_commit:
                    return snap
            except MissingArtifactError:
                pass
            return snapshot_model_spec(local_repo(self.path, home), home, model, ref=self._run_commit)

    def warehouse(self, snap: SpecSnapshot) -> Warehouse:
        return Warehouse(snap.platform.warehouse_path)

    def platform(self) -> Platform:
        """The platform config at the branch head, for stages that serve every model (feedback, trust)."""
        from ai_platform.platform_repo import load_at

        return load_at(local_repo(self.path, Path(self.home)), Path(self.home), self.branch)[1]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


class WorkloadRunner(dg.ConfigurableResource):
    """Runs an `ai_platform` workload module in its own environment through Dagster Pipes.

    The asset code is the same for both targets: platform.yaml's `execution.target`
    picks a subprocess of the quantize environment (embedded) or a GPU pod (kubernetes).
    """

    quantize_python: str = str(ROOT / ".venvs" / "quantize" / "bin" / "python")

    def run(self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any], platform: Platform) -> Any:
        command = ["python", "-m", module]
        if platform.config.execution.target == "kubernetes":
            from dagster_k8s import PipesK8sClient

            k8s = platform.config.kubernetes
            spec = gpu_pod_spec(platform, k8s.gpu.quantize_image, command, image_field="quantize_image")
            invocation = PipesK8sClient().run(
                context=context, extras={"job": job}, namespace=k8s.namespace, base_pod_spec=spec
            )
        else:
            if not Path(self.quantize_python).is_file():
                raise PlatformError(f"{self.quantize_python} is missing: `make envs` creates the quantize environment")
            command[0] = self.quantize_python
            env = {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "TOKENIZERS_PARALLELISM": "false"}
            invocation = dg.PipesSubprocessClient(env=env).run(context=context, command=command, extras={"job": job})
        messages = invocation.get_custom_messages()
        if not messages:
            raise PlatformError(f"{module} ended without reporting a result")
        if "error" in messages[-1]:  # the workload's own PlatformError, reported rather than crashed
            raise PlatformError(f"{module}: {messages[-1]['error']}")
        return messages[-1]


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {
        "platform_repo": PlatformRepoResource(
            path=dg.EnvVar("AI_PLATFORM_REPO"),
            home=dg.EnvVar("AI_PLATFORM_HOME"),
            branch=os.environ.get("AI_PLATFORM_BRANCH", "main"),
        ),
        "workloads": WorkloadRunner(),
    }
