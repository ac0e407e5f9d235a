"""The marker a verified push leaves in the pipeline's home, and the git sensor's question: is a fetch due?

The marker is one small file, rewritten by each push (`mark`); its modification time is what the sensor
compares with the start of its last fetch of the mirror (`changes.fetch_due`). The start, not the end: a push
that lands while a fetch runs may have missed it, so it is fetched again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ai_platform.artifacts import atomic_write

if TYPE_CHECKING:
    from ai_platform.webhooks.forges import Push

FOLDER = "webhooks"
PUSHED = "pushed"


def folder(home: Path) -> Path:
    return Path(home) / FOLDER


def mark(home: Path, push: Push | None = None, source: str = "webhook") -> None:
    """Tell the sensor a push happened (a verified webhook, or a local git hook: `push` None)."""
    what = {"source": source, "at": time.time()}
    if push is not None:
        what |= {"forge": push.forge, "delivery": push.delivery, "ref": push.ref, "after": push.after}
    atomic_write(folder(home) / PUSHED, json.dumps(what).encode())


def pushed_at(home: Path) -> float | None:
    """When the last push was marked (seconds since the epoch), or None."""
    try:
        return (folder(home) / PUSHED).stat().st_mtime
    except FileNotFoundError:
        return None
