"""Held-out family E keeps the layout and the content its baseline was measured on (data/injection/README.md).

No sample is printed or compared by text here: the split is only ever read through its aggregate rates.
"""

from __future__ import annotations

from collections import Counter

from split_digest import digest

from ai_platform.demo import injection_family_e

# sha256 of the 2,000 samples at SEED, as measured for the baseline in data/injection/README.md: a change to the
# generator changes the split, and its figures are then no longer comparable with that baseline.
BASELINE_DIGEST = "92d2bf9593e9de2a6fc6cf3d62beefece7c95e77e593294ccbbd6a496784ac02"


def test_family_e_has_the_documented_layout() -> None:
    samples = injection_family_e.samples()
    counts = Counter((s.kind, s.language) for s in samples)
    for language in ("en", "zh"):
        assert counts["benign", language] == 500
        assert counts["hijack", language] == counts["leak", language] == 167
        assert counts["jailbreak", language] == 166
    for s in samples:
        assert s.label == (s.kind != "benign")
        if s.kind in ("hijack", "leak"):
            assert s.span is not None and 0 <= s.span[0] < s.span[1] <= len(s.text)
    assert len(injection_family_e.samples(120)) == 120


def test_family_e_is_the_split_its_baseline_was_measured_on() -> None:
    assert digest(injection_family_e.samples()) == digest(injection_family_e.samples())
    assert digest(injection_family_e.samples()) == BASELINE_DIGEST
