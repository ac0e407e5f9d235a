"""The platform repository: a git repo of config, prompts, evals and labels.

The pipeline never reads a working tree directly; it reads a *commit*, exported
to a snapshot folder, so every artifact can name the exact commit it came from.
"""

from __future__ import annotations

import difflib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ai_platform.config import Platform, PlatformConfig, load_platform, parse_platform_config
from ai_platform.errors import PlatformRepoError, UnknownRefError
from ai_platform.untar import extract

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def git(
    repo: Path,
    *args: str,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    ok: tuple[int, ...] = (0,),
) -> bytes:
    """Run git in `repo`; a failure becomes a PlatformRepoError with git's own message.

    `timeout` bounds commands that talk to a remote (a sensor tick has 60 s in all);
    `ok` lists exit codes that are answers rather than failures (`merge-base` exits 1
    when two commits share no history).
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            input=input,
            capture_output=True,
            check=False,
            env={**os.environ, **_GIT_ENV, **(env or {})},
            timeout=timeout,
        )
    except FileNotFoundError:
        raise PlatformRepoError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise PlatformRepoError(f"{repo}: git {args[0]}: no answer within {timeout:g} s") from None
    if done.returncode not in ok:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise PlatformRepoError(f"{repo}: git {args[0]}: {message}")
    return done.stdout


def _at_ref(repo: Path, ref: str, *args: str) -> bytes:
    """git `args`, which read `ref`; if they fail because the repo has no such ref, an UnknownRefError says so."""
    try:
        return git(repo, *args)
    except PlatformRepoError:
        check_ref(repo, ref)
        raise


def check_ref(repo: Path, ref: str) -> None:
    """An UnknownRefError naming the repo's branches (and a close match) unless `ref` names a commit in `repo`."""
    if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", ok=(0, 1)).strip():
        return
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags").decode("utf-8").split()
    names = [r.split("/", 2)[2] for r in refs]  # branches and tags, short
    branches = [r.removeprefix("refs/heads/") for r in refs if r.startswith("refs/heads/")]
    close = difflib.get_close_matches(ref, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UnknownRefError(f"unknown ref {ref!r} in {repo}{hint} (branches: {', '.join(branches) or 'none'})")


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    timestamp: int  # committer time, seconds since the epoch
    message: str


def resolve(repo: Path, ref: str = "HEAD") -> Commit:
    """The commit `ref` names (a branch, tag or sha)."""
    out = _at_ref(repo, ref, "log", "-1", "--format=%H%x00%an <%ae>%x00%ct%x00%s", f"{ref}^{{commit}}")
    sha, author, timestamp, message = out.decode("utf-8").rstrip("\n").split("\x00", 3)
    return Commit(sha=sha, author=author, timestamp=int(timestamp), message=message)


def export(repo: Path, sha: str, dest: Path) -> Path:
    """Write the tree of commit `sha` to `dest` (once; snapshots are immutable).

    Runs of several models at one commit export it at once: each extracts into a folder of its own beside `dest`
    and renames it into place; whoever comes second finds `dest` whole and discards its copy. A whole snapshot is
    never removed, so no run loses the files it is reading."""
    if (dest / ".complete").is_file():
        return dest
    archive = git(repo, "archive", "--format=tar", sha)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{dest.name}.partial-", dir=dest.parent))
    partial.chmod(0o755)  # as a plain mkdir makes it (mkdtemp's is owner-only)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            extract(tar, partial, f"git archive of {sha}")  # nothing lands or links outside the snapshot
        (partial / ".complete").write_text(sha + "\n")
        if dest.exists() and not (dest / ".complete").is_file():
            shutil.rmtree(dest, ignore_errors=True)  # a snapshot left half-made by an older platform
        try:
            partial.rename(dest)
        except OSError:
            if not (dest / ".complete").is_file():  # not another run's whole snapshot: a real failure
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)  # never a half-extracted snapshot, nor a second copy
    return dest


def load_at(repo: Path, home: Path, ref: str = "HEAD") -> tuple[Commit, Platform]:
    """Resolve `ref`, export that commit under `<home>/snapshots/<sha>`, and load its config."""
    commit = resolve(repo, ref)
    root = export(repo, commit.sha, Path(home) / "snapshots" / commit.sha)
    return commit, load_platform(root, home=home)


def config_at(repo: Path, ref: str) -> PlatformConfig:
    """platform.yaml as committed at `ref`, validated, without exporting the tree."""
    text = _at_ref(repo, ref, "show", f"{ref}:platform.yaml").decode("utf-8", "replace")
    return parse_platform_config(text, f"platform.yaml at {ref}")


def model_names(repo: Path, ref: str = "HEAD") -> list[str]:
    """Names of the model specs (`models/<name>.yaml`) at `ref`, without exporting the tree."""
    out = _at_ref(repo, ref, "ls-tree", "--name-only", "-z", f"{ref}^{{commit}}", "models/")
    names = [Path(entry).name for entry in out.decode("utf-8").split("\x00") if entry]
    return sorted(name.removesuffix(".yaml") for name in names if name.endswith(".yaml"))
