"""Resources: where the platform repo, the state and the workload environments are.

Switched by environment variables so the same definitions serve the embedded
default and a Kubernetes deployment.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from ai_platform.artifacts import ArtifactStore
from ai_platform.specs import SpecSnapshot, snapshot_model_spec
from ai_platform.warehouse import Warehouse


class PlatformRepoResource(dg.ConfigurableResource):
    """The platform git repository and the home folder where runs keep state."""

    path: str
    home: str
    branch: str = "main"

    def snapshot(self, model: str) -> SpecSnapshot:
        return snapshot_model_spec(Path(self.path), Path(self.home), model, ref=self.branch)

    def artifacts(self, snapshot: SpecSnapshot) -> ArtifactStore:
        return ArtifactStore(snapshot.platform.artifacts_path)

    def warehouse(self, snapshot: SpecSnapshot) -> Warehouse:
        return Warehouse(snapshot.platform.warehouse_path)


class WorkloadEnvironments(dg.ConfigurableResource):
    """Interpreters of the out-of-process environments (DESIGN.md §4)."""

    quantize_python: str = ".venvs/quantize/bin/python"
    serve_python: str = ".venvs/serve/bin/python"
    device: str = "cpu"


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {
        "platform_repo": PlatformRepoResource(
            path=dg.EnvVar("AI_PLATFORM_REPO"),
            home=dg.EnvVar("AI_PLATFORM_HOME"),
            branch=os.environ.get("AI_PLATFORM_BRANCH", "main"),
        ),
        "environments": WorkloadEnvironments(),
    }
