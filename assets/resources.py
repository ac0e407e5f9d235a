"""Resources: where the platform repo is and where runs keep state.

Read from environment variables, so the same definitions serve `make demo`, the
tests and a deployment that points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from ai_platform.config import Platform
from ai_platform.errors import PlatformError
from ai_platform.kube import gpu_pod_spec
from ai_platform.specs import SpecSnapshot, pinned_spec, snapshot_model_spec
from ai_platform.warehouse import Warehouse

ROOT = Path(__file__).resolve().parent.parent


class PlatformRepoResource(dg.ConfigurableResource):
    """The platform git repository and the home folder where runs keep state."""

    path: str
    home: str
    branch: str = "main"

    def snapshot(self, model: str) -> SpecSnapshot:
        """Resolve the branch now and pin the model's spec to that commit (model_spec only)."""
        return snapshot_model_spec(Path(self.path), Path(self.home), model, ref=self.branch)

    def pinned(self, model: str) -> SpecSnapshot:
        """The commit model_spec pinned: every later stage reads the same one."""
        return pinned_spec(Path(self.home), model)

    def warehouse(self, snap: SpecSnapshot) -> Warehouse:
        return Warehouse(snap.platform.warehouse_path)

    def platform(self) -> Platform:
        """The platform config at the branch head, for stages that serve every model (feedback, trust)."""
        from ai_platform.platform_repo import load_at

        return load_at(Path(self.path), Path(self.home), self.branch)[1]


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
