"""The execution profile: platform.yaml's `execution.target` picks how steps run.

`embedded`: the multiprocess executor on this machine (2 steps at a time).
`kubernetes`: `k8s_job_executor`, one pod per step, with a `dagster-k8s/config`
tag on the steps that need a GPU in their own pod (GPU resources, node
selector, tolerations from platform.yaml). Runs themselves are launched by the
instance's `K8sRunLauncher` (deploy/dagster-instance.kubernetes.yaml). Read from
the tracked branch (a local repo, or the git sensor's mirror of a remote one)
when the code location loads; an unreadable or absent repo means the embedded
default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from ai_platform.changes import local_repo
from ai_platform.config import PlatformConfig
from ai_platform.errors import PlatformError
from ai_platform.kube import gpu_step_config
from ai_platform.platform_repo import git


def _platform_yaml() -> str | None:
    """platform.yaml on the tracked branch: a local repo's, or the mirror's of a remote one (if fetched yet)."""
    repo, home = os.environ.get("AI_PLATFORM_REPO"), os.environ.get("AI_PLATFORM_HOME")
    if not repo:
        return None
    branch = os.environ.get("AI_PLATFORM_BRANCH", "main")
    try:
        return git(local_repo(repo, Path(home or ".")), "show", f"{branch}:platform.yaml").decode("utf-8")
    except PlatformError:
        path = Path(repo) / "platform.yaml"  # a working tree that is not (yet) a git repository
        return path.read_text(encoding="utf-8") if path.is_file() else None


def platform_config() -> PlatformConfig:
    text = _platform_yaml()
    if text is None:
        return PlatformConfig(name="embedded")
    try:
        return PlatformConfig.model_validate(yaml.safe_load(text) or {})
    except (ValueError, yaml.YAMLError):
        # A broken platform.yaml must not take the code location down: model_spec reports it,
        # with every detail, at the next run.
        return PlatformConfig(name="embedded")


CONFIG = platform_config()
KUBERNETES = CONFIG.execution.target == "kubernetes"
GPU_STEP_TAGS: dict[str, Any] = {"dagster-k8s/config": gpu_step_config(CONFIG)} if KUBERNETES else {}


def executor() -> dg.ExecutorDefinition:
    if KUBERNETES:
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor.configured({"job_namespace": CONFIG.kubernetes.namespace, "max_concurrent": 4})
    # Two cores on the embedded default; heavy stages run out of process anyway.
    return dg.multiprocess_executor.configured({"max_concurrent": 2})
