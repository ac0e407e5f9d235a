"""Where the platform is: the one resolver of repo, home and branch, and the site they make.

Every entry point (the code location, its resources and sensors, every CLI command) asks `locate` where the
platform repo, the home and the tracked branch are, with one set of defaults:

- repo: the command's `--repo`, else `$AI_PLATFORM_REPO`, else none: no platform repo, so platform.yaml's
  defaults (`PlatformConfig(name="embedded")`: the embedded target, the folder store, a DuckDB warehouse);
- home: the command's `--home`, else `$AI_PLATFORM_HOME`, else `<repo>/.state` when the repo is a folder (the
  default `load_platform` uses too); a remote repo or no repo has no default home, and what needs one says so;
- branch: the command's `--branch`, else `$AI_PLATFORM_BRANCH`, else `main`;
- platform.yaml: as committed on the branch; a folder that is not (yet) a git repository: its working tree's;
  a repo without one, or a remote whose mirror is not fetched yet: the default above. A broken one, or a repo
  folder that does not exist, is an error naming it, never a fall back.

`Site` holds what that config builds, once: the artifact store, the warehouse and the execution backend
(`ai_platform.backend.for_config`, the one place that asks which target platform.yaml names).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ai_platform.artifacts import ArtifactStore
from ai_platform.backend import Backend, for_config
from ai_platform.changes import is_remote, local_repo, sync
from ai_platform.config import Platform, PlatformConfig, parse_platform_config, under
from ai_platform.errors import ConfigError, NoHomeError, PlatformRepoError
from ai_platform.oci.store import open_store
from ai_platform.platform_repo import config_at
from ai_platform.warehouse import Warehouse, at

REPO_ENV = "AI_PLATFORM_REPO"
HOME_ENV = "AI_PLATFORM_HOME"
BRANCH_ENV = "AI_PLATFORM_BRANCH"
DEFAULT_BRANCH = "main"
DEFAULT_CONFIG = PlatformConfig(name="embedded")  # no platform repo, or one without a platform.yaml yet


@dataclass(frozen=True)
class Location:
    """The platform repo (a folder or a remote URL; None: none), the home where runs keep state, the branch."""

    repo: str | None
    home: Path | None
    branch: str

    def need_home(self, option: str = "--home DIR") -> Path:
        if self.home is None:
            raise NoHomeError(f"no platform home: pass {option} or set {HOME_ENV}")
        return self.home

    def fetched(self) -> Location:
        """This location with a remote repo's branch fetched into the home's mirror (`changes.sync`), where
        `git_dir` reads it: what a command that reads the repo does first on a machine (an operator's pod, a laptop)
        where no sensor fetched it. A folder is read as it is; no repo, nothing to fetch."""
        if self.repo is not None and is_remote(self.repo):
            sync(self.repo, self.need_home(), self.branch)
        return self

    def git_dir(self) -> Path | None:
        """Where git reads the repo: the folder itself, or a remote's mirror under the home."""
        if self.repo is None:
            return None
        return local_repo(self.repo, self.need_home() if is_remote(self.repo) else Path("."))

    def config(self) -> PlatformConfig:
        """platform.yaml on the branch, validated (module docstring: where it comes from when there is none)."""
        git_dir = self.git_dir()
        if git_dir is None or self.repo is None:
            return DEFAULT_CONFIG
        try:
            return config_at(git_dir, self.branch)
        except ConfigError:
            raise
        except PlatformRepoError:
            if is_remote(self.repo):  # its mirror is not fetched yet: the git sensor's first tick fetches it
                return DEFAULT_CONFIG
            if not Path(self.repo).is_dir():
                raise
            path = Path(self.repo) / "platform.yaml"  # a working tree that is not (yet) a git repository
            if path.is_file():
                return parse_platform_config(path.read_text(encoding="utf-8"), str(path))
            return DEFAULT_CONFIG


def locate(
    repo: str | Path | None = None,
    home: str | Path | None = None,
    branch: str | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Location:
    """Repo, home and branch from the command's flags, else the environment, else the defaults (module docstring)."""
    where = str(repo) if repo else environ.get(REPO_ENV) or None
    given = home or environ.get(HOME_ENV) or None
    if given:
        place: Path | None = Path(given)
    elif where and not is_remote(where):
        place = Path(where) / ".state"
    else:
        place = None
    return Location(where, place, branch or environ.get(BRANCH_ENV) or DEFAULT_BRANCH)


@dataclass(frozen=True)
class Site:
    """One platform config at one home, and what it builds: the artifact store, the warehouse, the backend."""

    config: PlatformConfig
    home: Path

    def state(self, relative: str) -> Path:
        """A state location platform.yaml names (artifacts, warehouse, inbox, keys): under the home unless absolute."""
        return under(self.home, relative)

    @cached_property
    def store(self) -> ArtifactStore:
        """Where stages leave their outputs: this machine's folder, or the platform's registry."""
        storage = self.config.storage
        return open_store(storage.artifact_store, self.state(storage.artifacts), self.config.registry)

    @cached_property
    def warehouse(self) -> Warehouse:
        """A DuckDB file under the home, or a DuckLake."""
        storage = self.config.storage
        return at(storage.warehouse_location(self.home), storage.warehouse_data)

    @cached_property
    def backend(self) -> Backend:
        return for_config(self.config)


def site(location: Location, option: str = "--home DIR") -> Site:
    """The site at `location`: its branch's platform.yaml at its home."""
    return Site(location.config(), location.need_home(option))


def site_of(platform: Platform) -> Site:
    """The site of a loaded platform (a run's pinned commit): its own config, at its home."""
    return Site(platform.config, platform.home)
