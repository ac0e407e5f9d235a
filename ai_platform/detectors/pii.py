"""PII in model replies: every kind is validated, not only pattern-matched.

Identifiers (CN resident ID, USCC, IBAN, card) are found as documents print them.
The text is first folded one character for one: what NFKC turns into a single ASCII
letter, digit or separator (full-width forms, ideographic and no-break spaces), and
dashes to `-`; so spans stay offsets into the text as given. A number may be printed
in groups joined by one kind of separator (space, hyphen, dot). Each run of groups is
tried window by window: whole groups, not joined to a neighbouring group that holds a
digit (nothing inside a longer number matches), inner groups of 3+ characters. Cards
keep the card layouts (4-4-4-4(-k), 4-6-5, 4-6-4): listed amounts in irregular groups
can pass Luhn and a prefix.

A window is validated by structure, then checksum, with python-stdnum (pure Python;
~5 ms of the gateway's import, ~30 ms on a bare interpreter, which stdnum.util's
stdlib imports take):
- resident ID: province code, birth date 1900..today, check digit (stdnum.cn.ric).
  Not ric.is_valid: it rejects a county code younger than the holder (440304 for
  anyone born before 1983), but codes are assigned at registration;
- USCC: registering authority and entity type (GB 32100 appendix A), region code,
  the organization code's own check (GB 11714), final check (stdnum.cn.uscc).
  Not uscc.is_valid: it rejects the authorities A, N and Y;
- IBAN: the country's length and BBAN format from stdnum's registry, mod 97
  (stdnum.iban, without the national checks that four countries have); a country
  the registry lacks needs 15-34 characters, its code and check digits in one group;
- card: issuer prefix (IIN) and length, Luhn (stdnum.luhn); never 18 digits that
  start with a province code and a birth century (a mistyped resident ID).
A window shaped as one kind whose check fails is that kind, broken: nothing is
reported for it, nor for any other kind inside it (a resident ID with a wrong check
digit that passes Luhn or the USCC check is not a card or a USCC).

Boundaries use explicit ASCII classes instead of `\\b`: in Python `\\w` matches
Chinese characters, so `\\b` would reject `身份证号11010519491231002X。`.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

import phonenumbers
from phonenumbers import Leniency, PhoneNumber
from stdnum import iban as std_iban
from stdnum import luhn, numdb
from stdnum.cn import ric, uscc
from stdnum.exceptions import ValidationError
from stdnum.iso7064 import mod_97_10


@dataclass(frozen=True)
class Finding:
    kind: str
    text: str
    start: int
    end: int


# When two kinds overlap the longer span wins; on equal spans the more specific
# kind (earlier here) wins.
_PRIORITY = ("cn_resident_id", "cn_uscc", "iban", "credit_card", "email", "phone")


# ---------------------------------------------------------------- folding


def _fold_table() -> dict[int, str]:
    """What NFKC folds to one ASCII letter, digit, or character a number, phone or address uses."""
    blocks = [0xA0, *range(0x2000, 0x2060), 0x3000, *range(0xFE50, 0xFE70), *range(0xFF01, 0xFF5F)]
    table = {}
    for cp in blocks:
        folded = unicodedata.normalize("NFKC", chr(cp))
        if len(folded) == 1 and folded.isascii() and (folded.isalnum() or folded in " -.@+_%"):
            table[cp] = folded
    for cp in (0x2010, 0x2011, 0x2012, 0x2013, 0x2014, 0x2212):  # dashes NFKC leaves alone
        table[cp] = "-"
    return table


_FOLD = _fold_table()
_FOLDABLE = re.compile("[" + "".join(re.escape(chr(cp)) for cp in sorted(_FOLD)) + "]+")


def fold(text: str) -> str:
    """`text` with full-width forms, odd spaces and dashes as ASCII; same length, same offsets."""
    return _FOLDABLE.sub(lambda m: m.group().translate(_FOLD), text)


# ---------------------------------------------------------------- email

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@"
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63})(?![A-Za-z0-9-])"
)


def _emails(text: str) -> Iterator[tuple[int, int]]:
    if "@" not in text:
        return  # the pattern is costly to try at every letter
    for m in _EMAIL.finditer(text):
        local = m.group(1)
        if local.endswith(".") or ".." in local or m.end() - m.start() > 254:
            continue
        yield m.start(), m.end()


# ---------------------------------------------------------------- phone

# CN mobile: 1[3-9] + 9 digits, optional +86/0086, separators as 3-4-4. A digit
# joined by `-`/`.` on either side means it is part of a longer number. The leading
# lookahead only lets the engine skip other characters fast.
_CN_MOBILE = re.compile(
    r"(?=[+01])(?<![A-Za-z0-9+])(?<![0-9][-.])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}"
    r"(?![A-Za-z0-9])(?![-.][0-9])"
)
# International, E.164-like: `+country` and 8-15 digits in total, in groups.
_INTL_PHONE = re.compile(
    r"(?<![A-Za-z0-9+])\+[1-9][0-9]{0,2}(?:[ .-]?(?:\([0-9]{1,5}\)|[0-9]{1,5})){1,6}(?![A-Za-z0-9])(?![ .-]?[0-9])"
)


# Every other phone: libphonenumber's metadata (`phonenumbers`). International numbers (`+CC`) of every
# region; national formats of the regions the model spec lists (`guards.phone_regions`). A cheap digit-run
# prefilter finds where a number could be (7+ digits in phone punctuation); only those short windows go to
# PhoneNumberMatcher, at leniency POSSIBLE, and each match is kept by these rules:
# - valid for its region (libphonenumber's number ranges), printed in groups, or with `+`, or with the
#   trunk prefix 0 (a bare run of digits with neither is an order number as often as a phone);
# - or only of a possible length, when its layout is a phone's: `+CC` with the digits in groups, or a
#   national number in 3+ groups or with its area code in parentheses, whose groups after the first have
#   3+ digits unless it starts with the trunk prefix 0 (French 0X XX XX XX XX), or in a layout one of the
#   region's number formats prints with its trunk prefix (JP 4-2-4 `0337-09-0902`); the NANP trunk prefix
#   may precede the area code (`1 (632) 808-6331`). Numbers in an unassigned range are printed too
#   (`(292)261-9295`), so validity alone misses them.
# - `00` then a country code is `+` (the international prefix most of the world dials: `0044 20 7946 0958`),
#   in every region like `+`, and so is `(+86)`; `00CC (0)…` is a phone's notation. A number a region parses
#   through another international prefix (JP's 010, US's 011) is not kept: `0104-691517-245` is an order
#   number, not +46 91517245.
# - one run of 10-11 digits of a possible length, when a word for a phone stands just before it (`phone:
#   2922619295`, `电话：…`, `Tél. …`); without one it is an order number as often (`Order 4829103746`).
# - not, though valid: 4-4-4 with the trunk prefix (a member card `0517 1985 6240`), two slashes (a receipt
#   `0754/885/43104`), fewer than 9 digits with the trunk prefix (`pages 0441-7327`), a ZIP+4 code's 5-4
#   (`07266-2022`), the tail of a longer number (`94028689 0934921154`).
# An extension as the languages write it after the number (`x12`, `ext. 12`, `extension 12`, `#12`, `分机12`,
# `转12`, `内線12`, `Durchwahl 12`, `poste 12`, in parentheses or not) belongs to the phone's span.
# Never a date (2024-03-15, 15.03.2024), an amount in thousands (1.234.567,89), nor a number joined to a
# letter or digit run.
DEFAULT_PHONE_REGIONS = ("CN", "US", "GB", "DE", "FR", "JP")
_EXTENSION_WORD = r"(?:x|X|(?i:ext\.?|extn\.?|extension|poste|durchwahl|dw\.|app\.)|#|分机|分機|转|轉|内線|内线)"
_EXTENSION_TAIL = rf"(?P<ext>,?[ ]?(?P<open>\()?{_EXTENSION_WORD}[ ]?[.:]?[ ]?[0-9]{{1,6}}(?(open)\)))"
_PHONE_RUN = re.compile(
    r"(?<![A-Za-z0-9+])(?<![0-9][.,])(?P<main>(?:\+|\(\+?)?[0-9][0-9 ()./-]{5,24}[0-9])"
    rf"{_EXTENSION_TAIL}?(?![A-Za-z0-9])(?![.,:][0-9])"
)
_IDD_00 = re.compile(r"00(?=[1-9])")
# A word for a phone just before a number, in the languages of the default regions; then one run of digits is one.
_PHONE_WORD = re.compile(
    r"(?i:\b(?:tel|tél|phone|telephone|téléphone|telefon|mobile?|mobil|cell|handy|portable|fax|call|ph)\b)"
    r"[^\n0-9]{0,12}$|(?:电话|電話|手机|手機|致电|回电|携帯|ＴＥＬ|联系方式|連絡先)[^\n0-9]{0,12}$"
)
_CC_IN_PARENTHESES = re.compile(r"\((\+[1-9][0-9]{0,2})\)")
_DATE = re.compile(r"\(?(?:[0-9]{4}[-./][0-9]{1,2}[-./][0-9]{1,2}|[0-9]{1,2}[-./][0-9]{1,2}[-./][0-9]{2,4})\)?")
_GROUPS = re.compile(r"[0-9]+")
_AFTER_DIGITS = re.compile(r"[0-9][ ./-]*$")
_ZIP_PLUS_4 = re.compile(r"[0-9]{5}-[0-9]{4}")
_NOT_DIGITS = re.compile(r"[^0-9]+")


def _phone_kept(raw: str, number: PhoneNumber, region: str, idd: bool = False, labelled: bool = False) -> bool:
    """`idd`: printed with `00` for the `+` of `raw`, which is then held to the international layout.
    `labelled`: a word for a phone stands just before it (_PHONE_WORD)."""
    body = raw.strip()
    groups = _GROUPS.findall(body)
    if labelled and not idd and body.isdigit() and 10 <= len(body) <= 11:
        # one run of digits is an order number as often as a phone (`Order 4829103746`), unless it is called one:
        # `phone: 2922619295`
        return number.country_code == phonenumbers.country_code_for_region(region) and (
            phonenumbers.is_possible_number(number)
        )
    if not body.startswith("+") and number.country_code != phonenumbers.country_code_for_region(region):
        return False  # dialled through the region's international prefix (JP 010, US 011): `00` is `+` already
    # The area code may stand apart (`(201) 555-0123`, `+81 3-1234-5678`, `+1 (201) 555-0123`); the groups after
    # it share one separator.
    separators = [sep for sep in _NOT_DIGITS.findall(body.lstrip("+(")) if sep.strip("()")]
    apart = 2 if "(" in body and not body.startswith("(") else 1  # `+1 (201) …`, the trunk prefix `1 (201) …`
    if len(set(separators[apart:])) > 1 or body.count("(") != body.count(")") or len(groups[-1]) < 2:
        return False  # mixed separators, an open parenthesis, a check digit after a dash: not a phone
    if body.count("/") > 1:
        return False  # `0754/885/43104`: a receipt or file number; a phone has one slash, after its area code
    if _ZIP_PLUS_4.fullmatch(body):
        return False  # a US ZIP+4 code (`07266-2022`), though a German number may be printed so
    if _DATE.fullmatch(body) or sum(map(len, groups)) < 7:
        return False
    if idd:  # `00`: an order number `0043-504342-097` is as often; the groups libphonenumber prints, or compact
        if len(groups) == 1:
            return False  # `004972068365` is a UPC barcode as often
        intl = _GROUPS.findall(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL))
        printed = [g for g in groups if g != "0" or "(0)" not in body]  # `0044 (0)20 …`
        significant = phonenumbers.national_significant_number(number)
        if len(significant) < 7 or not phonenumbers.is_possible_number(number):
            return False
        # `(0)` after the country code, the trunk prefix not dialled from abroad, is written only in phones.
        return printed == intl or (len(groups) > 2 and groups[1] == "0" and "(0)" in body)
    if body.startswith("+"):  # international: valid, or of a possible length and printed in groups
        return phonenumbers.is_valid_number(number) or (len(groups) > 1 and phonenumbers.is_possible_number(number))
    prefix = _national_prefix(region)
    trunk = prefix == "0" and groups[0].startswith("0") and not body.lstrip("(").startswith("00")
    if sum(map(len, groups)) < (9 if trunk else 10):
        return False  # a short run is a reference (`Nr. 040/2010`, `pages 0441-7327`) or an amount
    national = _GROUPS.findall(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL))
    printed = groups[1:] if prefix and groups[0] == prefix != national[0] and len(groups) > 1 else groups
    sizes, national_sizes = [len(g) for g in printed], [len(g) for g in national]
    if phonenumbers.is_valid_number(number):
        # Printed in the groups libphonenumber prints it in (`201-555-0123`, `131 2345 6789`), or with the
        # trunk prefix and area code as one group (`030/123456`) or all in one run (`0612345678`): a valid
        # number of a variable-length plan (DE) is otherwise any digit run.
        if len(sizes) > 1 and sizes == national_sizes and sizes != [4, 4, 4]:
            return True  # (4-4-4 with the trunk prefix is a member or gift card's layout: `0517 1985 6240`)
        if trunk and national[0].startswith("0"):
            # after the area code: one run (`030 901820`), or groups of 3+ ending in 4+ (`0521 8906 1081`)
            rest = sizes[1:]
            # (not 4-4-4: a member or gift card number `0517 1985 6240`)
            one_run = len(rest) == 1 or (min(rest, default=0) >= 3 and rest[-1] >= 4 and sum(sizes) <= 12)
            one_run = one_run and sizes != [4, 4, 4]
            if rest and one_run and sizes[0] == national_sizes[0]:
                return True
            if len(groups) == 1 and 10 <= len(groups[0]) == sum(national_sizes) <= 11:  # not a reference `05277347`
                return True
    if not phonenumbers.is_possible_number(number):
        return False
    # Of a possible length only (a range not assigned, or not yet in the metadata): a phone's layout.
    if len(sizes) > 1 and sizes == national_sizes and (not trunk or max(sizes[1:]) < 4):
        return True  # `03 82 32 89 50`, `(0116) 496 0990`; not `0748-4008-8130`, an unassigned area in CN's 4-4-4
    if trunk and len(groups) >= 4 and all(len(g) == 2 for g in groups):
        return True  # `08 37 80 58 56`
    if trunk and sum(sizes) >= 10 and sizes[-1] >= 4 and sizes != [4, 4, 4] and tuple(sizes) in _plan_layouts(region):
        return True  # a layout the region's plan prints with its trunk prefix: JP `0123-45-6789`, `080-0519-3317`
    if len(groups) == 2 and trunk and 3 <= len(groups[0]) <= 5 and len(groups[1]) >= 5:
        return True  # area code with its trunk prefix, then the subscriber: `08354 414360`, `076-73850514`
    if len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]):
        return False  # thousands: 1.234.567, 12 345 678
    # Without the trunk prefix (`(292)261-9295`, `13-0937-6933`): groups of 3+ inside.
    inner = all(len(g) >= 3 for g in groups[1:]) and len(groups[-1]) >= 4 and sum(map(len, groups)) <= 11
    if trunk:  # an area code of 4+ with the trunk prefix, then 3-4 (`0765 547 7344`), or in parentheses
        return len(groups) == 3 and inner and ((len(groups[0]) >= 4 and sizes[1:] == [3, 4]) or body.startswith("("))
    return not trunk and inner and (len(groups) >= 3 or body.startswith("("))  # `(292)261-9295`, `13-0937-6933`


_PATTERN_GROUP = re.compile(r"\\d(?:\{([0-9]+)(?:,([0-9]+))?\})?")


@lru_cache(maxsize=64)
def _plan_layouts(region: str) -> frozenset[tuple[int, ...]]:
    """Group sizes of the region's national formats in 3+ groups that print the trunk prefix (libphonenumber's
    number formats: JP `(\\d{3})(\\d{2})(\\d{4})` printed `0\\1-\\2-\\3` is 4-2-4)."""
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    prefix = _national_prefix(region)
    layouts: set[tuple[int, ...]] = set()
    for form in metadata.number_format if metadata is not None and prefix else ():
        rule = form.national_prefix_formatting_rule or ""
        ranges = [
            range(int(low or 1), int(high or low or 1) + 1) for low, high in _PATTERN_GROUP.findall(form.pattern or "")
        ]
        if len(ranges) < 3 or not rule.startswith(prefix):
            continue
        for sizes in itertools.product(*ranges):
            layouts.add((sizes[0] + len(prefix), *sizes[1:]))
    return frozenset(layouts)


@lru_cache(maxsize=64)
def _national_prefix(region: str) -> str:
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    return (metadata.national_prefix or "") if metadata is not None else ""


@lru_cache(maxsize=1024)
def _phone_matches(
    window: str, regions: tuple[str, ...], idd: bool, labelled: bool = False
) -> tuple[tuple[int, int], ...]:
    found: set[tuple[int, int]] = set()
    for region in regions:
        for match in phonenumbers.PhoneNumberMatcher(window, region, leniency=Leniency.POSSIBLE):
            if _AFTER_DIGITS.search(window, 0, match.start):
                continue  # the tail of a longer number: `94028689 0934921154`
            if _phone_kept(match.raw_string, match.number, region, idd and match.start == 1, labelled):
                found.add((match.start, match.end))
    return tuple(sorted(found))


def _phones(text: str, regions: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    for m in _CN_MOBILE.finditer(text):
        yield m.start(), m.end()
    for m in _INTL_PHONE.finditer(text) if "+" in text else ():
        digits = sum(c.isdigit() for c in m.group())
        if 8 <= digits <= 15 and m.group().count("(") == m.group().count(")"):
            yield m.start(), m.end()
    for m in _PHONE_RUN.finditer(text):
        window, at = m.group("main"), m.start()
        if sum(c.isdigit() for c in window) < 7:
            continue
        if window.startswith("(") and window.count("(") > window.count(")"):
            window, at = window[1:], at + 1  # an opening parenthesis around the number: `(0044 20 …)`
        idd = _IDD_00.match(window) is not None
        code = None if idd else _CC_IN_PARENTHESES.match(window)
        if idd:  # `0044 20 …` is `+44 20 …`; same length, same offsets
            window = " +" + window[2:]
        elif code is not None:  # `(+86) 190 …` is `+86 190 …`, the parentheses in the span
            window = " " + code.group(1) + " " + window[code.end() :]
        # `+` numbers are every region's: the first region parses them; national ones need the spec's regions.
        international = window.lstrip().startswith("+")
        labelled = _PHONE_WORD.search(text, max(0, m.start() - 24), m.start()) is not None
        for start, end in _phone_matches(window, regions if regions else ("US",), idd, labelled):
            if regions or international:
                start = 0 if (idd or code is not None) and start == 1 else start
                end = m.end() - at if end == len(window) and m.group("ext") else end
                yield at + start, at + end


# ---------------------------------------------------------------- CN resident ID (GB 11643-1999)

# Province-level region codes (first two digits) in use; 81-83 are the residence permits.
PROVINCES = frozenset(
    {11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46}
    | {50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83}
)


def resident_id_shaped(number: str, today: date | None = None) -> bool:
    """17 digits and a check character, a province code and a real birth date: a resident ID, valid or not."""
    if len(number) != 18 or not number[:17].isdigit() or number[17] not in "0123456789X":
        return False
    if int(number[:2]) not in PROVINCES:
        return False
    try:
        born = ric.get_birth_date(number)
    except ValidationError:
        return False
    return date(1900, 1, 1) <= born <= (today or date.today())


def resident_id_ok(number: str, today: date | None = None) -> bool:
    return resident_id_shaped(number, today) and ric.calc_check_digit(number) == number[17]


# ---------------------------------------------------------------- CN unified social credit code (GB 32100-2015)

USCC_CHARSET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
# Registering authority -> its entity types (GB 32100-2015 appendix A): 1 机构编制, 2 外交, 3 司法行政,
# 4 文化, 5 民政, 6 旅游, 7 宗教, 8 工会, 9 工商, A 中央军委改革和编制办公室, N 农业, Y 其他.
_USCC_TYPES = {"1": "1239", "2": "19", "3": "123459", "4": "19", "5": "1239", "6": "129", "7": "129", "8": "19"}
_USCC_TYPES |= {"9": "123", "A": "19", "N": "12349", "Y": "1"}
_ORG_WEIGHTS = (3, 7, 9, 10, 5, 8, 4, 2)


def org_code_ok(code: str) -> bool:
    """The 9-character organization code (GB 11714-1997) a USCC carries in characters 9-17."""
    value = 11 - sum(int(c, 36) * w for c, w in zip(code[:8], _ORG_WEIGHTS, strict=True)) % 11
    return code[8] == {10: "X", 11: "0"}.get(value, str(value))


def uscc_shaped(number: str) -> bool:
    """Authority, entity type, region code and organization code right: a USCC, valid or not."""
    if len(number) != 18 or any(c not in USCC_CHARSET for c in number):
        return False
    region = number[2:8]
    if number[1] not in _USCC_TYPES.get(number[0], "") or not region.isdigit():
        return False
    return (region == "100000" or int(region[:2]) in PROVINCES) and org_code_ok(number[8:17])


def uscc_ok(number: str) -> bool:
    return uscc_shaped(number) and uscc.calc_check_digit(number) == number[17]


# ---------------------------------------------------------------- IBAN (ISO 13616)

_IBAN_REGISTRY = numdb.get("iban")
_BBAN_CLASSES = {"n": "[0-9]", "a": "[A-Z]", "c": "[A-Z0-9]"}


@lru_cache(maxsize=256)
def _bban_format(country: str) -> re.Pattern[str] | None:
    """The country's BBAN as stdnum's registry describes it (`4!a6!n8!n`), or None if it is not listed."""
    structure = _IBAN_REGISTRY.info(country)[0][1].get("bban")
    if structure is None:
        return None
    parts = re.findall(r"([0-9]+)!([nac])", structure)
    return re.compile("".join(f"{_BBAN_CLASSES[kind]}{{{count}}}" for count, kind in parts))


def iban_shaped(number: str) -> bool | None:
    """A registered country's length and BBAN format: True; wrong: False; a country not registered: None."""
    form = _bban_format(number[:2])
    if form is None:
        return None
    return number[2:4].isdigit() and form.fullmatch(number, 4) is not None


