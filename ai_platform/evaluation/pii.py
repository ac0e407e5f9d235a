"""PII in model replies: every kind is validated, not only pattern-matched.

A regular expression proposes candidates; a validator (check digit, Luhn,
mod-97, birth date, country length, card prefix) accepts or rejects them. A
bare 18-digit run is not an ID number and a 16-digit one is not a card: this is
what keeps contract amounts, dates and case numbers out of the `pii_count` gate.

Boundaries use explicit ASCII lookarounds instead of `\\b`: in Python `\\w`
matches Chinese characters, so `\\b` would reject `身份证号11010519491231002X。`.
A candidate inside a longer letter/digit run is never a match.

Standard library only, so the gateway can import it on its request path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Finding:
    kind: str
    text: str
    start: int
    end: int


# Not preceded / followed by an ASCII letter or digit (CJK text around is fine).
_LEFT = r"(?<![A-Za-z0-9])"
_RIGHT = r"(?![A-Za-z0-9])"

# When two kinds overlap the longer span wins; on equal spans the more specific
# kind (earlier here) wins: a valid ID that also passes Luhn is an ID.
_PRIORITY = ("cn_resident_id", "cn_uscc", "iban", "credit_card", "email", "phone")


# ---------------------------------------------------------------- email

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@"
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63})(?![A-Za-z0-9-])"
)


def _emails(text: str) -> Iterator[tuple[int, int]]:
    for m in _EMAIL.finditer(text):
        local = m.group(1)
        if local.endswith(".") or ".." in local or m.end() - m.start() > 254:
            continue
        yield m.start(), m.end()


# ---------------------------------------------------------------- phone

# CN mobile: 1[3-9] + 9 digits, optional +86/0086, separators as 3-4-4. A digit
# joined by `-`/`.` on either side means it is part of a longer number.
_CN_MOBILE = re.compile(
    r"(?<![A-Za-z0-9+])(?<![0-9][-.])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}"
    r"(?![A-Za-z0-9])(?![-.][0-9])"
)
# International, E.164-like: `+country` and 8-15 digits in total, in groups.
_INTL_PHONE = re.compile(
    r"(?<![A-Za-z0-9+])\+[1-9][0-9]{0,2}(?:[ .-]?\(?[0-9]{1,5}\)?){1,6}(?![A-Za-z0-9])(?![ .-]?[0-9])"
)


def _phones(text: str) -> Iterator[tuple[int, int]]:
    for m in _CN_MOBILE.finditer(text):
        yield m.start(), m.end()
    for m in _INTL_PHONE.finditer(text):
        digits = sum(c.isdigit() for c in m.group())
        if 8 <= digits <= 15 and m.group().count("(") == m.group().count(")"):
            yield m.start(), m.end()


# ---------------------------------------------------------------- credit card

_CARD = re.compile(_LEFT + r"[0-9](?:[ -]?[0-9]){12,18}" + _RIGHT)

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


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _iin_ok(digits: str) -> bool:
    for low, high, lengths in _IIN:
        width = len(str(low))
        if low <= int(digits[:width]) <= high and len(digits) in lengths:
            return True
    return False


def _grouping_ok(candidate: str) -> bool:
    """Separated cards are written 4-4-4-4(-k) or 4-6-5 / 4-6-4, with one kind of separator."""
    seps = set(re.findall(r"[ -]", candidate))
    if not seps:
        return True
    if len(seps) > 1:
        return False
    sizes = [len(g) for g in re.split(r"[ -]", candidate)]
    return sizes in ([4, 6, 5], [4, 6, 4]) or (all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4)


def _cards(text: str) -> Iterator[tuple[int, int]]:
    for m in _CARD.finditer(text):
        candidate = m.group()
        digits = re.sub(r"[ -]", "", candidate)
        if not (_grouping_ok(candidate) and _iin_ok(digits) and luhn_ok(digits)):
            continue
        # A grouped number that continues with more groups is part of something longer.
        grouped = candidate != digits
        if grouped and (re.search(r"[0-9][ -]$", text[: m.start()]) or re.match(r"[ -][0-9]", text[m.end() :])):
            continue
        yield m.start(), m.end()


# ---------------------------------------------------------------- IBAN

_IBAN_LENGTHS = {
    "AD": 24,
    "AE": 23,
    "AL": 28,
    "AT": 20,
    "AZ": 28,
    "BA": 20,
    "BE": 16,
    "BG": 22,
    "BH": 22,
    "BR": 29,
    "CH": 21,
    "CR": 22,
    "CY": 28,
    "CZ": 24,
    "DE": 22,
    "DK": 18,
    "DO": 28,
    "EE": 20,
    "ES": 24,
    "FI": 18,
    "FO": 18,
    "FR": 27,
    "GB": 22,
    "GE": 22,
    "GI": 23,
    "GL": 18,
    "GR": 27,
    "HR": 21,
    "HU": 28,
    "IE": 22,
    "IL": 23,
    "IS": 26,
    "IT": 27,
    "KW": 30,
    "KZ": 20,
    "LI": 21,
    "LT": 20,
    "LU": 20,
    "LV": 21,
    "MC": 27,
    "MT": 31,
    "NL": 18,
    "NO": 15,
    "PL": 28,
    "PT": 25,
    "RO": 24,
    "SA": 24,
    "SE": 24,
    "SI": 19,
    "SK": 24,
    "SM": 27,
    "TR": 26,
}

# Compact, or printed in groups of four after the first four characters.
_IBAN = re.compile(
    _LEFT + r"[A-Za-z]{2}[0-9]{2}(?:[A-Za-z0-9]{11,30}|(?: [A-Za-z0-9]{4}){2,7}(?: [A-Za-z0-9]{1,3})?)" + _RIGHT
)


def iban_ok(compact: str) -> bool:
    compact = compact.upper()
    country, check = compact[:2], compact[2:4]
    expected = _IBAN_LENGTHS.get(country)
    if expected is not None and len(compact) != expected:
        return False
    if expected is None and not 15 <= len(compact) <= 34:
        return False
    if not (country.isalpha() and check.isdigit() and 2 <= int(check) <= 98 and compact[4:].isalnum()):
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _ibans(text: str) -> Iterator[tuple[int, int]]:
    for m in _IBAN.finditer(text):
        # The greedy match may have swallowed a following word as a last group
        # ("... 7034 with"): try every group boundary, longest first.
        ends = [m.end()] + [m.start() + i for i in range(len(m.group()) - 1, 4, -1) if m.group()[i] == " "]
        for end in ends:
            if iban_ok(text[m.start() : end].replace(" ", "")):
                yield m.start(), end
                break


# ---------------------------------------------------------------- CN resident ID (GB 11643-1999)

_ID = re.compile(_LEFT + r"[1-9][0-9]{16}[0-9Xx]" + _RIGHT)
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"
# Province-level region codes (first two digits) in use.
_PROVINCES = frozenset(
    {11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46}
    | {50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83}
)


def id_check_char(first17: str) -> str:
    return _ID_CHECK[sum(int(c) * w for c, w in zip(first17, _ID_WEIGHTS, strict=True)) % 11]


def resident_id_ok(candidate: str, today: date | None = None) -> bool:
    if len(candidate) != 18 or not candidate[:17].isdigit() or int(candidate[:2]) not in _PROVINCES:
        return False
    try:
        born = date(int(candidate[6:10]), int(candidate[10:12]), int(candidate[12:14]))
    except ValueError:
        return False
    if not date(1900, 1, 1) <= born <= (today or date.today()):
        return False
    return id_check_char(candidate[:17]) == candidate[17].upper()


def _resident_ids(text: str) -> Iterator[tuple[int, int]]:
    for m in _ID.finditer(text):
        if resident_id_ok(m.group()):
            yield m.start(), m.end()


# ---------------------------------------------------------------- CN unified social credit code (GB 32100-2015)

USCC_CHARSET = "0123456789ABCDEFGHJKLMNPQRTUWXY"
_USCC_WEIGHTS = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
# Char 1: registering authority (1 编制, 5 民政, 9 工商, Y 其他, ...); char 2: entity
# category; chars 3-8: the administrative region code, which never starts with 0.
_USCC = re.compile(_LEFT + r"[1-9ANY][1239][1-9][0-9]{5}[0-9A-HJ-NP-RTUWXY]{10}" + _RIGHT)


def uscc_check_char(first17: str) -> str:
    total = sum(USCC_CHARSET.index(c) * w for c, w in zip(first17, _USCC_WEIGHTS, strict=True))
    return USCC_CHARSET[(31 - total % 31) % 31]


def uscc_ok(candidate: str) -> bool:
    if len(candidate) != 18 or any(c not in USCC_CHARSET for c in candidate):
        return False
    return uscc_check_char(candidate[:17]) == candidate[17]


def _usccs(text: str) -> Iterator[tuple[int, int]]:
    for m in _USCC.finditer(text):
        if uscc_ok(m.group()):
            yield m.start(), m.end()


# ---------------------------------------------------------------- public API

_DETECTORS: dict[str, Callable[[str], Iterator[tuple[int, int]]]] = {
    "cn_resident_id": _resident_ids,
    "cn_uscc": _usccs,
    "iban": _ibans,
    "credit_card": _cards,
    "email": _emails,
    "phone": _phones,
}


def find_pii(text: str) -> list[Finding]:
    """Validated PII in `text`, sorted by start, non-overlapping (longer, then more specific, wins)."""
    candidates = {(start, end, kind) for kind, detect in _DETECTORS.items() for start, end in detect(text)}
    ranked = sorted(candidates, key=lambda c: (c[0] - c[1], _PRIORITY.index(c[2]), c[0]))
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in ranked:
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, kind))
    return [Finding(kind, text[start:end], start, end) for start, end, kind in sorted(kept)]


def pii_count(text: str) -> int:
    return len(find_pii(text))
