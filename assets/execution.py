"""The execution backend as a resource: where platform.yaml says the pipeline runs, read once.

The code location reads platform.yaml from the tracked branch (a local repo, or
the git sensor's mirror of a remote one) when it loads, and builds the backend
it names (`ai_platform.backend`): the executor and the
`execution` resource that runs workloads, serves candidates and rolls out. A
broken platform.yaml is an error that names the file and field, never a quiet
fall back to the embedded default; no repo at all (or one without a
platform.yaml yet) means the embedded default.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from ai_platform.backend import Backend
from ai_platform.backend import for_config as backend_for
from ai_platform.changes import local_repo
from ai_platform.config import Platform, PlatformConfig, parse_platform_config
from ai_platform.errors import ConfigError, PlatformError, PlatformRepoError
from ai_platform.kube import gpu_pod_spec
from ai_platform.platform_repo import config_at
from ai_platform.rollout.kubernetes import RUN_POD
from ai_platform.specs import SpecSnapshot

ROOT = Path(__file__).resolve().parent.parent


def platform_config() -> PlatformConfig:
    """platform.yaml on the tracked branch, validated; the embedded default when there is none yet."""
    repo, home = os.environ.get("AI_PLATFORM_REPO"), os.environ.get("AI_PLATFORM_HOME")
    if not repo:
        return PlatformConfig(name="embedded")
    branch = os.environ.get("AI_PLATFORM_BRANCH", "main")
    try:
        return config_at(local_repo(repo, Path(home or ".")), branch)
    except ConfigError:
        raise
    except PlatformRepoError:
        path = Path(repo) / "platform.yaml"  # a working tree that is not (yet) a git repository
        if path.is_file():
            return parse_platform_config(path.read_text(encoding="utf-8"), str(path))
        return PlatformConfig(name="embedded")


class ExecutionBackend(dg.ConfigurableResource):
    """Where the pipeline runs: the one backend platform.yaml names, for every asset.

    Two implementations below, one per target; `execution_for` picks one, once.
    """

    target: str

    def executor(self) -> dg.ExecutorDefinition:
        """How a run's steps execute."""
        raise NotImplementedError

    def _invoke(
        self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any], platform: Platform
    ) -> dg.PipesClientCompletedInvocation:
        raise NotImplementedError

    def for_run(self, snap: SpecSnapshot) -> Backend:
        """The library's backend, once the run's pinned platform.yaml is known to name the same target."""
        backend = backend_for(snap.platform.config)
        if backend.target != self.target:
            raise ConfigError(
                f"platform.yaml at {snap.commit.sha[:12]} names the {backend.target!r} backend,"
                f" but this code location loaded {self.target!r}: reload the code location"
            )
        return backend

    def run_workload(
        self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any], snap: SpecSnapshot
    ) -> Any:
        """`python -m module` in its own environment through Dagster Pipes; its last reported message."""
        self.for_run(snap)
        messages = self._invoke(context, module, job, snap.platform).get_custom_messages()
        if not messages:
            raise PlatformError(f"{module} ended without reporting a result")
        if "error" in messages[-1]:  # the workload's own PlatformError, reported rather than crashed
            raise PlatformError(f"{module}: {messages[-1]['error']}")
        return messages[-1]


class EmbeddedExecution(ExecutionBackend):
    """Steps in processes on this machine; workloads in the quantize environment's own Python."""

    target: str = "embedded"
    quantize_python: str = str(ROOT / ".venvs" / "quantize" / "bin" / "python")

    def executor(self) -> dg.ExecutorDefinition:
        # Two cores on the embedded default; heavy stages run out of process anyway.
        return dg.multiprocess_executor.configured({"max_concurrent": 2})

    def _invoke(
        self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any], platform: Platform
    ) -> dg.PipesClientCompletedInvocation:
        if not Path(self.quantize_python).is_file():
            raise PlatformError(f"{self.quantize_python} is missing: `make envs` creates the quantize environment")
        env = {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "TOKENIZERS_PARALLELISM": "false"}
        command = [self.quantize_python, "-m", module]
        return dg.PipesSubprocessClient(env=env).run(context=context, command=command, extras={"job": job})


class KubernetesExecution(ExecutionBackend):
    """Runs launched by the instance's K8sRunLauncher (deploy/dagster-instance.kubernetes.yaml), a pod per
    step (k8s_job_executor) that asks for no GPU: the GPU goes to the quantize workload's pod and to the
    vLLM Deployments (the canary's candidate, each colour), from platform.yaml's `kubernetes`."""

    target: str = "kubernetes"
    namespace: str = "ai-platform"

    def executor(self) -> dg.ExecutorDefinition:
        from dagster_k8s import k8s_job_executor

        # step pods carry the label vLLM's NetworkPolicy admits (the canary and the warm-up call vLLM from them)
        step = {"pod_template_spec_metadata": {"labels": dict(RUN_POD)}}
        return k8s_job_executor.configured(
            {"job_namespace": self.namespace, "max_concurrent": 4, "step_k8s_config": step}
        )

    def _invoke(
        self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any], platform: Platform
    ) -> dg.PipesClientCompletedInvocation:
        from dagster_k8s import PipesK8sClient

        k8s = platform.config.kubernetes
        spec = gpu_pod_spec(platform, k8s.gpu.quantize_image, ["python", "-m", module], image_field="quantize_image")
        return PipesK8sClient().run(context=context, extras={"job": job}, namespace=k8s.namespace, base_pod_spec=spec)


def execution_for(config: PlatformConfig) -> ExecutionBackend:
    """The resource for the backend platform.yaml names (`ai_platform.backend.for_config` decides which)."""
    made: dict[str, Callable[[], ExecutionBackend]] = {
        "embedded": EmbeddedExecution,
        "kubernetes": lambda: KubernetesExecution(namespace=config.kubernetes.namespace),
    }
    return made[backend_for(config).target]()


CONFIG = platform_config()
EXECUTION = execution_for(CONFIG)