def iban_ok(number: str) -> bool:
    shaped = iban_shaped(number)
    if shaped is None:  # not in the registry: the ISO 13616 bounds only
        return 15 <= len(number) <= 34 and 2 <= int(number[2:4]) <= 98 and mod_97_10.is_valid(number[4:] + number[:4])
    return shaped and std_iban.is_valid(number, check_country=False)


# ---------------------------------------------------------------- card

# The schemes' published IIN ranges and lengths, in one place. Source: Wikipedia, "Payment card number",
# table "Issuer identification number (IIN)" (the networks' own published ranges), read 2025; JCB's legacy
# 15-digit 1800/2131 from the same page's history. (low, high) compare the number's first len(str(low))
# digits. No scheme issues 13 digits today (Visa's 13-digit cards are retired), and EAN-13/GTIN-13/ISBN-13
# codes are that long: 13 is never a card length.
_ANY = frozenset({12, 14, 15, 16, 17, 18, 19})  # Maestro: 12-19, less 13
_16_19 = frozenset({16, 17, 18, 19})
IIN_TABLE: tuple[tuple[str, int, int, frozenset[int]], ...] = (
    ("visa", 4, 4, frozenset({16, 19})),
    ("mastercard", 51, 55, frozenset({16})),
    ("mastercard", 2221, 2720, frozenset({16})),
    ("amex", 34, 34, frozenset({15})),
    ("amex", 37, 37, frozenset({15})),
    ("diners", 36, 36, frozenset({14, 15, 16, 17, 18, 19})),
    ("diners", 300, 305, _16_19 | {14}),
    ("diners", 3095, 3095, _16_19 | {14}),
    ("diners", 38, 39, _16_19 | {14}),
    ("discover", 6011, 6011, _16_19),
    ("discover", 644, 649, _16_19),
    ("discover", 65, 65, _16_19),
    ("jcb", 3528, 3589, _16_19),
    ("jcb", 1800, 1800, frozenset({15})),
    ("jcb", 2131, 2131, frozenset({15})),
    ("unionpay", 62, 62, _16_19),
    ("unionpay", 81, 81, _16_19),
    ("mir", 2200, 2204, _16_19),
    ("rupay", 60, 60, _16_19),
    ("rupay", 65, 65, _16_19),
    ("rupay", 81, 82, _16_19),
    ("rupay", 508, 508, _16_19),
    ("rupay", 353, 353, frozenset({16})),
    ("rupay", 356, 356, frozenset({16})),
    ("maestro", 50, 50, _ANY),
    ("maestro", 56, 69, _ANY),
)
# Maestro's own 4-digit IINs (the same table's Maestro and Maestro UK rows): a 12-digit card starts with 50 or
# one of them. The wide 56-69 range at 12 digits takes one 12-digit reference or UPC-A barcode in ten that
# starts so (Luhn passes one in ten): `6338-6338-6338`.
_MAESTRO_OWN = ("5018", "5020", "5038", "5893", "6304", "6759", "6761", "6762", "6763")


