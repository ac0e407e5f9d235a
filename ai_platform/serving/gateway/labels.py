"""Label intake: a reviewer's label, checked as a label file's row would be, appended to the inbox."""

from __future__ import annotations

import fcntl
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ai_platform.feedback.checks import check_label
from ai_platform.feedback.formats import FIELDS

MAX_SKEW = timedelta(minutes=5)  # a reviewer's clock may run this far ahead of the gateway's


def accept_label(label: Any, now: datetime | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The row to append, or the reason the label is refused: the reasons a file's rows get, and a
    `labeled_at` later than now (plus a small skew), which would let a label choose the trust model's holdout."""
    now = now or datetime.now(UTC)
    if isinstance(label, dict) and label.get("labeled_at") is None:
        label = {**label, "labeled_at": now.isoformat()}  # labeled now, unless it says when
    problem, ahead = check_label(label, latest=now + MAX_SKEW)
    if problem:
        return None, problem
    if ahead:
        return None, f"labeled_at is in the future (more than {MAX_SKEW.seconds // 60} minutes ahead of the gateway)"
    return {k: label.get(k) for k in FIELDS}, None


def append_label(inbox: Path, row: dict[str, Any]) -> None:
    """One JSONL file per hour, appended under a lock; ingestion is idempotent, so re-reading it is safe."""
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / f"gateway-{datetime.now(UTC):%Y%m%d%H}.jsonl"
    with path.open("a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row, ensure_ascii=False) + "\n")
