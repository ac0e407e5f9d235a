"""Resources: where the platform repo is and where runs keep state.

Read from environment variables, so the same definitions serve `make demo`, the
tests and a deployment that points elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from ai_platform.specs import SpecSnapshot, snapshot_model_spec


class PlatformRepoResource(dg.ConfigurableResource):
    """The platform git repository and the home folder where runs keep state."""

    path: str
    home: str
    branch: str = "main"

    def snapshot(self, model: str) -> SpecSnapshot:
        return snapshot_model_spec(Path(self.path), Path(self.home), model, ref=self.branch)


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {
        "platform_repo": PlatformRepoResource(
            path=dg.EnvVar("AI_PLATFORM_REPO"),
            home=dg.EnvVar("AI_PLATFORM_HOME"),
            branch=os.environ.get("AI_PLATFORM_BRANCH", "main"),
        ),
    }
