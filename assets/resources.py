"""Resources: where the platform repo is and where runs keep state.

Read from environment variables, so the same definitions serve `make demo`, the
tests and a deployment that points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from ai_platform.specs import SpecSnapshot, pinned_spec, snapshot_model_spec
from ai_platform.warehouse import Warehouse


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


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {
        "platform_repo": PlatformRepoResource(
            path=dg.EnvVar("AI_PLATFORM_REPO"),
            home=dg.EnvVar("AI_PLATFORM_HOME"),
            branch=os.environ.get("AI_PLATFORM_BRANCH", "main"),
        ),
    }
