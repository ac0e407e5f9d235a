"""Label intake: a reviewer's label, checked as a label file's row would be, appended to the inbox."""

from __future__ import annotations

import fcntl
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ai_platform.feedback.checks import check_label
from ai_platform.feedback.formats import FIELDS


def accept_label(label: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The row to append, or the reason the label is refused (the same reasons a file's rows get)."""
    if isinstance(label, dict) and label.get("labeled_at") is None:
        label = {**label, "labeled_at": datetime.now(UTC).isoformat()}  # labeled now, unless it says when
    problem = check_label(label)
    if problem:
        return None, problem
    return {k: label.get(k) for k in FIELDS}, None


def append_label(inbox: Path, row: dict[str, Any]) -> None:
    """One JSONL file per hour, appended under a lock; ingestion is idempotent, so re-reading it is safe."""
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / f"gateway-{datetime.now(UTC):%Y%m%d%H}.jsonl"
    with path.open("a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
