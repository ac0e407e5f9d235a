"""Layout of author t2's training material (informal and online registers): counts, labels, spans, determinism."""

from __future__ import annotations

from collections import Counter

from ai_platform.demo.injection_author_t2 import SEED, samples

KINDS = ("hijack", "leak", "jailbreak")


def test_counts_per_kind_and_language() -> None:
    rows = samples(1200)
    assert len(rows) == 1200
    counts = Counter((row.kind, row.language) for row in rows)
    assert counts[("benign", "en")] == counts[("benign", "zh")] == 300
    for kind in KINDS:
        assert counts[(kind, "en")] == counts[(kind, "zh")] == 100
    assert set(counts) == {(kind, lang) for kind in (*KINDS, "benign") for lang in ("en", "zh")}


def test_labels_follow_kinds() -> None:
    for row in samples(800):
        assert row.label == (0 if row.kind == "benign" else 1)
        assert row.text.strip()


def test_spans_inside_the_text_for_hidden_attacks() -> None:
    for row in samples(1200):
        if row.kind in ("hijack", "leak"):
            assert row.span is not None
            start, end = row.span
            assert 0 <= start < end <= len(row.text)
            assert row.text[start:end].strip()
            assert len(row.text) > end - start  # hidden in a document, not alone
        else:
            assert row.span is None


def test_deterministic_and_seeded() -> None:
    assert samples(300) == samples(300, SEED)
    assert samples(300, 1) == samples(300, 1)
    assert samples(300, 1) != samples(300, 2)


def test_composed_not_a_handful_of_sentences() -> None:
    rows = samples(4000)
    assert len({row.text for row in rows}) > 3800
    for kind in KINDS:
        for lang in ("en", "zh"):
            attacks = {
                row.text[row.span[0] : row.span[1]] if row.span else row.text
                for row in rows
                if row.kind == kind and row.language == lang
            }
            assert len(attacks) > 250, (kind, lang)
