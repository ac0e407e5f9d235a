"""Resources: where the platform repo is and where runs keep state.

Where they are comes from the site resolver (`ai_platform.site.locate`: the environment, with its one set of
defaults), so the same definitions serve `make demo`, the tests and a deployment that points elsewhere.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from ai_platform.changes import COMMIT_TAG, local_repo, sync
from ai_platform.config import Platform
from ai_platform.errors import MissingArtifactError
from ai_platform.records import Pin, Records
from ai_platform.site import HOME_ENV, REPO_ENV, Location, Site, site, site_of
from ai_platform.specs import SpecSnapshot, pinned_spec, snapshot_model_spec
from ai_platform.warehouse import Warehouse
from assets.execution import ExecutionBackend


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
        prompt-only commit starts at compiled_prompts): its first stage moves the pin there. A
        stage in a fresh pod, without the pin on its disk, reads it from the artifact store.
        """
        home = Path(self.home)
        if not self._run_commit:
            try:
                return pinned_spec(home, model)
            except MissingArtifactError:  # a fresh pod: model_spec ran elsewhere and left its pin in the store
                commit = Records(self.site().store).read(Pin, model).commit
                return snapshot_model_spec(local_repo(self.path, home), home, model, ref=commit)
        with _locked(home / "locks" / f"pin-{model}"):  # parallel first stages must not export twice
            try:
                snap = pinned_spec(home, model)
                if snap.commit.sha == self._run_commit:
                    return snap
            except MissingArtifactError:
                pass
            return snapshot_model_spec(local_repo(self.path, home), home, model, ref=self._run_commit)

    @property
    def location(self) -> Location:
        return Location(self.path, Path(self.home), self.branch)

    def site(self) -> Site:
        """The branch head's platform.yaml at this home: its artifact store, warehouse and backend."""
        return site(self.location)

    def site_of(self, snap: SpecSnapshot) -> Site:
        """The run's pinned platform.yaml at this home: the store, warehouse and backend its stages use."""
        return site_of(snap.platform)

    def records(self, snap: SpecSnapshot) -> Records:
        """The stage records: what each stage published for the next to read."""
        return Records(self.site_of(snap).store)

    def warehouse(self, snap: SpecSnapshot) -> Warehouse:
        return self.site_of(snap).warehouse

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


def default_resources(execution: ExecutionBackend, location: Location) -> dict[str, dg.ConfigurableResource]:
    """The resources at `location` (the site resolver's answer when the code location loaded); what it could not
    resolve stays an environment variable, which Dagster names when a run needs it."""
    return {
        "platform_repo": PlatformRepoResource(
            path=location.repo or dg.EnvVar(REPO_ENV),
            home=str(location.home) if location.home else dg.EnvVar(HOME_ENV),
            branch=location.branch,
        ),
        "execution": execution,
    }
