"""The site decided once: one resolver of repo, home and branch with one set of defaults, the one object that
builds the store, warehouse and backend, and the decisions that live in one module each."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from ai_platform.artifacts import FolderStore
from ai_platform.config import PlatformConfig, parse_platform_config
from ai_platform.errors import NoHomeError, PlatformRepoError
from ai_platform.oci.store import RegistryStore
from ai_platform.platform_repo import git
from ai_platform.site import DEFAULT_CONFIG, Location, Site, locate

ROOT = Path(__file__).resolve().parent.parent
REMOTE = "https://git.example.com/acme/platform.git"


def test_flags_then_environment_then_one_set_of_defaults(tmp_path: Path) -> None:
    env = {"AI_PLATFORM_REPO": "/srv/repo", "AI_PLATFORM_HOME": "/srv/home", "AI_PLATFORM_BRANCH": "prod"}
    assert locate(environ=env) == Location("/srv/repo", Path("/srv/home"), "prod")
    assert locate(tmp_path, "h", "dev", environ=env) == Location(str(tmp_path), Path("h"), "dev")
    # no home: a repo folder's .state (what load_platform defaults to as well); the branch is main
    assert locate(environ={"AI_PLATFORM_REPO": "/srv/repo"}) == Location("/srv/repo", Path("/srv/repo/.state"), "main")
    # a remote repo and no repo have no default home: what needs one says how to give it
    for where in (locate(environ={"AI_PLATFORM_REPO": REMOTE}), locate(environ={})):
        assert where.home is None
        with pytest.raises(NoHomeError, match="no platform home: pass --home DIR or set AI_PLATFORM_HOME"):
            where.need_home()
    assert locate(environ={"AI_PLATFORM_REPO": "", "AI_PLATFORM_HOME": ""}) == Location(None, None, "main")


def test_the_cli_and_the_code_location_resolve_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same environment, same repo, home and branch: the CLI's commands and the code location's resources."""
    import dagster as dg

    from ai_platform.cli.common import location
    from assets.execution import ExecutionBackend
    from assets.resources import default_resources

    monkeypatch.setenv("AI_PLATFORM_REPO", str(tmp_path / "repo"))
    monkeypatch.delenv("AI_PLATFORM_HOME", raising=False)
    monkeypatch.setenv("AI_PLATFORM_BRANCH", "release")
    cli = location(argparse.Namespace())
    resource = default_resources(ExecutionBackend(target="embedded"), locate())["platform_repo"]
    assert isinstance(resource, dg.ConfigurableResource)
    assert resource.location == cli == Location(str(tmp_path / "repo"), tmp_path / "repo" / ".state", "release")
    assert location(argparse.Namespace(home=str(tmp_path / "h"))).home == tmp_path / "h"  # --home first


def test_platform_yaml_on_the_branch_else_the_one_default(tmp_path: Path) -> None:
    assert locate(environ={}).config() == DEFAULT_CONFIG == PlatformConfig(name="embedded")
    tree = tmp_path / "tree"  # a working tree that is not a git repository (yet)
    tree.mkdir()
    assert locate(tree, tmp_path / "home").config() == DEFAULT_CONFIG
    (tree / "platform.yaml").write_text("name: acme\nexecution: {target: embedded}\n")
    assert locate(tree, tmp_path / "home").config().name == "acme"
    git(tree, "init", "--quiet", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "--no-gpg-sign", "-m", "one")
    (tree / "platform.yaml").write_text("name: uncommitted\n")
    assert locate(tree, tmp_path / "home").config().name == "acme", "the branch, not the working tree"
    assert locate(REMOTE, tmp_path / "home").config() == DEFAULT_CONFIG  # its mirror is not fetched yet
    with pytest.raises(PlatformRepoError):  # a repo folder that is not there is an error, not the default
        locate(tmp_path / "nowhere", tmp_path / "home").config()


def test_the_site_builds_the_store_platform_yaml_names(tmp_path: Path) -> None:
    folder = Site(DEFAULT_CONFIG, tmp_path)
    assert isinstance(folder.store, FolderStore) and folder.store.keeps_folders_in_place
    assert folder.store.where == str(tmp_path / "artifacts") and folder.store.workload_settings() is None
    assert folder.warehouse.location == str(tmp_path / "warehouse.duckdb")
    assert folder.backend.target == "embedded"
    text = "name: acme\nstorage: {artifact_store: registry}\nregistry: {url: 'https://r.example.com/ml'}\n"
    registry = Site(parse_platform_config(text, "platform.yaml"), tmp_path)
    assert isinstance(registry.store, RegistryStore) and not registry.store.keeps_folders_in_place
    assert registry.store.workload_settings() == {
        "url": "https://r.example.com/ml",
        "insecure": False,
        "token_realms": [],
    }


def sources() -> dict[str, str]:
    found = {}
    for path in [
        *(ROOT / "ai_platform").rglob("*.py"),
        *(ROOT / "assets").rglob("*.py"),
        *(ROOT / "sensors").rglob("*.py"),
    ]:
        found[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    found["definitions.py"] = (ROOT / "definitions.py").read_text(encoding="utf-8")
    return found


def test_each_decision_is_made_in_one_module() -> None:
    """Which backend runs: backend/__init__.py. Whether artifacts stay in a folder here: the store factory (the
    schema in config.py only checks that a registry store names a registry). Nothing reads where the platform
    is from the environment but the site resolver."""
    target = {path for path, text in sources().items() if re.search(r"\.execution\.target\b", text)}
    assert target == {"ai_platform/backend/__init__.py"}
    # Nor is a backend's name compared with a target's anywhere else (`target = backend.target` then
    # `target == "kubernetes"` got past a grep for the first form): each backend answers for itself.
    named = re.compile(r"""[!=]=\s*["'](kubernetes|embedded)["']|["'](kubernetes|embedded)["']\s*[!=]=""")
    compared = {path for path, text in sources().items() if named.search(text)}
    assert compared <= {"ai_platform/backend/__init__.py", "ai_platform/config.py"}, compared
    store = {
        path
        for path, text in sources().items()
        if re.search(r"artifact_store\s*[!=]=\s*\"folder\"|kind == \"folder\"", text)
    }
    assert store == {"ai_platform/oci/store.py"}
    environment = {
        path
        for path, text in sources().items()
        if re.search(r"AI_PLATFORM_(REPO|HOME|BRANCH)\b", text) and re.search(r"environ\b|getenv|EnvVar\(\"", text)
    }
    assert environment == {"ai_platform/site.py"}
