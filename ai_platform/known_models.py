"""Which models a command may name: one check, so a misspelled model is an error with a did-you-mean, never
a command that "succeeds" on a model nobody has (and leaves a state file for it)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from ai_platform.artifacts import FolderStore
from ai_platform.errors import UnknownModelError
from ai_platform.platform_repo import model_names
from ai_platform.records import Pin
from ai_platform.serving.state import state_dir


def known_models(home: Path, repo: Path | None = None, ref: str = "HEAD") -> list[str]:
    """Models with a rollout state or a pinned spec in `home`, and (given `repo`) the specs at `ref`."""
    names = {path.stem for path in state_dir(home).glob("*.json")}
    names |= set(FolderStore(home).refs(Pin.stage))  # the names only: a pin of an older schema still counts
    if repo is not None and repo.exists():  # a remote's mirror not fetched yet: the home's own models count
        names |= set(model_names(repo, ref))
    return sorted(names)


def check_model(model: str, known: Iterable[str], where: str) -> None:
    """An UnknownModelError naming a close match and the known models (found in `where`) unless `model` is one."""
    names = sorted(known)
    if model in names:
        return
    close = difflib.get_close_matches(model, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listed = f"known: {', '.join(names)}" if names else "none known"
    raise UnknownModelError(f"unknown model {model!r}{hint} ({listed}, from {where})")
