"""Reading the platform repo by commit, with real git repositories."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from ai_platform.errors import ArchiveEscapeError, ConfigError, PlatformRepoError, UnknownRefError
from ai_platform.platform_repo import config_at, export, git, load_at, model_names, resolve


def test_same_seed_same_commit(demo_repo: Path) -> None:
    """Fixed author and dates: the demo's first commit is reproducible too."""
    commit = resolve(demo_repo)
    assert commit.author == "ai-platform demo <demo@ai-platform.invalid>"
    assert commit.timestamp == 1767603600
    assert git(demo_repo, "status", "--porcelain") == b""


def test_load_at_reads_the_commit_not_the_working_tree(own_demo_repo: Path, tmp_path: Path) -> None:
    first = resolve(own_demo_repo).sha
    spec = own_demo_repo / "models/contract-reviewer.yaml"
    spec.write_text(spec.read_text().replace("max_num_seqs: 8", "max_num_seqs: 4"))
    git(own_demo_repo, "commit", "--quiet", "-am", "fewer sequences")
    spec.write_text("garbage: [")  # uncommitted breakage must not matter

    commit, platform = load_at(own_demo_repo, tmp_path / "home", "main")
    assert commit.message == "fewer sequences"
    assert platform.model("contract-reviewer").serving.max_num_seqs == 4
    assert platform.root == tmp_path / "home" / "snapshots" / commit.sha
    _, old = load_at(own_demo_repo, tmp_path / "home", first)
    assert old.model("contract-reviewer").serving.max_num_seqs == 8


def test_bad_commit_is_a_config_error_at_that_commit(own_demo_repo: Path, tmp_path: Path) -> None:
    (own_demo_repo / "platform.yaml").write_text("name: Not A Label\n")
    git(own_demo_repo, "commit", "--quiet", "-am", "break it")
    with pytest.raises(ConfigError, match=r"platform\.yaml: invalid PlatformConfig"):
        load_at(own_demo_repo, tmp_path / "home", "main")


def test_export_is_complete_or_absent(demo_repo: Path, tmp_path: Path) -> None:
    sha = resolve(demo_repo).sha
    dest = export(demo_repo, sha, tmp_path / "snap")
    assert (dest / ".complete").read_text().strip() == sha
    assert (dest / "hub/contract-qwen2/model.safetensors").is_file()
    assert not list(tmp_path.glob("*.partial*"))


def test_runs_that_export_the_same_commit_at_once_each_get_the_whole_snapshot(
    own_demo_repo: Path, tmp_path: Path
) -> None:
    """Two models' runs at one commit (make demo ships both side by side; a run queue may start them together) export
    the same snapshot at once: each returns a whole snapshot, and none removes files another is reading."""
    from concurrent.futures import ThreadPoolExecutor

    for i in range(300):  # enough files that the extractions overlap
        (own_demo_repo / f"many/{i:03d}.txt").parent.mkdir(exist_ok=True)
        (own_demo_repo / f"many/{i:03d}.txt").write_text(f"{i}\n" * 200)
    git(own_demo_repo, "add", "many")
    git(own_demo_repo, "commit", "--quiet", "-m", "many files")
    sha = resolve(own_demo_repo).sha
    expected = sorted(str(p.relative_to(own_demo_repo)) for p in (own_demo_repo / "many").iterdir())
    dest = tmp_path / "snapshots" / sha

    def export_and_list(_: int) -> list[str]:
        root = export(own_demo_repo, sha, dest)
        return sorted(str(p.relative_to(root)) for p in (root / "many").iterdir())

    for _ in range(3):
        with ThreadPoolExecutor(max_workers=6) as pool:
            seen = list(pool.map(export_and_list, range(6)))
        assert all(listing == expected for listing in seen)
        assert (dest / ".complete").read_text().strip() == sha
        assert [p.name for p in dest.parent.iterdir()] == [sha]  # no partial folder left behind
        shutil.rmtree(dest)


def test_model_names(demo_repo: Path) -> None:
    assert model_names(demo_repo) == ["contract-reviewer"]


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(PlatformRepoError, match="not a git repository"):
        resolve(tmp_path)


def test_unknown_ref(demo_repo: Path) -> None:
    """Every reader of a ref (resolve, config_at, model_names) names the repo and its branches, not git's words."""
    expected = rf"unknown ref 'mian' in {re.escape(str(demo_repo))}; did you mean 'main'\? \(branches: main\)"
    for read in (resolve, config_at, model_names):
        with pytest.raises(UnknownRefError, match=expected):
            read(demo_repo, "mian")
    with pytest.raises(UnknownRefError, match=r"unknown ref 'no-such-branch' in .* \(branches: main\)$"):
        resolve(demo_repo, "no-such-branch")


@pytest.mark.parametrize(
    "links",
    [
        {"escape": "../outside/secret"},  # a symlink out of the snapshot
        {"a": "l/../outside/secret", "l": "."},  # a chain: `a` is extracted before `l` turns it outward
    ],
    ids=["symlink", "link-chain"],
)
def test_a_commit_whose_links_lead_out_of_the_snapshot_is_refused(
    own_demo_repo: Path, tmp_path: Path, links: dict[str, str]
) -> None:
    for name, target in links.items():
        os.symlink(target, own_demo_repo / name)
    git(own_demo_repo, "add", *links)
    git(own_demo_repo, "commit", "--quiet", "-m", "links")
    sha = resolve(own_demo_repo).sha
    dest = tmp_path / "snapshots" / sha
    with pytest.raises(ArchiveEscapeError, match=rf"^git archive of {sha}: .* leads outside the folder"):
        export(own_demo_repo, sha, dest)
    assert list((tmp_path / "snapshots").iterdir()) == [], "no snapshot and no half-extracted one"