def card_scheme(digits: str) -> str | None:
    """The scheme whose IIN range and length `digits` fits, Luhn not checked; None if none does."""
    if not digits.isdigit():
        return None
    for scheme, low, high, lengths in IIN_TABLE:
        if len(digits) in lengths and low <= int(digits[: len(str(low))]) <= high:
            if len(digits) == 12 and not digits.startswith(("50", *_MAESTRO_OWN)):
                return None
            return scheme
    return None


def card_shaped(digits: str) -> bool:
    return card_scheme(digits) is not None


def card_ok(digits: str) -> bool:
    return card_shaped(digits) and luhn.is_valid(digits)


def _card_layout(sizes: list[int]) -> bool:
    """One group, or 4-4-4-4(-k) with k <= 4, or 4-6-5 / 4-6-4."""
    return len(sizes) == 1 or sizes in ([4, 6, 5], [4, 6, 4]) or (set(sizes[:-1]) == {4} and sizes[-1] <= 4)


# ---------------------------------------------------------------- windows over grouped numbers

# A run is letter/digit groups joined by single separators. In it, a number is made of groups that
# hold a digit or are uppercase letters (an IBAN's country or bank code); a word ends a number.
# A lone group shorter than 12 (a 12-digit Maestro) cannot be a number (the lookbehind only drops it early: most words).
_RUN = re.compile(r"[A-Za-z0-9]+(?:(?:[ .-][A-Za-z0-9]+)+|(?<=[A-Za-z0-9]{12}))")
_SEPARATOR = re.compile(r"([ .-])")
_DIGIT = re.compile(r"[0-9]")
_IBAN_HEAD = re.compile(r"[A-Z]{2}(?:[0-9]|$)")  # the country code, uppercase, and maybe the check digits


