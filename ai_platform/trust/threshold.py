"""The review threshold: chosen on the holdout for the spec's review load, with a bound on the misses it leaves.

Rule (`choose`): among the thresholds t that flag a holdout reply when its score is under t, take the
highest whose flagged share is at most `trust.review_budget`. The score is the model's raw score, before its
calibration map (`TrustModel.review_threshold`: the map's plateaus tie too many replies to cut). Then report,
among the replies it leaves unflagged, the miss rate (a label other than `correct`) and its upper
Clopper-Pearson bound at `trust.miss_confidence`.

Why the bound holds: the threshold is picked from the scores alone, never from the labels (it is an order
statistic of the holdout scores). Given it, the replies scored above it are independent draws from the
replies scored above it, so their misses are a binomial count of the miss rate among unflagged replies, and
Clopper-Pearson bounds it exactly (split conformal's argument: the holdout is labels the model never learned
from). Choosing the threshold by its labels, e.g. the one with the fewest misses left, would break that: the
bound would then need a correction for the choice. The guarantee is for replies like the holdout's: the
newest labelled generations, one example per label (two reviewers of one reply count twice).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ai_platform.stats import clopper_pearson

CURVE_POINTS = 41  # the trade-off curve kept with the model: at most this many points


@dataclass(frozen=True)
class ReviewThreshold:
    threshold: float  # a reply scored under it is flagged needs_review
    budget: float  # the spec's trust.review_budget
    confidence: float  # the spec's trust.miss_confidence
    replies: int  # holdout labels it was chosen on
    flagged: int
    misses_left: int  # unflagged replies whose label is not `correct`
    miss_rate: float  # misses_left / unflagged (0 when nothing is left unflagged)
    miss_bound: float  # upper Clopper-Pearson bound at `confidence` on the miss rate among unflagged replies
    curve: list[list[float]]  # [threshold, share flagged, miss rate among unflagged], flagged share increasing

    @property
    def flagged_share(self) -> float:
        return self.flagged / self.replies

    def metrics(self) -> dict[str, Any]:
        """What the model's metrics keep (the threshold itself is the model's `review_threshold`)."""
        return {k: v for k, v in asdict(self).items() if k != "threshold"} | {"flagged_share": self.flagged_share}


def choose(scores: Sequence[float], correct: Sequence[bool], budget: float, confidence: float) -> ReviewThreshold:
    """The highest threshold flagging at most `budget` of these replies (`scores` under it), and the bound."""
    if not scores or len(scores) != len(correct):
        raise ValueError("choose: needs one label per score, and at least one")
    pairs = sorted(zip(scores, correct, strict=True))
    n = len(pairs)
    points = []  # per candidate threshold: (threshold, flagged, misses left)
    misses = sum(not c for _, c in pairs)
    i = 0
    while i < n:  # each distinct score s: flag every reply scored under s
        s = pairs[i][0]
        points.append((s, i, misses))
        while i < n and pairs[i][0] == s:
            misses -= not pairs[i][1]
            i += 1
    points.append((math.nextafter(pairs[-1][0], math.inf), n, 0))  # flag every reply
    threshold, flagged, left = max(p for p in points if p[1] <= budget * n + 1e-9)
    unflagged = n - flagged
    bound = clopper_pearson(left, unflagged, confidence)[1] if unflagged else 0.0
    step = max(1, math.ceil(len(points) / CURVE_POINTS))
    kept = sorted({*points[::step], points[-1], (threshold, flagged, left)})
    curve = [[t, f / n, m / (n - f) if n - f else 0.0] for t, f, m in kept]
    return ReviewThreshold(
        threshold, budget, confidence, n, flagged, left, left / unflagged if unflagged else 0.0, bound, curve
    )


def curve_markdown(review: dict[str, Any], threshold: float) -> str:
    """The trade-off curve as Markdown for Dagster's UI: an SVG plot (an image, as Dagster suggests for plots;
    no plotting library needed) with the chosen point, then the same figures as a table."""
    curve = review["curve"]
    w, h, pad = 480, 300, 40

    def xy(share: float, rate: float, top: float) -> tuple[float, float]:
        return pad + share * (w - 2 * pad), h - pad - rate / top * (h - 2 * pad)

    top = max([r for _, _, r in curve] + [review["miss_bound"], 0.01]) * 1.1
    line = " ".join("{:.1f},{:.1f}".format(*xy(f, r, top)) for _, f, r in curve)
    cx, cy = xy(review["flagged_share"], review["miss_rate"], top)
    _, by = xy(review["flagged_share"], review["miss_bound"], top)
    bx, _ = xy(review["budget"], 0.0, top)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">'
        f'<rect width="{w}" height="{h}" fill="white"/>'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>'
        f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle">share flagged (0 to 1)</text>'
        f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">'
        f"miss rate among unflagged (0 to {top:.2f})</text>"
        f'<line x1="{bx:.1f}" y1="{pad}" x2="{bx:.1f}" y2="{h - pad}" stroke="gray" stroke-dasharray="4"/>'
        f'<polyline points="{line}" fill="none" stroke="steelblue" stroke-width="2"/>'
        f'<line x1="{cx:.1f}" y1="{cy:.1f}" x2="{cx:.1f}" y2="{by:.1f}" stroke="crimson"/>'
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="crimson"/>'
        f'<text x="{cx + 6:.1f}" y="{by:.1f}">threshold {threshold:.3f}: bound {review["miss_bound"]:.3f}</text>'
        "</svg>"
    )
    image = base64.b64encode(svg.encode()).decode()
    rows = "\n".join(f"| {t:.3f} | {f:.1%} | {r:.1%} | {'chosen' if t == threshold else ''} |" for t, f, r in curve)
    return (
        f"![trade-off curve](data:image/svg+xml;base64,{image})\n\n"
        f"Chosen: threshold {threshold:.3f} flags {review['flagged_share']:.1%} of {review['replies']} holdout"
        f" labels (budget {review['budget']:.0%}); misses left {review['miss_rate']:.1%}, at most"
        f" {review['miss_bound']:.1%} at {review['confidence']:.0%} confidence.\n\n"
        "| threshold (raw score) | flagged | miss rate among unflagged | |\n|---:|---:|---:|---|\n" + rows
    )
