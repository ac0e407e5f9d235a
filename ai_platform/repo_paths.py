"""Paths the platform repo names stay in the platform repo.

A model spec or platform.yaml names files by path: eval sets, calibration data, manifests, the signature and
its key, the retrieval corpus, the local model folder. One commit to the repo must not make the pipeline read
any other file of the host, so each path is resolved (symlinks followed, `..` applied) and must land inside
the repo snapshot: an absolute path, a `..` that climbs out, or a symlink in the repo that points out is a
ConfigError naming the file and field.

A model folder may live outside the repo (a big local checkpoint) only under a root the operator allows in
$AI_PLATFORM_LOCAL_SOURCES (folders separated by `:`). That list is read from the environment of the process
that runs the pipeline, never from the repo: platform.yaml is one of the repo's own files, so an allow-list
there could be widened by the very commit it is meant to constrain.
"""

from __future__ import annotations

import os
from pathlib import Path

from ai_platform.errors import ConfigError

LOCAL_SOURCES_ENV = "AI_PLATFORM_LOCAL_SOURCES"
INSIDE = "name a file inside the repo (a commit must not make the pipeline read other files of the host)"


def local_source_roots() -> tuple[Path, ...]:
    """The folders the operator allows model sources in, from $AI_PLATFORM_LOCAL_SOURCES, resolved."""
    roots = []
    for entry in os.environ.get(LOCAL_SOURCES_ENV, "").split(os.pathsep):
        if not entry.strip():
            continue
        if not Path(entry).is_absolute():
            raise ConfigError(f"${LOCAL_SOURCES_ENV}: {entry!r} is not an absolute path (folders separated by ':')")
        roots.append(Path(entry).resolve())
    return tuple(roots)


def _within(path: Path, base: Path) -> bool:
    return path == base or path.is_relative_to(base)


def outside(root: Path, relative: str) -> str | None:
    """Why `relative` under `root` leads outside it (None: it stays inside), symlinks followed."""
    base = Path(root).resolve()
    path = (base / relative).resolve()
    if _within(path, base):
        return None
    if Path(relative).is_absolute():
        how = "an absolute path"
    elif ".." in Path(relative).parts:
        how = f"'..' leads to {path}"
    else:
        how = f"a symlink in the repo leads to {path}"
    return f"{relative!r} is outside the platform repo ({how})"


def repo_file(root: Path, relative: str, field: str = "") -> Path:
    """`relative` in the repo at `root`; a ConfigError where it leads outside."""
    why = outside(root, relative)
    if why:
        raise ConfigError(f"{field + ': ' if field else ''}{why}; {INSIDE}")
    return Path(root) / relative


def model_folder(root: Path, relative: str, roots: tuple[Path, ...], field: str = "source.path") -> Path:
    """A model folder: inside the repo, or inside one of the operator's `roots` (resolved)."""
    if outside(root, relative) is None:
        return Path(root) / relative
    path = (Path(root).resolve() / relative).resolve()
    if any(_within(path, allowed) for allowed in roots):
        return path
    allowed = ", ".join(map(str, roots)) or f"none: ${LOCAL_SOURCES_ENV} is not set"
    raise ConfigError(
        f"{field}: {relative!r} is outside the platform repo and under no folder the operator allows for model"
        f" sources ({allowed}); commit the model into the repo, or set {LOCAL_SOURCES_ENV}=FOLDER[:FOLDER…] in"
        " the environment that runs the pipeline (platform.yaml, being in the repo, cannot widen it)"
    )
