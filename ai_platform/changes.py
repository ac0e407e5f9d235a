"""What each new commit on the platform repo's branch feeds: which models, which of their stages.

The git sensor asks this once per tick, in a bounded number of git calls (never
a walk of the whole history): where the branch is now (a remote is fetched into
a mirror under the platform home first), which commits are new since the last
one processed (oldest first, at most `limit`, on the branch's first-parent
line, so a merge counts as one commit with everything it brought in), and
which stages each commit's changed paths feed, per model. A stage is named by
the asset it produces; the sensor adds everything downstream of it.

A changed spec (`models/<name>.yaml`) or `platform.yaml` is compared field by field with
the same file at the commit's first parent, and each changed field goes to the stages
its section feeds (MODEL_SPEC_FEEDS, PLATFORM_FEEDS: the one table, shown in
docs/stages.md): a server setting re-runs the canary and the rollout, never AWQ; a guard
re-runs the rollout alone, which re-publishes the gateway's state without restarting vLLM.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ai_platform.config import LocalSource, ModelSpec, PlatformConfig, parse
from ai_platform.errors import ConfigError, PlatformRepoError
from ai_platform.platform_repo import Commit, config_at, git, resolve
from ai_platform.repo_yaml import parse_yaml

# The stages a change can start from (every later stage of the model follows it).
WHOLE_CHAIN = "model_spec"
RAW_WEIGHTS = "raw_weights"
VERIFIED_WEIGHTS = "verified_weights"
QUANTIZED_WEIGHTS = "quantized_weights"
MODEL_IMAGE = "model_image"
COMPILED_PROMPTS = "compiled_prompts"
PROMPT_BUNDLE = "prompt_bundle"
CANARY_EVAL = "canary_eval"  # a new release: a canary on a server with the new settings, then a colour flip
# The rollout alone: with the image, bundle and server settings unchanged it re-publishes the gateway's state
# (guards, admission, trust threshold, ...) and reloads the gateway; vLLM is not restarted (rollout/local.py,
# rollout/kubernetes.py: an unchanged release).
GATEWAY_STATE = "deployment"
# Not stages of the ship chain (the sensor turns them into runs):
SPEC_ONLY = "model_spec:only"  # model_spec alone: the spec validated, pinned and shown (its metadata)
LEARNING = "learn_from_feedback"  # the learning job: trust_model, then trust_champion

# What each section of a model spec and of platform.yaml feeds: the stages a change to it starts from (a ship-chain
# stage with everything after it). A changed field goes to the longest entry that is its dotted path or a prefix of
# it; a field no entry holds re-runs the whole chain, with a warning naming it. An empty entry: metadata only.
FEEDS = frozenset[str]
MODEL_SPEC_FEEDS: dict[str, FEEDS] = {
    "name": frozenset({WHOLE_CHAIN}),
    "description": frozenset(),  # descriptive: in model_spec's metadata, nowhere in the image
    "owner": frozenset(),
    "source": frozenset({RAW_WEIGHTS}),
    "verification": frozenset({VERIFIED_WEIGHTS}),  # the same raw files, verified against the new trust
    "quantization": frozenset({QUANTIZED_WEIGHTS}),
    "image": frozenset({MODEL_IMAGE}),
    "prompts": frozenset({COMPILED_PROMPTS}),
    "canary": frozenset({CANARY_EVAL}),
    "serving": frozenset({CANARY_EVAL}),  # the server's settings are part of the release (serving/release.py)
    "serving.admission": frozenset({GATEWAY_STATE}),  # the gateway applies it; not part of the release
    "rollout": frozenset({GATEWAY_STATE}),  # drain and rollback window: read by the rollout
    "guards": frozenset({GATEWAY_STATE}),
    "trust": frozenset({LEARNING}),
}
PLATFORM_FEEDS: dict[str, FEEDS] = {
    "name": frozenset(),  # a label (`ai-platform config show`)
    "storage": frozenset({WHOLE_CHAIN}),  # where every record and artifact lives
    "execution": frozenset({WHOLE_CHAIN}),  # where every step runs
    "registry": frozenset({MODEL_IMAGE, PROMPT_BUNDLE}),  # where the image and the bundle are pushed
    "kubernetes": frozenset({CANARY_EVAL}),  # where and on what the servers run: a new release
    "kubernetes.gpu.quantize_image": frozenset({QUANTIZED_WEIGHTS}),  # what AWQ runs in
    "feedback": frozenset({GATEWAY_STATE, LEARNING}),  # the gateway's threshold, inbox, corpus; promotion
    "gateway": frozenset({GATEWAY_STATE}),
}

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
    warnings: tuple[str, ...] = ()  # changed fields no entry of the feeds tables maps (whole chain)


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
    platforms = PlatformReader(repo)
    for i, (commit, paths) in enumerate(changes):
        # Consecutive commits of a first-parent list differ by exactly their changed paths: the specs need reading
        # again only where models/ changed, and the commit before is the first parent (the base for the first).
        parents = [base] if i == 0 else [changes[i - 1][0].sha]
        if base != cursor and i == 0:
            parents.append(str(cursor))  # what is live came from the cursor: its fields count as changed too
        before = current if i > 0 and current is not None else None
        if current is None or any(p.startswith("models/") for p in paths):
            current = specs.at(commit.sha)
        replaces = str(cursor) if base != cursor and i == 0 else None
        fed: dict[str, frozenset[str]] = {}
        warnings: list[str] = []
        for parent in parents:
            old = before if before is not None else specs.at(parent)
            platform = (platforms.at(parent), platforms.at(commit.sha)) if "platform.yaml" in paths else None
            found = affected(paths, current, old, platform)
            fed = {m: fed.get(m, frozenset()) | found.stages.get(m, frozenset()) for m in {*fed, *found.stages}}
            warnings += [w for w in found.warnings if w not in warnings]
        plans.append(CommitPlan(commit, paths, fed, replaces, tuple(warnings)))
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


class PlatformReader:
    """platform.yaml at a commit, validated; None where it is missing or invalid (that commit re-runs everything)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._read: dict[str, PlatformConfig | None] = {}

    def at(self, sha: str) -> PlatformConfig | None:
        if sha not in self._read:
            try:
                self._read[sha] = config_at(self.repo, sha)
            except (ConfigError, PlatformRepoError):
                self._read[sha] = None
        return self._read[sha]


