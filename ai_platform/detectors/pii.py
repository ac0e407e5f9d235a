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

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

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
    r"(?<![A-Za-z0-9+])\+[1-9][0-9]{0,2}(?:[ .-]?\(?[0-9]{1,5}\)?){1,6}(?![A-Za-z0-9])(?![ .-]?[0-9])"
)


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for m in _CN_MOBILE.finditer(text):
        yield m.start(), m.end()
    for m in _INTL_PHONE.finditer(text) if "+" in text else ():
        digits = sum(c.isdigit() for c in m.group())
        if 8 <= digits <= 15 and m.group().count("(") == m.group().count(")"):
            yield m.start(), m.end()


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

# (prefix range low, high, allowed lengths): the major networks' IIN ranges.
_IIN: tuple[tuple[int, int, frozenset[int]], ...] = (
    (4, 4, frozenset({13, 16, 19})),  # Visa
    (51, 55, frozenset({16})),  # Mastercard
    (2221, 2720, frozenset({16})),  # Mastercard 2-series
    (34, 34, frozenset({15})),  # American Express
    (37, 37, frozenset({15})),
    (300, 305, frozenset({14, 16, 17, 18, 19})),  # Diners Club
    (36, 36, frozenset({14, 16, 17, 18, 19})),
    (38, 39, frozenset({14, 16, 17, 18, 19})),
    (6011, 6011, frozenset({16, 17, 18, 19})),  # Discover
    (644, 649, frozenset({16, 17, 18, 19})),
    (65, 65, frozenset({16, 17, 18, 19})),
    (3528, 3589, frozenset({16, 17, 18, 19})),  # JCB
    (62, 62, frozenset({16, 17, 18, 19})),  # UnionPay
    (81, 81, frozenset({16, 17, 18, 19})),
    (2200, 2204, frozenset({16, 17, 18, 19})),  # Mir
    (50, 50, frozenset(range(13, 20))),  # Maestro
    (56, 58, frozenset(range(13, 20))),
    (60, 60, frozenset(range(13, 20))),  # Maestro / RuPay
    (63, 63, frozenset(range(13, 20))),
    (67, 67, frozenset(range(13, 20))),
)


def card_shaped(digits: str) -> bool:
    return digits.isdigit() and any(
        low <= int(digits[: len(str(low))]) <= high and len(digits) in lengths for low, high, lengths in _IIN
    )


def card_ok(digits: str) -> bool:
    return card_shaped(digits) and luhn.is_valid(digits)


def _card_layout(sizes: list[int]) -> bool:
    """One group, or 4-4-4-4(-k) with k <= 4, or 4-6-5 / 4-6-4."""
    return len(sizes) == 1 or sizes in ([4, 6, 5], [4, 6, 4]) or (set(sizes[:-1]) == {4} and sizes[-1] <= 4)


# ---------------------------------------------------------------- windows over grouped numbers

# A run is letter/digit groups joined by single separators. In it, a number is made of groups that
# hold a digit or are uppercase letters (an IBAN's country or bank code); a word ends a number.
# A lone group shorter than 13 cannot be a number (the lookbehind only drops it early: most words).
_RUN = re.compile(r"[A-Za-z0-9]+(?:(?:[ .-][A-Za-z0-9]+)+|(?<=[A-Za-z0-9]{13}))")
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
            return "cn_uscc", uscc.calc_check_digit(number) == number[17]
        if number.isdigit() and int(number[:2]) in PROVINCES and number[6:8] in ("19", "20"):
            return None  # 18 digits after a province code: a mistyped resident ID far likelier than a card
    if 13 <= len(number) <= 19 and card_shaped(number):
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
        if run.end() - run.start() < 13 or not _DIGIT.search(text, run.start(), run.end()):
            continue
        parts = _SEPARATOR.split(run.group())
        groups, separators = parts[::2], parts[1::2]
        at = start = run.start()
        first, length, digits = 0, 0, False  # the number-shaped groups since the last word
        for k, group in enumerate(groups):
            if group.isalpha() and not group.isupper():  # a word
                if length >= 13 and digits:
                    yield from _windows(groups[first:k], separators[first:k], start)
                first, length, digits, start = k + 1, 0, False, at + len(group) + 1
            else:
                length += len(group)
                digits = digits or not group.isalpha()
            at += len(group) + 1
        if length >= 13 and digits:
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
        for j in range(i, len(groups)):
            if j > i:
                if separators[j - 1] != separators[i]:
                    break  # one kind of separator per number
                # Inner groups have 3+ characters; `DE 89 …` keeps its country code apart.
                if j - 1 > i and len(groups[j - 1]) < 3 and not (j - 1 == i + 1 and groups[i].isalpha()):
                    break
            compact += groups[j]
            if len(compact) > 34:
                break
            if len(compact) < 13 or (j + 1 < len(groups) and digit[j + 1]):
                continue
            found = _classify(groups[i : j + 1], compact)
            if found is not None:
                yield starts[i], starts[j] + len(groups[j]), found[0] if found[1] else None


# ---------------------------------------------------------------- public API


def find_pii(text: str) -> list[Finding]:
    """Validated PII in `text`, sorted by start, non-overlapping (longer, then more specific, wins)."""
    folded = fold(text)
    candidates: set[tuple[int, int, str]] = set()
    broken: list[tuple[int, int]] = []
    for start, end, kind in _identifiers(folded):
        if kind is None:
            broken.append((start, end))
        else:
            candidates.add((start, end, kind))
    candidates |= {(start, end, "email") for start, end in _emails(folded)}
    candidates |= {(start, end, "phone") for start, end in _phones(folded)}
    # Nothing inside a number that is shaped as an identifier but fails its check is PII.
    candidates = {c for c in candidates if not any(s <= c[0] and c[1] <= e for s, e in broken)}
    ranked = sorted(candidates, key=lambda c: (c[0] - c[1], _PRIORITY.index(c[2]), c[0]))
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in ranked:
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, kind))
    return [Finding(kind, text[start:end], start, end) for start, end, kind in sorted(kept)]


def pii_count(text: str) -> int:
    return len(find_pii(text))
