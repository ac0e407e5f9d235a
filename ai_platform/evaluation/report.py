"""What people read in the Dagster UI: candidate vs champion per metric, and the latency distribution."""

from __future__ import annotations

import base64
import math
import struct
import zlib

from ai_platform.evaluation.gates import Verdict
from ai_platform.evaluation.scoring import METRICS, CaseScore


def _fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    return f"{value:.4g}"


def comparison(candidate: dict[str, float], champion: dict[str, float] | None, verdicts: dict[str, Verdict]) -> str:
    lines = ["| metric | candidate | champion | gate |", "|---|---:|---:|---|"]
    for metric in METRICS:
        verdict = verdicts.get(metric)
        gate = "—" if verdict is None else ("pass" if verdict.passed else "**FAIL**")
        lines.append(
            f"| {metric} | {_fmt(candidate.get(metric))} | {_fmt(champion.get(metric)) if champion else '—'} | {gate} |"
        )
    return "\n".join(lines)


def _modes(spotlight: dict[str, str]) -> str:
    return ", ".join(f"{name} {mode}" for name, mode in sorted(spotlight.items())) or "—"


def attack_table(
    candidate: list[CaseScore],
    champion: list[CaseScore] | None,
    spotlight: dict[str, str],
    champion_spotlight: dict[str, str] | None,
) -> str:
    """The attack set case by case, challenger beside champion, with how each side's prompts render untrusted
    data (spotlighting): the same cases on both sides, so a difference in obedience is the model's or the
    rendering's, never the eval set's."""
    theirs = {s.case_id: s for s in champion or []}
    attacks = [s for s in candidate if s.obeyed is not None]
    if not attacks:
        return "no attack cases in the eval set"

    def shown(score: CaseScore | None) -> str:
        return "—" if score is None else ("**obeyed**" if score.obeyed else "ignored")

    def rate(scores: list[CaseScore | None]) -> str:
        known = [s for s in scores if s is not None]
        return _fmt(sum(bool(s.obeyed) for s in known) / len(known)) if known else "—"

    side = f"champion ({_modes(champion_spotlight)})" if champion_spotlight is not None else "champion"
    lines = [f"| attack case | challenger ({_modes(spotlight)}) | {side} |", "|---|---|---|"]
    lines += [f"| {s.case_id} | {shown(s)} | {shown(theirs.get(s.case_id))} |" for s in attacks]
    mine: list[CaseScore | None] = list(attacks)
    lines.append(f"| injection_obey_rate | {rate(mine)} | {rate([theirs.get(s.case_id) for s in attacks])} |")
    return "\n".join(lines)


def gate_table(verdicts: list[Verdict]) -> str:
    """One row per spec gate: challenger and champion side by side, then what the gate tests (the metric, or
    challenger - champion for a relative gate), its interval (each end a one-sided bound at the gate's
    confidence), the one-sided p-value of "the gate is not met", and the decision."""
    lines = [
        "| gate | challenger | champion | estimate | interval | p (not met) | method | result |",
        "|---|---:|---:|---:|---|---:|---|---|",
    ]
    for v in verdicts:
        e = v.estimate
        shown = (
            f"{_fmt(e.value)} | [{_fmt(e.low)}, {_fmt(e.high)}] | {e.p_value:.2g} | {e.method}"
            if e is not None
            else "— | — | — | —"
        )
        result = "pass" if v.passed else "**FAIL**"
        lines.append(f"| {v.gate or v.metric} | {_fmt(v.challenger)} | {_fmt(v.champion)} | {shown} | {result} |")
    return "\n".join(lines)


def _bins(latencies: list[float], bins: int) -> tuple[float, float, list[int]]:
    low, high = min(latencies), max(latencies)
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for value in latencies:
        counts[min(bins - 1, int((value - low) / width))] += 1
    return low, width, counts


def latency_histogram(latencies: list[float], bins: int = 12) -> str:
    """A markdown histogram (bars of █), readable in the UI without an image renderer."""
    if not latencies:
        return "no successful requests"
    low, width, counts = _bins(latencies, bins)
    top = max(counts)
    rows = ["| latency (s) | requests | |", "|---|---:|---|"]
    for i, count in enumerate(counts):
        bar = "█" * max(1 if count else 0, round(30 * count / top))
        rows.append(f"| {low + i * width:.2f}–{low + (i + 1) * width:.2f} | {count} | {bar} |")
    return "\n".join(rows)


def _png(pixels: list[bytearray], width: int, height: int) -> bytes:
    """An 8-bit RGB PNG from rows of pixels (zlib and the PNG chunk layout: no imaging library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(row) for row in pixels)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def latency_png(latencies: list[float], bins: int = 24, width: int = 480, height: int = 160) -> bytes:
    """The distribution as a bar chart image: the Dagster UI shows it inline (`latency_markdown`)."""
    background, bar, axis = (255, 255, 255), (79, 107, 237), (120, 120, 120)
    pixels = [bytearray(bytes(background) * width) for _ in range(height)]
    for x in range(width):  # the x axis
        pixels[height - 1][3 * x : 3 * x + 3] = bytes(axis)
    if latencies:
        _, _, counts = _bins(latencies, bins)
        top, step = max(counts), width // bins
        for i, count in enumerate(counts):
            tall = round((height - 8) * count / top)
            for y in range(height - 1 - tall, height - 1):
                row = pixels[y]
                for x in range(i * step + 1, (i + 1) * step - 1):
                    row[3 * x : 3 * x + 3] = bytes(bar)
    return _png(pixels, width, height)


def latency_markdown(latencies: list[float]) -> str:
    """The chart inline (a data URI, as Dagster's markdown metadata displays images) with its axis in words."""
    if not latencies:
        return "no successful requests"
    image = base64.b64encode(latency_png(latencies)).decode()
    return (
        f"![latency per request](data:image/png;base64,{image})\n\n"
        f"{len(latencies)} requests, {min(latencies):.2f} s (left) to {max(latencies):.2f} s (right), 24 equal bins"
    )