@dataclass(frozen=True)
class Affected:
    stages: dict[str, frozenset[str]]  # model -> the stages the commit feeds directly
    warnings: tuple[str, ...] = ()  # changed fields no table entry maps (each planned the whole chain)


def affected(
    paths: Iterable[str],
    specs: dict[str, ModelSpec | ConfigError],
    before: Mapping[str, ModelSpec | ConfigError] | None = None,
    platform: tuple[PlatformConfig | None, PlatformConfig | None] | None = None,
    *,
    model_feeds: Mapping[str, FEEDS] = MODEL_SPEC_FEEDS,
    platform_feeds: Mapping[str, FEEDS] = PLATFORM_FEEDS,
) -> Affected:
    """Per model, the stages that `paths` (changed in one commit) feed directly. `specs` are the specs at the commit;
    `before` at its first parent, and `platform` platform.yaml at both (parent, commit) when it changed: changed
    files are compared field by field. Without them a changed file re-runs the whole chain."""
    paths = tuple(paths)
    warnings: list[str] = []
    shared: set[str] = set()  # what a platform.yaml change feeds, for every model
    if "platform.yaml" in paths:
        old_platform, new_platform = platform or (None, None)
        if old_platform is None or new_platform is None:  # unreadable on either side: everything may differ
            shared = {WHOLE_CHAIN}
        else:
            fields = changed_fields(old_platform, new_platform)
            shared = set(fed_by(fields, platform_feeds, "platform.yaml", warnings))
            shared.add(SPEC_ONLY)  # every model is validated again against the new platform.yaml
    result = {}
    for name, spec in specs.items():
        stages = set(shared)
        if f"models/{name}.yaml" in paths:
            old = (before or {}).get(name)
            if isinstance(spec, ConfigError) or not isinstance(old, ModelSpec):  # new, or invalid on either side
                stages.add(WHOLE_CHAIN)
            else:
                stages.add(SPEC_ONLY)
                stages |= fed_by(changed_fields(old, spec), model_feeds, f"models/{name}.yaml", warnings)
        if isinstance(spec, ModelSpec):
            stages |= {stage for path in paths for root, stage in watched(spec) if _under(path, root)}
        # an invalid spec's other paths: what it names is unknown; the commit that repairs it re-runs the whole chain
        if stages:
            result[name] = frozenset(stages)
    return Affected(result, tuple(warnings))


def changed_fields(before: BaseModel, after: BaseModel) -> list[str]:
    """The dotted paths of the leaves (a list is one leaf) that differ between two parsed files."""
    old, new = _leaves(before.model_dump(mode="json")), _leaves(after.model_dump(mode="json"))
    missing = object()
    return sorted(key for key in old.keys() | new.keys() if old.get(key, missing) != new.get(key, missing))


def _leaves(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        found: dict[str, Any] = {}
        for key, value in data.items():
            found.update(_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
        return found
    return {prefix: data}


def fed_by(fields: Iterable[str], table: Mapping[str, FEEDS], file: str, warnings: list[str]) -> FEEDS:
    """What the changed `fields` of `file` feed, by `table`; an unmapped field feeds the whole chain (and a warning)."""
    fed: set[str] = set()
    for field in fields:
        entries = [key for key in table if field == key or field.startswith(key + ".")]
        if entries:
            fed |= table[max(entries, key=len)]
            continue
        fed.add(WHOLE_CHAIN)
        warning = f"{file}: no entry of the change table maps the field {field!r}; the whole chain re-runs"
        if warning not in warnings:
            warnings.append(warning)
    return frozenset(fed)


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
