"""PII detection: valid examples found, near-misses not, no false positives on contracts.

Check digits in this file are computed by small reference implementations
written from the standards (benchmarks/support/pii_corpus.py), not by the module under test.
"""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ai_platform.demo import corpus
from ai_platform.detectors.pii import Finding, find_pii, pii_count
from benchmarks.support.pii_corpus import (
    PROVINCES,
    USCC_CHARS,
    USCC_TYPES,
    bban_alphabets,
    iban_countries,
    iban_with_check,
    id_check,
    luhn_digit,
    org_check,
    uscc_check,
)


def only(text: str) -> list[tuple[str, str]]:
    return [(f.kind, f.text) for f in find_pii(text)]


# ---------------------------------------------------------------- acceptance (issue 7)


def test_issue_acceptance_valid_resident_id_counts_one() -> None:
    reply = '{"risk_points": [{"point": "泄露身份证号11010519491231002X", "level": "高"}]}'
    assert pii_count(reply) == 1
    start = reply.index("1101")
    assert find_pii(reply) == [Finding("cn_resident_id", "11010519491231002X", start, start + 18)]


def test_issue_acceptance_bad_check_digit_counts_none() -> None:
    assert pii_count('{"point": "身份证号110105194912310021"}') == 0
    assert pii_count("110105194912310021") == 0


# ---------------------------------------------------------------- resident ID


@pytest.mark.parametrize(
    "text",
    ["身份证号11010519491231002X。", "ID: 11010519491231002x.", "（11010519491231002X）", "11010519491231002X"],
)
def test_resident_id_found_with_cjk_and_punctuation_around(text: str) -> None:
    assert only(text) == [("cn_resident_id", text[text.index("1101") : text.index("1101") + 18])]


@pytest.mark.parametrize(
    "text",
    [
        "11010519491231002Y",  # not a check character
        "01010519491231002X",  # region code starting with 0
        "110105194913310025",  # month 13 (check digit recomputed below would not help)
        "A11010519491231002X",  # inside a longer alnum run
        "11010519491231002X9",
        "1101051949123100",  # too short
    ],
)
def test_resident_id_near_misses(text: str) -> None:
    assert [f for f in find_pii(text) if f.kind == "cn_resident_id"] == []


def test_resident_id_birth_date_is_checked() -> None:
    future = (date.today() + timedelta(days=400)).strftime("%Y%m%d")
    for body in ("11010518991231002", "11010519490230002", f"110105{future}002"):  # 1899, Feb 30, future
        assert only(body + id_check(body)) == []
    ok = "11010520000229002"  # a leap day
    assert only(ok + id_check(ok)) == [("cn_resident_id", ok + id_check(ok))]


def test_resident_id_that_also_passes_luhn_and_a_card_prefix_is_one_id() -> None:
    # 62 (Gansu) is also the UnionPay prefix: find an ID that passes Luhn too.
    for seq in range(1000):
        body = f"62010219800101{seq:03d}"
        value = body + id_check(body)
        if value[-1] != "X" and luhn_digit(value[:-1]) == value[-1]:
            break
    else:
        pytest.fail("no Luhn-valid ID in range")
    assert only(f"号码{value}。") == [("cn_resident_id", value)]


def test_resident_id_is_not_also_a_phone() -> None:
    # "13198001010" sits inside (index 4): a mobile number pattern must not fire in an ID.
    body = "11011319800101012"
    value = body + id_check(body)
    assert [f.kind for f in find_pii(value)] == ["cn_resident_id"]
    assert find_pii("41013800138000" + "0000") == []  # 18 digits, bad birth date: nothing, not a phone


# ---------------------------------------------------------------- USCC


def test_uscc_found() -> None:
    assert only("统一社会信用代码：91350100M000100Y43，") == [("cn_uscc", "91350100M000100Y43")]


