"""Calibration data: the platform repo's `calibration/*.jsonl`, checked row by row.

Each line is one JSON object with an optional `id` and exactly one of:
  `text`      a domain text (calibrated and scored on every token), or
  `messages`  an OpenAI-style chat (`system`/`user`/`assistant`, string contents),
              rendered with the model's chat template; when it ends with an
              assistant turn, perplexity is scored on that reply only: that is
              what the model is asked to produce.
The held-out split is chosen by each sample's content hash, not its position,
so reordering or appending rows never moves a sample between the two sets.
Standard library only: the platform and the quantize workload both load it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ai_platform.errors import CalibrationError

ROLES = ("system", "user", "assistant")
MAX_PROBLEMS = 20


@dataclass(frozen=True)
class Sample:
    id: str
    text: str | None = None
    messages: tuple[dict[str, str], ...] | None = None

    @property
    def key(self) -> str:
        body = self.text if self.text is not None else json.dumps(self.messages, ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "messages": list(self.messages) if self.messages else None}


def _row_problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return f"expected a JSON object, got {type(row).__name__}"
    unknown = sorted(row.keys() - {"id", "text", "messages"})
    if unknown:
        return f"unknown field {unknown[0]!r} (allowed: id, text, messages)"
    if ("text" in row) == ("messages" in row):
        return "needs exactly one of 'text' or 'messages'"
    if "id" in row and not isinstance(row["id"], str):
        return "'id' must be a string"
    if "text" in row:
        return None if isinstance(row["text"], str) and row["text"].strip() else "'text' must be a non-empty string"
    messages = row["messages"]
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            return f"messages[{i}] must be an object with exactly 'role' and 'content'"
        if message["role"] not in ROLES:
            return f"messages[{i}].role must be one of {', '.join(ROLES)} (got {message['role']!r})"
        if not isinstance(message["content"], str):
            return f"messages[{i}].content must be a string"
    return None


def load(paths: list[Path]) -> list[Sample]:
    """Every row of every file, or one CalibrationError listing the first problems found."""
    samples: list[Sample] = []
    problems: list[str] = []
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise CalibrationError(f"{path}: cannot read: {exc}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                problems.append(f"{path}:{number}: not JSON: {exc}")
                continue
            problem = _row_problem(row)
            if problem:
                problems.append(f"{path}:{number}: {problem}")
                continue
            messages = tuple(row["messages"]) if "messages" in row else None
            samples.append(Sample(row.get("id", f"{Path(path).name}:{number}"), row.get("text"), messages))
    if problems:
        more = f"\n  ... and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        raise CalibrationError("bad calibration data:\n  " + "\n  ".join(problems[:MAX_PROBLEMS]) + more)
    if not samples:
        raise CalibrationError(f"no calibration samples in {', '.join(map(str, paths)) or 'no files'}")
    return samples


def split(samples: list[Sample], holdout_fraction: float, max_samples: int) -> tuple[list[Sample], list[Sample]]:
    """(calibration, held out): the held-out share by content hash, calibration capped at max_samples."""
    ordered = sorted(samples, key=lambda s: s.key)
    n_holdout = max(1, math.ceil(len(ordered) * holdout_fraction))
    holdout, rest = ordered[:n_holdout], ordered[n_holdout:]
    if not rest:
        raise CalibrationError(f"{len(samples)} samples leave none to calibrate on after holding out {n_holdout}")
    return rest[:max_samples], holdout


def files(folder: Path) -> list[Path]:
    found = sorted(Path(folder).glob("*.jsonl"))
    if not found:
        raise CalibrationError(f"{folder}: no calibration/*.jsonl files")
    return found
