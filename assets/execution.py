"""The execution backend as a resource: where platform.yaml says the pipeline runs, read once.

The code location asks the site resolver (`ai_platform.site`) where the platform repo, home and branch are,
reads platform.yaml from the tracked branch when it loads, and takes the backend it names
(`ai_platform.backend.for_config`, the one place that asks the target). The backend says how steps and
workloads execute (`Backend.steps`, `Backend.workload`); this module only hands that to Dagster: the executor,
and Pipes for a workload (a subprocess, or a GPU pod). A broken platform.yaml is an error that names the file
and field, never a quiet fall back to the embedded default; no repo at all (or one without a platform.yaml
yet) means the embedded default.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from ai_platform.backend import Backend, for_config
from ai_platform.backend.workload import Steps, Subprocess, Workload
from ai_platform.errors import ConfigError, WorkloadError
from ai_platform.site import locate
from ai_platform.specs import SpecSnapshot


class ExecutionBackend(dg.ConfigurableResource):
    """Where the pipeline runs: the one backend platform.yaml names, for every asset.

    `target` is the backend the code location loaded; a run whose pinned platform.yaml names another is refused.
    """

    target: str

    def for_run(self, snap: SpecSnapshot) -> Backend:
        """The library's backend, once the run's pinned platform.yaml is known to name the same target."""
        backend = for_config(snap.platform.config)
        if backend.target != self.target:
            raise ConfigError(
                f"platform.yaml at {snap.commit.sha[:12]} names the {backend.target!r} backend,"
                f" but this code location loaded {self.target!r}: reload the code location"
            )
        return backend

    def run_workload(
        self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any], snap: SpecSnapshot
    ) -> Any:
        """`python -m module` where the backend runs workloads, through Dagster Pipes; its last reported message."""
        workload = self.for_run(snap).workload(snap.platform, module)
        messages = pipes(context, workload, job).get_custom_messages()
        if not messages:
            raise WorkloadError(f"{module} ended without reporting a result")
        if "error" in messages[-1]:  # the workload's own PlatformError, reported rather than crashed
            raise WorkloadError(f"{module}: {messages[-1]['error']}")
        return messages[-1]


def pipes(
    context: dg.AssetExecutionContext, workload: Workload, job: dict[str, Any]
) -> dg.PipesClientCompletedInvocation:
    """The workload the backend described, run by the Pipes client for its kind."""
    if isinstance(workload, Subprocess):
        return dg.PipesSubprocessClient(env=workload.env).run(
            context=context, command=workload.command, extras={"job": job}
        )
    from dagster_k8s import PipesK8sClient

    return PipesK8sClient().run(
        context=context, extras={"job": job}, namespace=workload.namespace, base_pod_spec=workload.spec
    )


def executor(steps: Steps) -> dg.ExecutorDefinition:
    """How a run's steps execute, as the backend said: processes here, or a pod per step in its namespace."""
    if steps.namespace is None:
        return dg.multiprocess_executor.configured({"max_concurrent": steps.max_concurrent})
    from dagster_k8s import k8s_job_executor

    return k8s_job_executor.configured(
        {"job_namespace": steps.namespace, "max_concurrent": steps.max_concurrent, "step_k8s_config": step_k8s(steps)}
    )


def step_k8s(steps: Steps) -> dict[str, Any]:
    """The k8s_job_executor's `step_k8s_config` (dagster-k8s's UserDefinedDagsterK8sConfig) for the backend's
    step pods: their labels, their pod spec (pull Secrets, the image's user and the volumes it owns: the lake's
    data claim) and their container's mounts."""
    step: dict[str, Any] = {"pod_template_spec_metadata": {"labels": dict(steps.pod_labels)}}
    if steps.pod_spec:
        step["pod_spec_config"] = dict(steps.pod_spec)
    if steps.volume_mounts:
        step["container_config"] = {"volume_mounts": list(steps.volume_mounts)}
    return step


LOCATION = locate()
CONFIG = LOCATION.config()
BACKEND = for_config(CONFIG)
EXECUTION = ExecutionBackend(target=BACKEND.target)
EXECUTOR = executor(BACKEND.steps(CONFIG))