@pytest.mark.parametrize(
    "text",
    [
        "91350100M000100Y44",  # wrong check character
        "91350100M000100Y4I",  # I is not in the charset
        "91350100M000101Y43",  # one character changed
        "X91350100M000100Y43",  # inside a longer run
    ],
)
def test_uscc_near_misses(text: str) -> None:
    assert [f for f in find_pii(text) if f.kind == "cn_uscc"] == []


# ---------------------------------------------------------------- IBAN

IBANS = {
    "DE": "DE89370400440532013000",
    "GB": "GB82WEST12345698765432",
    "FR": "FR1420041010050500013M02606",
    "ES": "ES9121000418450200051332",
    "IT": "IT60X0542811101000000123456",
    "NL": "NL91ABNA0417164300",
    "BE": "BE68539007547034",
    "CH": "CH9300762011623852957",
    "AT": "AT611904300234573201",
    "PL": "PL61109010140000071219812874",
}


def spaced(iban: str) -> str:
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))


@pytest.mark.parametrize("iban", IBANS.values())
def test_iban_found_compact_and_spaced(iban: str) -> None:
    assert only(f"账户{iban}。") == [("iban", iban)]
    assert only(f"IBAN {spaced(iban)} with the bank") == [("iban", spaced(iban))]


@pytest.mark.parametrize("iban", IBANS.values())
def test_iban_bad_mod97_or_wrong_length_not_found(iban: str) -> None:
    changed = iban[:-1] + ("1" if iban[-1] != "1" else "2")
    assert [f for f in find_pii(changed) if f.kind == "iban"] == []
    longer = iban_with_check(iban[:2], iban[4:] + "0")  # right mod-97, wrong length for the country
    assert [f for f in find_pii(longer) if f.kind == "iban"] == []


def test_iban_unknown_country_falls_back_to_15_to_34() -> None:
    assert only(iban_with_check("QQ", "1234567890123")) == [("iban", iban_with_check("QQ", "1234567890123"))]
    assert only(iban_with_check("QQ", "1234567890")) == []  # 14 characters


# ---------------------------------------------------------------- credit card

CARDS = [
    "4111111111111111",  # Visa
    "5555555555554444",  # Mastercard
    "2223003122003222",  # Mastercard 2-series
    "378282246310005",  # Amex
    "6011111111111117",  # Discover
    "3530111333300000",  # JCB
    "6200000000000005",  # UnionPay
    "30569309025904",  # Diners
]


@pytest.mark.parametrize("card", CARDS)
def test_card_found(card: str) -> None:
    assert only(f"卡号{card}，") == [("credit_card", card)]


def test_card_groupings() -> None:
    assert only("card 4111 1111 1111 1111 exp 12/29") == [("credit_card", "4111 1111 1111 1111")]
    assert only("card 4111-1111-1111-1111.") == [("credit_card", "4111-1111-1111-1111")]
    assert only("amex 3782 822463 10005") == [("credit_card", "3782 822463 10005")]
    assert only("4111 1111-1111 1111") == []  # mixed separators
    assert only("41 11 11 11 11 11 11 11") == []  # not a card layout


@pytest.mark.parametrize("card", CARDS)
def test_card_luhn_failure_not_found(card: str) -> None:
    bad = card[:-1] + str((int(card[-1]) + 1) % 10)
    assert [f for f in find_pii(bad) if f.kind == "credit_card"] == []


def test_card_prefix_must_be_plausible() -> None:
    body = "999999999999999"
    assert only(body + luhn_digit(body)) == []


def test_luhn_valid_card_inside_longer_digit_string_not_found() -> None:
    assert only("12344111111111111111") == []
    assert only("41111111111111119") == []  # 17 digits, Luhn fails and no Visa length
    assert only("card 4111 1111 1111 1111 1111") == []  # continues with another group


# ---------------------------------------------------------------- email and phone


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("联系邮箱zhang.san@example.com。", "zhang.san@example.com"),
        ("mail <a.b+tag@mail.example.co.uk>", "a.b+tag@mail.example.co.uk"),
        ("QQ邮箱12345678@qq.com", "12345678@qq.com"),
    ],
)
def test_email_found(text: str, value: str) -> None:
    assert only(text) == [("email", value)]


