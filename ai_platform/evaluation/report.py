"""What people read in the Dagster UI: candidate vs champion per metric, and the latency distribution."""

from __future__ import annotations

import math

from ai_platform.evaluation.gates import Verdict
from ai_platform.evaluation.scoring import METRICS


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


def latency_svg(latencies: list[float], bins: int = 24, width: int = 480, height: int = 180) -> str:
    """The same distribution as an SVG file, for reports outside Dagster."""
    if not latencies:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}"></svg>'
    low, step, counts = _bins(latencies, bins)
    top, bar_w, pad = max(counts), (width - 40) / bins, 20
    rects = []
    for i, count in enumerate(counts):
        h = (height - 2 * pad) * count / top
        rects.append(
            f'<rect x="{30 + i * bar_w:.1f}" y="{height - pad - h:.1f}" width="{bar_w - 1:.1f}" '
            f'height="{h:.1f}" fill="#4f6bed"><title>{count}</title></rect>'
        )
    labels = (
        f'<text x="30" y="{height - 4}" font-size="10">{low:.2f}s</text>'
        f'<text x="{width - 60}" y="{height - 4}" font-size="10">{low + bins * step:.2f}s</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
        f'<text x="30" y="12" font-size="11">latency per request (n={len(latencies)})</text>'
        + "".join(rects)
        + labels
        + "</svg>"
    )
