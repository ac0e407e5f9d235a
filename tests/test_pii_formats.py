"""PII as real documents print it: full-width, in groups, every IBAN country; broken values are nothing.

Issue 22: an outside corpus found full-width digits, grouped resident IDs and USCCs, IBANs with
dots, dashes or irregular groups and IBANs of countries missing from our own table were missed,
and corrupted resident IDs that passed the USCC or Luhn check were reported as those kinds.
"""

from __future__ import annotations

import random
import unicodedata
from collections import Counter

import pytest

from ai_platform.demo import corpus as demo
from ai_platform.detectors.pii import Finding, find_pii, fold
from benchmarks.support.pii_corpus import (
    corpus,
    iban,
    iban_countries,
    iban_with_check,
    id_check,
    luhn_digit,
    org_check,
    uscc_check,
)


def wide(text: str) -> str:
    """ASCII letters, digits, space, hyphen and dot as their full-width forms."""
    return "".join(
        "\u3000" if c == " " else chr(ord(c) + 0xFEE0) if c.isascii() and (c.isalnum() or c in "-.") else c
        for c in text
    )


# ---------------------------------------------------------------- printed forms, spans in the text as given

PRINTED = [
    ("cn_resident_id", "110105 19491231 002X"),
    ("cn_resident_id", "1101-0519-4912-3100-2X"),
    ("cn_resident_id", "110.105.1949.1231.002X"),
    ("cn_resident_id", wide("11010519491231002X")),
    ("cn_resident_id", wide("110105 19491231 002X")),
    ("cn_uscc", "91 350100 M000100Y4 3"),
    ("cn_uscc", "9135-0100-M000-100Y-43"),
    ("cn_uscc", wide("91350100M000100Y43")),
    ("iban", "DE89.3704.0044.0532.0130.00"),
    ("iban", "DE89-3704-0044-0532-0130-00"),
    ("iban", "DE89 37040044 0532013000"),
    ("iban", "DE 89 3704 0044 0532 0130 00"),
    ("iban", wide("DE89 3704 0044 0532 0130 00")),
    ("credit_card", "4111.1111.1111.1111"),
    ("credit_card", wide("4111-1111-1111-1111")),
]


@pytest.mark.parametrize(("kind", "value"), PRINTED)
def test_printed_forms_found_with_spans_in_the_original_text(kind: str, value: str) -> None:
    for text in (f"客户号码{value}，请核对。", f"The number is {value}, please verify.", value):
        start = text.index(value)
        assert find_pii(text) == [Finding(kind, value, start, start + len(value))]


def test_fold_keeps_length_and_agrees_with_nfkc() -> None:
    text = "ＩＢＡＮ：ＤＥ８９\u3000３７０４－００４４．０５３２\u00a0０１３０\u2013００。"
    assert fold(text) == "IBAN：DE89 3704-0044.0532 0130-00。"  # punctuation a number does not use stays
    for before, after in zip(text, fold(text), strict=True):
        assert after in (before, unicodedata.normalize("NFKC", before)) or (before == "\u2013" and after == "-")


@pytest.mark.parametrize(("country", "structure"), sorted(iban_countries().items()))
def test_iban_of_every_registered_country_found_in_any_grouping(country: str, structure: str) -> None:
    value = iban(random.Random(country), country, structure)
    fours = [value[i : i + 4] for i in range(0, len(value), 4)]
    for shown in (value, " ".join(fours), ".".join(fours), "-".join(fours), wide(" ".join(fours))):
        text = f"收款账户{shown}。"
        assert find_pii(text) == [Finding("iban", shown, 4, 4 + len(shown))], shown


def test_iban_in_the_wrong_format_for_its_country_is_not_found() -> None:
    assert find_pii(iban_with_check("BE", "00000000000A")) == []  # Belgium: 12 digits, no letter
    assert find_pii(iban_with_check("DE", "370400440532013000")) != []


# ---------------------------------------------------------------- kinds told apart by structure


def test_resident_id_with_a_broken_check_that_passes_luhn_is_not_a_card() -> None:
    # 62 (Gansu) is also the UnionPay prefix: an ID-shaped number, wrong ID check digit, right Luhn digit.
    for seq in range(100, 1000):
        body = f"62010219800101{seq:03d}"
        if luhn_digit(body) != id_check(body):
            value = body + luhn_digit(body)
            break
    assert find_pii(f"身份证号{value}。") == []
    assert find_pii(f"card {value[:4]} {value[4:8]} {value[8:12]} {value[12:16]} {value[16:]}") == []


def test_resident_id_with_a_broken_check_that_passes_the_uscc_check_is_not_a_uscc() -> None:
    # 11 (Beijing) reads as authority 1, type 1; region 130119 and an organization code that checks.
    value = ""
    for seq in range(1000):
        body = f"11130119800101{seq:03d}"
        org = body[8:17]
        final = uscc_check(body)
        if org_check(org[:8]) == org[8] and final in "0123456789X" and final != id_check(body):
            value = body + final
            break
    assert value, "no such number in range"
    assert find_pii(f"号码{value}。") == []


def test_resident_id_whose_county_code_is_younger_than_its_holder_is_found() -> None:
    # 440304 (Futian) dates from 1983; stdnum.cn.ric.is_valid rejects it for anyone born earlier.
    body = "44030419600101001"
    assert [f.kind for f in find_pii(body + id_check(body))] == ["cn_resident_id"]


def test_eighteen_digits_after_a_province_code_with_a_birth_century_are_not_a_card() -> None:
    # A resident ID mistyped in its date (Feb 30) that passes Luhn with a UnionPay prefix.
    body = "62010219800230001"
    assert find_pii(f"号码{body + luhn_digit(body)}。") == []


# ---------------------------------------------------------------- ordinary numbers stay ordinary


@pytest.mark.parametrize("seed", [0, 1])
def test_full_width_contracts_have_no_pii(seed: int) -> None:
    for example in demo.examples(seed, 100, "x"):
        assert find_pii(wide(example.text)) == [], example.text


@pytest.mark.parametrize(
    "text",
    [
        "合同编号 HT-2026-0105-0001-0002，金额 1 500 000.00 元，日期 2026-01-05。",
        "Amounts: 4500 8000 12000 300 5000 8000 12000 300.",  # a list of amounts is not a card
        "序号 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
        "版本 1.2.3.4.5.6.7.8.9.10.11.12",
        "电话 0755-8888-6666-1234-5678-9012",
        "金额4111111111111111.00元",  # a decimal amount, not a card
    ],
)
def test_grouped_ordinary_numbers_are_not_pii(text: str) -> None:
    assert find_pii(text) == []


# ---------------------------------------------------------------- the corpus


def test_generated_corpus_recall_and_no_broken_value_flagged() -> None:
    cases = corpus(seed=22)
    missed: Counter[tuple[str, str]] = Counter()
    flagged = []
    for case in cases:
        findings = find_pii(case.text)
        if case.valid and Finding(case.kind, case.text[case.start : case.end], case.start, case.end) not in findings:
            missed[(case.kind, case.style)] += 1
        if not case.valid and findings:
            flagged.append((case.text, findings))
    valid = sum(case.valid for case in cases)
    assert 1 - sum(missed.values()) / valid >= 0.995, missed.most_common()
    assert flagged == []