@pytest.mark.parametrize("text", ["a..b@example.com", "user@localhost", "user@example", "a.@example.com", "@x.com"])
def test_email_near_misses(text: str) -> None:
    assert [f for f in find_pii(text) if f.kind == "email"] == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("电话13800138000。", "13800138000"),
        ("手机：138 0013 8000", "138 0013 8000"),
        ("tel 138-0013-8000.", "138-0013-8000"),
        ("+86 138 0013 8000", "+86 138 0013 8000"),
        ("008613800138000，", "008613800138000"),
        ("call +44 20 7946 0958 today", "+44 20 7946 0958"),
        ("+1 (415) 555-2671", "+1 (415) 555-2671"),
        ("+4915123456789", "+4915123456789"),
    ],
)
def test_phone_found(text: str, value: str) -> None:
    assert only(text) == [("phone", value)]


@pytest.mark.parametrize(
    "text",
    [
        "12800138000",  # second digit 2
        "138001380001",  # 12 digits
        "2138001380001",
        "0755-13800138000-1",  # inside a hyphenated run
        "+1 234",  # too few digits
        "+1 234 567 890 123 456 789",  # too many
        "订单号 9913800138000",
    ],
)
def test_phone_near_misses(text: str) -> None:
    assert [f for f in find_pii(text) if f.kind == "phone"] == []


def test_email_wins_over_the_phone_inside_it() -> None:
    assert only("13800138000@163.com") == [("email", "13800138000@163.com")]


def test_several_kinds_sorted_by_start() -> None:
    text = "甲方联系人邮箱li@corp.cn，电话13912345678，身份证11010519491231002X，账户DE89370400440532013000。"
    assert [f.kind for f in find_pii(text)] == ["email", "phone", "cn_resident_id", "iban"]
    assert all(text[f.start : f.end] == f.text for f in find_pii(text))


# ---------------------------------------------------------------- no false positives on contracts


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_demo_contracts_and_answers_have_no_pii(seed: int) -> None:
    for example in corpus.examples(seed, 200, "x"):
        assert find_pii(example.text) == [], example.text
        assert find_pii(json.dumps(example.answer, ensure_ascii=False)) == []


def test_contract_numbers_amounts_dates_and_articles_are_not_pii() -> None:
    text = (
        "合同编号HT-7870，价款300000元，于2026年1月5日前支付，"
        "依据民法典第五百七十七条；金额1500000.00元，电话区号0755。"
    )
    assert find_pii(text) == []


# ---------------------------------------------------------------- properties

FILLER = st.text(alphabet=st.sampled_from("合同甲方乙方违约金的条款，。：；（）、 abcdefXYZ-_/.,;:()[]\n"), max_size=30)
SEPARATOR = st.sampled_from(["", " ", "，", "。", "：", "号", "(", "\n"])


@st.composite
def resident_ids(draw: st.DrawFn) -> str:
    born = draw(st.dates(min_value=date(1900, 1, 1), max_value=date.today()))
    region = f"{draw(st.sampled_from(PROVINCES))}{draw(st.integers(0, 9999)):04d}"
    body = f"{region}{born:%Y%m%d}{draw(st.integers(0, 999)):03d}"
    return body + id_check(body)


@st.composite
def ussccs(draw: st.DrawFn) -> str:
    authority = draw(st.sampled_from(sorted(USCC_TYPES)))
    head = authority + draw(st.sampled_from(USCC_TYPES[authority]))
    region = f"{draw(st.sampled_from(PROVINCES))}{draw(st.integers(0, 9999)):04d}"
    org = "".join(draw(st.lists(st.sampled_from(USCC_CHARS), min_size=8, max_size=8)))
    body = head + region + org + org_check(org)
    return body + uscc_check(body)


@st.composite
def ibans(draw: st.DrawFn) -> str:
    country, structure = draw(st.sampled_from(sorted(iban_countries().items())))
    bban = "".join(draw(st.sampled_from(chars)) for chars in bban_alphabets(structure))
    value = iban_with_check(country, bban)
    return spaced(value) if draw(st.booleans()) else value