def _classify(groups: list[str], compact: str) -> tuple[str, bool] | None:
    """The kind a window is shaped as, and whether its checks pass."""
    number = compact.upper()
    if len(number) == 18:
        if resident_id_shaped(number):
            return "cn_resident_id", ric.calc_check_digit(number) == number[17]
        if uscc_shaped(number):
            valid = uscc.calc_check_digit(number) == number[17]
            sizes = [len(g) for g in groups]
            if valid or not _card_layout(sizes) or not card_ok(number):
                return "cn_uscc", valid
            # 18 digits, compact or in a card's groups (`3541-6398-9488-7884-62`), that pass Luhn in a card's IIN
            # range: a JCB or UnionPay card that happens to be shaped as a USCC (about 1 in 20 is), reported
            # as the card rather than dropped as a USCC with a wrong check character
        if number.isdigit() and int(number[:2]) in PROVINCES and 1900 <= int(number[6:10]) <= date.today().year:
            return None  # a province code and a birth year: a mistyped resident ID far likelier than a card
    if 12 <= len(number) <= 19 and card_shaped(number):
        return ("credit_card", luhn.is_valid(number)) if _card_layout([len(g) for g in groups]) else None
    if 15 <= len(number) <= 34 and _IBAN_HEAD.match(groups[0]) and number[2:4].isdigit():
        shaped = iban_shaped(number)
        if shaped is None:  # a country the registry lacks: its code and check digits in one group, at least
            ok = groups[0][2:4].isdigit() and iban_ok(number)
            return ("iban", True) if ok else None  # too loose a shape to call a failure broken
        return ("iban", iban_ok(number)) if shaped else None
    return None


