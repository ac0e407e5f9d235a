"""Calibration files: every bad row named by file and line, and a held-out split by content."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ai_platform.errors import CalibrationError
from ai_platform.quantize import calibration
from ai_platform.quantize.calibration import Sample


def write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("{not json", "not JSON"),
        ([1, 2], "expected a JSON object"),
        ({"txt": "x"}, "unknown field 'txt'"),
        ({"text": "a", "messages": []}, "exactly one of"),
        ({}, "exactly one of"),
        ({"text": "  "}, "non-empty string"),
        ({"id": 3, "text": "x"}, "'id' must be a string"),
        ({"messages": []}, "non-empty array"),
        ({"messages": [{"role": "bot", "content": "x"}]}, "messages[0].role must be one of"),
        ({"messages": [{"role": "user"}]}, "exactly 'role' and 'content'"),
        ({"messages": [{"role": "user", "content": 1}]}, "messages[0].content must be a string"),
    ],
)
def test_each_bad_row_is_named_by_file_and_line(tmp_path: Path, row: object, problem: str) -> None:
    path = write(tmp_path / "c.jsonl", [{"text": "good"}, row])
    with pytest.raises(CalibrationError) as info:
        calibration.load([path])
    assert f"{path}:2: " in str(info.value) and problem in str(info.value)


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", [{"x": 1}] * 30)
    with pytest.raises(CalibrationError, match="and 10 more"):
        calibration.load([path])


def test_split_is_by_content_not_position(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "text": f"合同第{i}条"} for i in range(40)]
    shuffled = random.Random(7).sample(rows, len(rows))
    a = calibration.split(calibration.load([write(tmp_path / "a.jsonl", rows)]), 0.25, 64)
    b = calibration.split(calibration.load([write(tmp_path / "b.jsonl", shuffled)]), 0.25, 64)
    assert [s.id for s in a[1]] == [s.id for s in b[1]] and len(a[1]) == 10
    assert {s.id for s in a[0]} == {s.id for s in b[0]} and not {s.id for s in a[0]} & {s.id for s in a[1]}


def test_too_few_samples_and_no_files(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="none to calibrate on"):
        calibration.split([Sample("only", text="x")], 0.5, 8)
    with pytest.raises(CalibrationError, match="no calibration"):
        calibration.files(tmp_path)


def test_demo_calibration_is_chats_with_replies(demo_repo: Path) -> None:
    samples = calibration.load(calibration.files(demo_repo / "calibration"))
    assert len(samples) == 96 and all(s.messages and s.messages[-1]["role"] == "assistant" for s in samples)