@st.composite
def cards(draw: st.DrawFn) -> str:
    prefix, length = draw(st.sampled_from([("4", 16), ("51", 16), ("37", 15), ("6011", 16), ("62", 19), ("3530", 16)]))
    body = prefix + "".join(
        draw(
            st.lists(
                st.sampled_from("0123456789"), min_size=length - len(prefix) - 1, max_size=length - len(prefix) - 1
            )
        )
    )
    value = body + luhn_digit(body)
    return " ".join(value[i : i + 4] for i in range(0, len(value), 4)) if draw(st.booleans()) else value


def embed(draw: st.DrawFn, value: str) -> tuple[str, int]:
    left = draw(FILLER) + draw(SEPARATOR)
    if left and left[-1].isascii() and left[-1].isalnum():
        left += "，"
    right = draw(SEPARATOR) + draw(FILLER)
    if right and right[0].isascii() and right[0].isalnum():
        right = "。" + right
    return left + value + right, len(left)


VALID = {"cn_resident_id": resident_ids(), "cn_uscc": ussccs(), "iban": ibans(), "credit_card": cards()}


@pytest.mark.parametrize("kind", sorted(VALID))
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_property_valid_value_in_random_text_found_exactly_once(kind: str, data: st.DataObject) -> None:
    value = data.draw(VALID[kind])
    text, start = embed(data.draw, value)
    assert find_pii(text) == [Finding(kind, value, start, start + len(value))]


@settings(max_examples=300, deadline=None)
@given(value=resident_ids(), wrong=st.sampled_from("0123456789X"))
def test_property_resident_id_with_wrong_check_digit_not_found(value: str, wrong: str) -> None:
    if wrong == value[-1]:
        return
    assert [f for f in find_pii(value[:-1] + wrong) if f.kind == "cn_resident_id"] == []


@settings(max_examples=300, deadline=None)
@given(value=ussccs(), wrong=st.sampled_from(USCC_CHARS))
def test_property_uscc_with_wrong_check_char_not_found(value: str, wrong: str) -> None:
    if wrong == value[-1]:
        return
    assert [f for f in find_pii(value[:-1] + wrong) if f.kind == "cn_uscc"] == []


@settings(max_examples=300, deadline=None)
@given(value=ibans(), position=st.integers(4, 40), digit=st.sampled_from("0123456789"))
def test_property_iban_with_one_character_changed_not_found(value: str, position: int, digit: str) -> None:
    compact = value.replace(" ", "")
    position %= len(compact)
    position = max(position, 4)
    if compact[position] == digit or not compact[position].isdigit():
        return  # mod-97 catches every digit substitution; a letter to digit one changes the numeral's length
    changed = compact[:position] + digit + compact[position + 1 :]
    assert [f for f in find_pii(changed) if f.kind == "iban"] == []


@settings(max_examples=300, deadline=None)
@given(digits=st.text(alphabet="0123456789", min_size=13, max_size=19))
def test_property_digit_strings_failing_luhn_are_not_cards(digits: str) -> None:
    total = sum((d - 9 if d > 9 else d) for d in (int(c) * (2 if i % 2 else 1) for i, c in enumerate(reversed(digits))))
    if total % 10 == 0:
        return
    assert [f for f in find_pii(digits) if f.kind == "credit_card"] == []


@settings(max_examples=200, deadline=None)
@given(value=cards(), left=st.text(alphabet="0123456789", min_size=1, max_size=4))
def test_property_card_inside_longer_digit_string_not_found(value: str, left: str) -> None:
    # The longer string may itself be a valid card by chance; the embedded one must not be found.
    compact = value.replace(" ", "")
    assert (len(left), len(left) + len(compact)) not in [(f.start, f.end) for f in find_pii(left + compact)]
    assert (0, len(compact)) not in [(f.start, f.end) for f in find_pii(compact + left)]