def _identifiers(text: str) -> Iterator[tuple[int, int, str | None]]:
    """(start, end, kind) of each valid identifier; kind None for one shaped as a kind whose check fails."""
    for run in _RUN.finditer(text):
        if run.end() - run.start() < 12 or not _DIGIT.search(text, run.start(), run.end()):
            continue
        parts = _SEPARATOR.split(run.group())
        groups, separators = parts[::2], parts[1::2]
        at = start = run.start()
        first, length, digits = 0, 0, False  # the number-shaped groups since the last word
        for k, group in enumerate(groups):
            if group.isalpha() and not group.isupper():  # a word
                if length >= 12 and digits:
                    yield from _windows(groups[first:k], separators[first:k], start)
                first, length, digits, start = k + 1, 0, False, at + len(group) + 1
            else:
                length += len(group)
                digits = digits or not group.isalpha()
            at += len(group) + 1
        if length >= 12 and digits:
            yield from _windows(groups[first:], separators[first:], start)


def _windows(groups: list[str], separators: list[str], offset: int) -> Iterator[tuple[int, int, str | None]]:
    """Every window of whole groups that a number can be: not joined to a group with a digit outside it."""
    digit = [not g.isalpha() for g in groups]
    starts = [offset]
    for g in groups:
        starts.append(starts[-1] + len(g) + 1)
    for i in range(len(groups)):
        if i > 0 and digit[i - 1]:
            continue  # the window would start inside a longer number
        if not digit[i] and not _IBAN_HEAD.match(groups[i]):
            continue
        compact = ""
        iban_head = _IBAN_HEAD.match(groups[i]) is not None
        for j in range(i, len(groups)):
            if j > i:
                if separators[j - 1] != separators[i]:
                    break  # one kind of separator per number
                # Inner groups have 3+ characters; `DE 89 …` keeps its country code apart. An IBAN is
                # printed in its country's grouping (`ES10 0075 0080 11 0600658108`, `NO 19 4920 06 96270`):
                # any group size, its mod-97 check and BBAN format decide.
                short = j - 1 > i and len(groups[j - 1]) < 3 and not (j - 1 == i + 1 and groups[i].isalpha())
                if short and not iban_head:
                    break
            compact += groups[j]
            if len(compact) > 34:
                break
            if len(compact) < 12 or (j + 1 < len(groups) and digit[j + 1]):
                continue
            found = _classify(groups[i : j + 1], compact)
            if found is not None:
                yield starts[i], starts[j] + len(groups[j]), found[0] if found[1] else None


# ---------------------------------------------------------------- public API


def find_pii(text: str, phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> list[Finding]:
    """Validated PII in `text`, sorted by start, non-overlapping (longer, then more specific, wins).
    `phone_regions`: whose national phone formats count (ISO 3166 codes); `+CC` numbers count for every region."""
    folded = fold(text)
    candidates: set[tuple[int, int, str]] = set()
    broken: list[tuple[int, int]] = []
    for start, end, kind in _identifiers(folded):
        if kind is None:
            broken.append((start, end))
        else:
            candidates.add((start, end, kind))
    candidates |= {(start, end, "email") for start, end in _emails(folded)}
    candidates |= {(start, end, "phone") for start, end in _phones(folded, tuple(phone_regions))}
    # Nothing inside a number that is shaped as an identifier but fails its check is PII.
    candidates = {c for c in candidates if not any(s <= c[0] and c[1] <= e for s, e in broken)}
    ranked = sorted(candidates, key=lambda c: (c[0] - c[1], _PRIORITY.index(c[2]), c[0]))
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in ranked:
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, kind))
    return [Finding(kind, text[start:end], start, end) for start, end, kind in sorted(kept)]


def pii_count(text: str, phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> int:
    return len(find_pii(text, phone_regions))
