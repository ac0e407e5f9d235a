"""The execution backend as a resource: platform.yaml's `execution.target`, read once.

The code location reads platform.yaml from the tracked branch (a local repo, or
the git sensor's mirror of a remote one) when it loads, and builds the backend
it names (`ai_platform.backend`): the executor, the GPU step tags and the
`execution` resource that runs workloads, serves candidates and rolls out. A
broken platform.yaml is an error that names the file and field, never a quiet
fall back to the embedded default; no repo at all (or one without a
platform.yaml yet) means the embedded default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from ai_platform.backend import Backend, for_config
from ai_platform.changes import local_repo
from ai_platform.config import PlatformConfig, parse_platform_config
from ai_platform.errors import ConfigError, PlatformError, PlatformRepoError
from ai_platform.platform_repo import config_at
from ai_platform.specs import SpecSnapshot


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
    """Where the pipeline runs: the one backend platform.yaml names, for every asset."""

    target: str = "embedded"

    def for_run(self, snap: SpecSnapshot) -> Backend:
        """The backend, once the run's pinned platform.yaml is known to name the same target."""
        pinned = snap.platform.config.execution.target
        if pinned != self.target:
            raise ConfigError(f"platform.yaml at {snap.commit.sha[:12]} names execution target {pinned!r}, but this"
                              f" code location loaded {self.target!r}: reload the code location")  # fmt: skip
        return for_config(snap.platform.config)

    def run_workload(self, context: dg.AssetExecutionContext, module: str, job: dict[str, Any],
                     snap: SpecSnapshot) -> Any:  # fmt: skip
        """`python -m module` in its own environment through Dagster Pipes; its last reported message."""
        invocation = self.for_run(snap).run_workload(context, module, job, snap.platform)
        messages = invocation.get_custom_messages()
        if not messages:
            raise PlatformError(f"{module} ended without reporting a result")
        if "error" in messages[-1]:  # the workload's own PlatformError, reported rather than crashed
            raise PlatformError(f"{module}: {messages[-1]['error']}")
        return messages[-1]


CONFIG = platform_config()
EXECUTION = ExecutionBackend(target=CONFIG.execution.target)
BACKEND = for_config(CONFIG)
GPU_STEP_TAGS: dict[str, Any] = BACKEND.gpu_step_tags()
