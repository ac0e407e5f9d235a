"""PII as it is printed outside China (issue 32): phones of every region, every card scheme, IBANs in national groups.

An outside suite found foreign phone numbers mostly missed (US 5%, JP 0%), JCB and 12-digit Maestro cards
missed, EAN-13 codes reported as cards and IBANs in their national grouping missed. The corpus is our own
(benchmarks/support/pii_corpus.py: libphonenumber's example numbers in every format it prints, cards per
scheme range with a Luhn digit, IBANs per registry country); its held-out split is read by the benchmark.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from pydantic import ValidationError

from ai_platform.config import Guards
from ai_platform.detectors.pii import find_pii
from benchmarks.support.pii_corpus import LOCALES, benign_numbers, locale_corpus, luhn_digit


def kinds(text: str, regions: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    found = find_pii(text) if regions is None else find_pii(text, phone_regions=regions)
    return [(f.kind, f.text) for f in found]


# ---------------------------------------------------------------- phones


@pytest.mark.parametrize(
    "number",
    [
        "(292)261-9295",
        "+1-594-710-6181x1784",
        "(0116) 496 0990",
        "03 82 32 89 50",
        "13-0937-6933",
        "+44 20 7946 0958",
        "+49 30 901820",
        "030 901820",
        "+33 1 42 68 53 00",
        "03-3224-9999",
        "+81 3-3224-9999",
        "212.555.0123",
        "010-6552 9988",
    ],
)
def test_phones_as_printed_outside_china_are_found(number: str) -> None:
    for text in (f"Call {number} today.", f"请致电{number}。", number):
        assert kinds(text) == [("phone", number)], text


def test_national_formats_follow_the_spec_regions() -> None:
    assert kinds("Tel. 212.555.0123.", ("FR",)) == []
    assert kinds("Tel. 212.555.0123.", ("US",)) == [("phone", "212.555.0123")]
    assert kinds("Tel. +33 1 42 68 53 00.", ("CN",)) == [("phone", "+33 1 42 68 53 00")]  # international: every region


@pytest.mark.parametrize(
    "text",
    [
        "Signed on 2024-03-15 in Berlin.",
        "Invoice total: 1,234,567.89 USD",
        "Betrag: 1.234.567,89 EUR",
        "ISBN 978-3-16-148410-0",
        "Order 4829103746 shipped.",
        "Version 10.4.2.1133 released.",
        "Server at 192.168.100.200 port 8080.",
        "日期：2024年03月15日，金额：￥12,345,678.00",
    ],
)
def test_numbers_that_are_not_phones_are_not(text: str) -> None:
    assert find_pii(text) == []


def test_guards_phone_regions_default_and_validated() -> None:
    assert {"CN", "US", "GB", "DE", "FR", "JP"} <= set(Guards().phone_regions)
    assert Guards(phone_regions=["it", "ES"]).phone_regions == ("IT", "ES")
    for bad in (["XX"], ["USA"], [], ["001"]):
        with pytest.raises(ValidationError):
            Guards(phone_regions=bad)


# ---------------------------------------------------------------- cards


def luhn(body: str) -> str:
    return body + luhn_digit(body)


@pytest.mark.parametrize(
    "body",
    [
        "353011133330000",  # JCB, 16 digits
        "358900000000000",
        "50180000000",  # Maestro, 12 digits
        "67590000000",
        "220012345678901",  # Mir
        "621234567890123",  # UnionPay
        "222100000000000",  # Mastercard 2-series
        "271999999999999",
        "6521234567890123",  # RuPay, 17 digits: Discover/RuPay 65 to 19
        "3612345678901",  # Diners, 14 digits
    ],
)
def test_every_scheme_is_a_card(body: str) -> None:
    number = luhn(body)
    assert kinds(f"Card {number}.") == [("credit_card", number)]


@pytest.mark.parametrize("body", ["400000000000", "978316148410", "501800000000", "622000000000"])
def test_a_13_digit_number_is_never_a_card(body: str) -> None:
    assert find_pii(f"EAN {luhn(body)}") == []


def test_no_card_outside_the_iin_table() -> None:
    for body in ("990000000000000", "100000000000000", "720000000000000"):
        assert find_pii(f"Card {luhn(body)}.") == []


# ---------------------------------------------------------------- IBANs


@pytest.mark.parametrize(
    "iban",
    [
        "ES10 0075 0080 11 0600658108",
        "NO 19 4920 06 96270",
        "NO07.8380.08.06006",
        "FR76-3000-6000-0112-3456-7890-189",
        "GB82 WEST 1234 5698 7654 32",
        "DE89 370400440532013000",
    ],
)
def test_ibans_in_national_groupings_are_found(iban: str) -> None:
    for text in (f"IBAN {iban}, BIC XYZ.", f"收款账户{iban}。"):
        assert kinds(text) == [("iban", iban)]


def test_a_broken_iban_in_national_grouping_is_nothing() -> None:
    assert find_pii("IBAN ES11 0075 0080 11 0600658108.") == []
    assert find_pii("IBAN NO 18 4920 06 96270.") == []


# ---------------------------------------------------------------- the corpus (training split; held-out: the benchmark)


def test_corpus_recall_per_locale_and_kind_is_99_percent() -> None:
    found: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for case in locale_corpus(seed=7, split="train"):
        got = {(f.kind, f.start, f.end) for f in find_pii(case.text)}
        found[case.locale, case.kind].append((case.kind, case.start, case.end) in got)
    assert {locale for locale, _ in found} >= set(LOCALES)
    missed = {key: f"{sum(v)}/{len(v)}" for key, v in found.items() if sum(v) < 0.99 * len(v)}
    assert missed == {}


def test_benign_numbers_flagged_at_most_one_in_a_thousand() -> None:
    texts = benign_numbers(seed=7, split="train")
    flagged = [t for t in texts if find_pii(t)]
    assert len(flagged) <= len(texts) / 1000, flagged[:20]


# ---------------------------------------------------------------- layouts the first held-out split found missed


@pytest.mark.parametrize(
    "number",
    [
        "0044 121 496 0990",  # `00` + country code: the international prefix most of the world dials
        "0044-20-7946-0958",
        "001 212 555 0123",
        "001-398-699-7973",
        "0049 30 901820",
        "0033 1 42 68 53 00",
        "0081 3-3224-9999",
        "0086 10 6552 9988",
    ],
)
def test_the_00_international_prefix_is_a_phone_in_every_region(number: str) -> None:
    for text in (f"Call {number} today.", f"请致电{number}。", f"({number})"):
        assert kinds(text) == [("phone", number)], text
    assert kinds(f"Call {number}.", ("US",)) == [("phone", number)]  # like `+CC`: not only the regions whose IDD is 00


@pytest.mark.parametrize(
    "number",
    [
        "212-555-0123 ext. 45",
        "212-555-0123 ext 45",
        "212-555-0123 Ext. 45",
        "212-555-0123 extension 45",
        "212-555-0123 #45",
        "(020) 7946 0958 ext. 12",
        "010-6552 9988 分机 123",
        "010-6552 9988分机123",
        "010-6552 9988转123",
        "03-3224-9999 内線 123",
        "030 901820 Durchwahl 12",
        "01 42 68 53 00 poste 123",
    ],
)
def test_extensions_in_every_language_belong_to_the_phone(number: str) -> None:
    for text in (f"Call {number} today.", f"电话：{number}。", f"({number})"):
        assert kinds(text) == [("phone", number)], text


@pytest.mark.parametrize("number", ["+1 (398) 699-7973", "+1 (212) 555-0123", "+1 (283) 555-0199"])
def test_nanp_with_the_area_code_in_parentheses_inside_parentheses(number: str) -> None:
    for text in (f"(phone: {number})", f"[{number}]", f"Call {number}."):
        assert kinds(text) == [("phone", number)], text


@pytest.mark.parametrize(
    "text",
    [
        "注文番号 0104-691517-245",  # JP dials 010 abroad: not a Swedish number
        "Order 0581-335432-165 shipped.",
        "Ref. 0110-443322-10",
        "Bestellnummer 0104-691517-245",
    ],
)
def test_order_numbers_in_hyphenated_groups_are_not_phones(text: str) -> None:
    assert find_pii(text) == []


def test_an_18_digit_unionpay_card_is_not_a_resident_id_without_a_birth_year() -> None:
    number = luhn("62240720438722878")  # 62 + 2407 + 2043: no birth year, so no mistyped ID
    assert kinds(f"Card {number}.") == [("credit_card", number)]
    assert find_pii(f"Card {luhn('62240719800101123')}.") == []  # born 1980: a mistyped resident ID
    assert find_pii("Barcode 004972068365") == []  # `00` in one run: a UPC as often as +49 72068365


# ---------------------------------------------------------------- layouts the second held-out split found missed


@pytest.mark.parametrize(
    "number",
    [
        "(+86) 190 9222 8690",  # the country code in parentheses: the parentheses belong to the span
        "(+86) 138 7640 8797",
        "(+44) 20 7946 0958",
        "1 (632) 808-6331",  # NANP trunk prefix `1` before the area code in parentheses
        "1 (212) 555-0123",
        "0337-09-0902",  # JP 4-2-4: a 4-digit area code (libphonenumber's `(\d{3})(\d{2})(\d{4})` with 0)
        "0452-56-3637",
        "080-0519-3317",  # JP mobile 3-4-4, in a range not assigned
        "0049 (0)752 034569",  # `00` + country code + `(0)`: the trunk prefix not dialled from abroad
        "0044 (0)67 9762 0452",
        "0033 (0)8 84 19 27 06",
    ],
)
def test_second_heldout_layouts_are_phones(number: str) -> None:
    for text in (f"Call {number} today.", f"请致电{number}，谢谢。", f"担当：山田（電話番号：{number}）"):
        assert kinds(text) == [("phone", number)], text


@pytest.mark.parametrize(
    "text",
    [
        "Kassenbon 0754/885/43104 11.08.1992 10:22",  # two slashes: a receipt number
        "会员卡号 0517 1985 6240",  # 4-4-4 with a leading 0: a member card, though a valid CN landline
        "pages 0441-7327",  # 8 digits with the trunk prefix: a range, not a phone
        "Kenvil, NJ 07266-2022",  # a ZIP+4 code, though `07266 2022` is a valid German number
        "Konto 94028689 0934921154",  # the tail of a longer number, though `0934921154` would be a phone
    ],
)
def test_second_heldout_benign_numbers_are_not_phones(text: str) -> None:
    assert find_pii(text) == []


def test_an_18_digit_card_shaped_as_a_uscc_is_a_card() -> None:
    # 3541639894887884 62 passes Luhn and is a JCB; as a USCC its authority, type, region and organization code
    # fit, its final check does not. Reported as the card, in its groups or compact (a leak withheld, rather than a
    # card let through as a mistyped USCC).
    assert kinds("银行卡号：3541-6398-9488-7884-62。") == [("credit_card", "3541-6398-9488-7884-62")]
    assert kinds("Card 354163989488788462.") == [("credit_card", "354163989488788462")]
    assert kinds("Karte 358120902244182626.") == [("credit_card", "358120902244182626")]
    # a USCC with a wrong check character that fails Luhn (or has letters) is still nothing
    assert find_pii("统一社会信用代码：354163989488788463。") == []


def test_the_heldout_generator_spans_the_number_and_keeps_the_00_it_writes() -> None:
    # its first version put `tel:` inside the span and rewrote a layout's `0044 (0)` to `0644 (0)`
    cases = [c for c in locale_corpus(seed=7, split="heldout", rounds=3) if c.kind == "phone"]
    tel = [c for c in cases if c.style == "tel: E164"]
    assert tel and all(c.text[c.start - 4 : c.start] == "tel:" and c.text[c.start] == "+" for c in tel)
    idd = [c for c in cases if c.style.startswith("random 00")]
    assert idd and all(c.text[c.start : c.end].startswith(c.style.split()[1][:4]) for c in idd)


@pytest.mark.parametrize(
    "text",
    ["Phone: {}", "My phone number is {}.", "电话：{}", "Tel. {}", "call {} now", "Téléphone : {}", "電話番号 {}"],
)
@pytest.mark.parametrize("number", ["2922619295", "5947106181"])  # NANP in one run, as US fake-identity data prints it
def test_one_run_of_digits_called_a_phone_is_one(text: str, number: str) -> None:
    assert kinds(text.format(number)) == [("phone", number)]


@pytest.mark.parametrize(
    "text", ["Order 4829103746 shipped.", "订单号2922619295", "Kundennummer 5947106181, Tel. folgt"]
)
def test_one_run_of_digits_not_called_a_phone_is_not(text: str) -> None:
    assert find_pii(text) == []
