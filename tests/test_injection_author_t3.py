"""Author t3's training material (ai_platform/demo/injection_author_t3.py): its layout, labels, spans, determinism."""

from __future__ import annotations

from collections import Counter

import pytest

from ai_platform.demo import injection_author_t3 as t3


@pytest.fixture(scope="module")
def rows() -> list[t3.Sample]:
    return t3.samples()


def test_layout_half_benign_attacks_spread_over_kinds_and_languages(rows: list[t3.Sample]) -> None:
    assert len(rows) == 4000
    counts = Counter((row.kind, row.language) for row in rows)
    assert counts[("benign", "en")] == counts[("benign", "zh")] == 1000
    for kind in ("hijack", "leak", "jailbreak"):
        assert counts[(kind, "en")] == counts[(kind, "zh")]
        assert 330 <= counts[(kind, "en")] <= 335
    assert set(counts) == {(k, lang) for k in ("benign", "hijack", "leak", "jailbreak") for lang in ("en", "zh")}


def test_labels_follow_kinds(rows: list[t3.Sample]) -> None:
    for row in rows:
        assert row.label == (0 if row.kind == "benign" else 1)
        assert row.text.strip()


def test_hidden_attacks_have_spans_inside_their_document(rows: list[t3.Sample]) -> None:
    for row in rows:
        if row.kind in ("hijack", "leak"):
            assert row.span is not None
            start, end = row.span
            assert 0 <= start < end <= len(row.text)
            assert row.text[start:end].strip()
            assert len(row.text) > end - start  # there is a document around it
        else:
            assert row.span is None


def test_chinese_rows_are_chinese(rows: list[t3.Sample]) -> None:
    for row in rows:
        if row.language == "zh":
            assert any("\u4e00" <= ch <= "\u9fff" for ch in row.text), row.text[:80]


def test_many_distinct_samples_and_some_short_attacks(rows: list[t3.Sample]) -> None:
    attacks = [row for row in rows if row.label == 1]
    assert len({row.text for row in attacks}) > 0.97 * len(attacks)
    assert len({row.text for row in rows if row.label == 0}) > 0.9 * 2000
    spans = [row.text[row.span[0] : row.span[1]] for row in attacks if row.span is not None]
    assert any(len(s.encode()) < 45 for s in spans)
    assert any(len(row.text) > 600 for row in rows if row.kind == "jailbreak")


def test_deterministic_for_a_seed() -> None:
    assert t3.samples(200) == t3.samples(200)
    assert t3.samples(200, seed=1) == t3.samples(200, seed=1)
    assert t3.samples(200, seed=1) != t3.samples(200)
    assert t3.SEED == 7303
