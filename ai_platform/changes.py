"""What each new commit on the platform repo's branch feeds: which models, which of their stages.

The git sensor asks this once per tick, in a bounded number of git calls (never
a walk of the whole history): where the branch is now (a remote is fetched into
a mirror under the platform home first), which commits are new since the last
one processed (oldest first, at most `limit`, on the branch's first-parent
line, so a merge counts as one commit with everything it brought in), and
which stages each commit's changed paths feed, per model. A stage is named by
the asset it produces; the sensor adds everything downstream of it.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ai_platform.config import LocalSource, ModelSpec, parse
from ai_platform.errors import ConfigError, PlatformRepoError
from ai_platform.platform_repo import Commit, git, resolve
from ai_platform.repo_yaml import parse_yaml

# The stages a change can start from (every later stage of the model follows it).
WHOLE_CHAIN = "model_spec"
RAW_WEIGHTS = "raw_weights"
VERIFIED_WEIGHTS = "verified_weights"
QUANTIZED_WEIGHTS = "quantized_weights"
COMPILED_PROMPTS = "compiled_prompts"
CANARY_EVAL = "canary_eval"

# The run tag naming the commit a run was planned for: every stage of that run reads it.
COMMIT_TAG = "ai_platform/commit"
FETCH_TIMEOUT_S = 20.0  # a tick has 60 s in all (Dagster's sensor timeout); planning needs the rest
POLL_S = 30.0  # a remote with no webhook (or a lost one) is fetched this often; a marked push at once
FETCHED = "ai-platform-fetch-started"  # in a mirror: its mtime is when the last good fetch began
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/:]+@[^/:]+:")  # a URL, or scp-like user@host:path
_BATCH_ENV = {"GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o ConnectTimeout=10"}  # never wait for a password


def is_remote(source: str) -> bool:
    return bool(_REMOTE.match(source))


def shown(source: str) -> str:
    """`source` fit for a log line: credentials in a URL are masked."""
    return re.sub(r"(://)[^/@]*@", r"\1***@", source)


def local_repo(source: str, home: Path) -> Path:
    """Where git reads `source`: the folder itself, or the bare mirror a remote is fetched into."""
    if not is_remote(source):
        return Path(source)
    return Path(home) / "mirrors" / f"{hashlib.sha256(source.encode()).hexdigest()[:16]}.git"


def sync(source: str, home: Path, branch: str, timeout_s: float = FETCH_TIMEOUT_S) -> Path:
    """Bring the mirror of a remote `source` up to date with `branch`; a local folder is read as it is."""
    repo = local_repo(source, home)
    if not is_remote(source):
        return repo
    if not (repo / "HEAD").is_file():
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "--quiet", "--bare")
    # `+`: a force-push upstream must reach the mirror too, where the planner sees the rewrite.
    refspec = f"+refs/heads/{branch}:refs/heads/{branch}"
    started = time.time()
    try:
        git(repo, "fetch", "--quiet", "--no-tags", source, refspec, timeout=timeout_s, env=_BATCH_ENV)
    except PlatformRepoError as exc:
        # git's own words on one line, with any credentials it echoed masked
        reason = " ".join(str(exc).split("git fetch: ", 1)[-1].split())
        raise PlatformRepoError(f"fetching {branch} failed: {shown(reason)}") from None
    stamp = repo / FETCHED
    stamp.touch()
    os.utime(stamp, (started, started))
    return repo


def fetch_due(source: str, home: Path, poll_s: float = POLL_S, now: float | None = None) -> bool:
    """Does the sensor's tick fetch `source` now? A folder is read as it is (always: reading it costs one `git
    rev-parse`); a remote when it was never fetched, when a push was marked in `home` since the last fetch began
    (`webhooks.marker`), or when `poll_s` has passed since then, so a lost webhook costs one poll, never a commit."""
    from ai_platform.webhooks.marker import pushed_at

    if not is_remote(source):
        return True
    try:
        fetched = (local_repo(source, home) / FETCHED).stat().st_mtime
    except FileNotFoundError:
        return True
    pushed = pushed_at(home)
    if pushed is not None and pushed >= fetched:
        return True
    return (time.time() if now is None else now) - fetched >= poll_s


@dataclass(frozen=True)
class CommitPlan:
    commit: Commit
    paths: tuple[str, ...]  # changed against the first parent ("everything" when no base was known)
    stages: dict[str, frozenset[str]]  # model -> the stages its changed paths feed directly
    # The cursor, on the first commit planned after a rewrite (or with no usable cursor): that run
    # also re-runs what the abandoned commits changed, so it is a different run from the commit's own.
    replaces: str | None = None


@dataclass(frozen=True)
class Plan:
    head: Commit
    commits: tuple[CommitPlan, ...]  # oldest first; empty when the branch has not moved
    models: tuple[str, ...]  # the model specs at the last planned commit (the head when nothing moved)
    remaining: int  # new commits beyond `limit`, left for the next tick
    note: str = ""  # why the plan does not start at the cursor (first tick, rewritten history)

    @property
    def last(self) -> str:
        return self.commits[-1].commit.sha if self.commits else self.head.sha


def plan(repo: Path, branch: str, cursor: str | None, limit: int) -> Plan:
    """The commits on `branch` after `cursor` (at most `limit`) and, per commit, what they feed."""
    head = resolve(repo, branch)
    specs = SpecReader(repo)
    if cursor == head.sha:
        return Plan(head, (), (), 0)
    base, note = _base(repo, cursor, head.sha)
    if base is None:  # nothing to diff against: every model's whole chain at the head
        at_head = specs.at(head.sha)
        everything = CommitPlan(head, ("*",), {name: frozenset({WHOLE_CHAIN}) for name in at_head}, cursor)
        return Plan(head, (everything,), tuple(sorted(at_head)), 0, note)
    shas = git(repo, "rev-list", "--first-parent", "--reverse", f"{base}..{head.sha}").decode().split()
    batch = shas[:limit]
    changes = changed_paths(repo, batch)
    if base != cursor:
        # What the abandoned commits changed is live but no longer on the branch: the first
        # commit planned re-runs those paths too, so the pipeline converges on the new history.
        undone = tuple(
            p
            for p in git(repo, "diff", "--name-only", "--no-renames", "-z", base, str(cursor))
            .decode("utf-8")
            .split("\x00")
            if p
        )
        if changes:
            changes[0] = (changes[0][0], tuple(sorted({*changes[0][1], *undone})))
        elif undone:  # the branch was reset to an ancestor of the cursor
            changes = [(head, undone)]
    plans: list[CommitPlan] = []
    current: dict[str, ModelSpec | ConfigError] | None = None
    for i, (commit, paths) in enumerate(changes):
        # Consecutive commits of a first-parent list differ by exactly their changed paths:
        # the specs need reading again only where models/ changed.
        if current is None or any(p.startswith("models/") for p in paths):
            current = specs.at(commit.sha)
        replaces = str(cursor) if base != cursor and i == 0 else None
        plans.append(CommitPlan(commit, paths, affected(paths, current), replaces))
    if current is None:
        current = specs.at(head.sha)
    return Plan(head, tuple(plans), tuple(sorted(current)), len(shas) - len(batch), note)


def _base(repo: Path, cursor: str | None, head: str) -> tuple[str | None, str]:
    """Where planning starts: the cursor, or (rewritten history) its merge base with the head."""
    if not cursor:
        return None, f"first tick: every model's whole chain at {head[:12]}"
    if git(repo, "cat-file", "-t", cursor, ok=(0, 1, 128)).strip() != b"commit":
        return None, (
            f"the cursor {cursor[:12]} is not in the repository (history rewritten and pruned?):"
            f" every model's whole chain at {head[:12]}"
        )
    base = git(repo, "merge-base", cursor, head, ok=(0, 1)).decode().strip()
    if not base:
        return None, (
            f"the branch was rewritten with no history in common with {cursor[:12]}:"
            f" every model's whole chain at {head[:12]}"
        )
    if base != cursor:
        return base, (
            f"history rewritten (force-push?): {cursor[:12]} is not an ancestor of {head[:12]};"
            f" replanned from their merge base {base[:12]}, with what the abandoned commits"
            " changed re-run at the first new one"
        )
    return base, ""


def changed_paths(repo: Path, shas: list[str]) -> list[tuple[Commit, tuple[str, ...]]]:
    """Each commit with the paths it changed against its first parent, in one `git log` call."""
    if not shas:
        return []
    out = git(
        repo,
        "log",
        "--stdin",
        "--no-walk=unsorted",
        "--diff-merges=first-parent",
        "--no-renames",
        "--name-only",
        "-z",
        "--format=%x1e%H%x00%an <%ae>%x00%ct%x00%s",
        input="\n".join(shas).encode() + b"\n",
    )
    result = []
    for record in out.decode("utf-8", "replace").split("\x1e")[1:]:
        sha, author, timestamp, subject, *rest = record.split("\x00")
        paths = tuple(p.lstrip("\n") for p in rest if p.strip("\n"))
        result.append((Commit(sha, author, int(timestamp), subject), paths))
    if [c.sha for c, _ in result] != shas:
        raise PlatformRepoError(f"{repo}: git log listed other commits than asked for")
    return result


class SpecReader:
    """The model specs at a commit, straight from git objects; each blob parsed once."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._parsed: dict[str, ModelSpec | ConfigError] = {}

    def at(self, sha: str) -> dict[str, ModelSpec | ConfigError]:
        specs: dict[str, ModelSpec | ConfigError] = {}
        for entry in git(self.repo, "ls-tree", "-z", sha, "models/").decode("utf-8").split("\x00"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            _, kind, blob = meta.split()
            if kind == "blob" and path.endswith(".yaml"):
                if blob not in self._parsed:
                    self._parsed[blob] = self._parse(blob, path)
                specs[posixpath.basename(path).removesuffix(".yaml")] = self._parsed[blob]
        return specs

    def _parse(self, blob: str, path: str) -> ModelSpec | ConfigError:
        # An invalid spec is a value, not a failure: model_spec reports it, with every detail, when it runs.
        try:
            data = parse_yaml(git(self.repo, "cat-file", "blob", blob), path)  # aliases, repeats, depth refused
            return parse(ModelSpec, data, Path(path))
        except ConfigError as exc:
            return exc


def affected(paths: Iterable[str], specs: dict[str, ModelSpec | ConfigError]) -> dict[str, frozenset[str]]:
    """Per model, the stages that `paths` (changed in one commit) feed directly."""
    paths = tuple(paths)
    if "platform.yaml" in paths:  # storage, registry, where steps run: everything may differ
        return {name: frozenset({WHOLE_CHAIN}) for name in specs}
    result = {}
    for name, spec in specs.items():
        if f"models/{name}.yaml" in paths:
            stages = {WHOLE_CHAIN}
        elif isinstance(spec, ConfigError):
            # What the spec names is unknown; the commit that repairs it re-runs the whole chain anyway.
            stages = set()
        else:
            stages = {stage for path in paths for root, stage in watched(spec) if _under(path, root)}
        if stages:
            result[name] = frozenset(stages)
    return result


def watched(spec: ModelSpec) -> list[tuple[str, str]]:
    """The platform-repo paths a model reads besides its spec, each with the first stage that reads it."""
    pairs = [(f"prompts/{name}.prompt", COMPILED_PROMPTS) for name in spec.prompts]
    pairs += [(path, CANARY_EVAL) for path in spec.canary.evals]
    if spec.canary.injection_model:
        pairs.append((spec.canary.injection_model, CANARY_EVAL))
    pairs.append((spec.quantization.calibration.path, QUANTIZED_WEIGHTS))
    verification = spec.verification
    signature = verification.signature
    trusted = [
        verification.manifest,
        verification.reference_manifest,
        signature.path if signature else None,
        signature.public_key if signature else None,
    ]
    pairs += [(path, VERIFIED_WEIGHTS) for path in trusted if path]
    if isinstance(spec.source, LocalSource):  # a hub source changes only through its spec (revision)
        pairs.append((spec.source.path, RAW_WEIGHTS))
    return pairs


def _under(path: str, root: str) -> bool:
    """Is repo path `path` the file or inside the folder `root`? Paths outside the repo never are."""
    root = posixpath.normpath(root)
    if root.startswith(("/", "../")) or root in ("..", "."):
        return False
    return path == root or path.startswith(root + "/")
