"""seq-rep-n (Welleck et al. 2019): worked examples by hand, CJK characters, English words, mixed text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ai_platform.detectors.text import seq_rep_n, units


def test_units_split_cjk_per_character_and_other_text_per_word() -> None:
    assert units("第1条 风险，risk-level 高。Hello  world") == [
        "第",
        "1",
        "条",
        "风",
        "险",
        "，",
        "risk-level",
        "高",
        "。",
        "Hello",
        "world",
    ]
    assert units("全角\u3000空格（括号）") == ["全", "角", "空", "格", "（", "括", "号", "）"]


def test_repeated_chinese_phrase_by_hand() -> None:
    # 10 characters give 7 4-grams: 风险风险 (x4) and 险风险风 (x3): 2 unique.
    assert seq_rep_n("风险风险风险风险风险") == pytest.approx(1 - 2 / 7)


def test_english_words_by_hand() -> None:
    # bigrams: (a,b) (b,a) (a,b) (b,a) (a,b): 5, 2 unique.
    assert seq_rep_n("a b a b a b", n=2) == pytest.approx(1 - 2 / 5)
    assert seq_rep_n("the cat sat on the mat") == 0.0  # 3 distinct 4-grams
    assert seq_rep_n("the the the the the the") == pytest.approx(1 - 1 / 3)


def test_mixed_cjk_and_english_by_hand() -> None:
    # units: 付 款 risk 付 款 risk 付 款 -> 6 trigrams, 3 unique.
    assert seq_rep_n("付款risk付款 risk 付款", n=3) == pytest.approx(1 - 3 / 6)


def test_fewer_units_than_n_is_zero() -> None:
    assert seq_rep_n("") == 0.0
    assert seq_rep_n("风险高") == 0.0
    assert seq_rep_n("one two three") == 0.0
    assert seq_rep_n("风险高", n=3) == 0.0  # exactly one n-gram: nothing repeats


def test_normal_text_scores_low_and_a_loop_high() -> None:
    normal = "甲方应于验收合格后30日内支付合同价款300000元。乙方对产品质量问题承担保修责任，保修期为2年。"
    assert seq_rep_n(normal) < 0.1
    loop = "The Buyer shall pay. " * 20
    assert seq_rep_n(loop) > 0.8
    assert seq_rep_n("违约金过高" * 30) > 0.9


def test_n_must_be_positive() -> None:
    with pytest.raises(ValueError):
        seq_rep_n("abc", n=0)


@given(st.text(max_size=300), st.integers(1, 6))
def test_property_in_unit_interval(text: str, n: int) -> None:
    assert 0.0 <= seq_rep_n(text, n) < 1.0
