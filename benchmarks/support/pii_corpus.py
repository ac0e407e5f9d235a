"""A seeded corpus of identifiers as real documents print them, valid and with a broken check character.

Kinds: CN resident IDs, USCCs, IBANs of every country python-stdnum's registry lists, and
Luhn-valid cards with real issuer prefixes. Each value is printed compact, in groups of four
(space, hyphen, dot), in its structural groups, in irregular groups (not cards: see
detectors/pii.py), and full-width (digits, letters and separators), inside a Chinese and an
English sentence. Every valid value also yields a broken twin: the same value with its check
character(s) replaced, which no recognizer may report as any kind.

Check characters are computed here, from the standards, not by the module under test.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date, timedelta

from stdnum import numdb

# ---------------------------------------------------------------- reference check characters


def id_check(first17: str) -> str:  # GB 11643-1999
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return "10X98765432"[sum(int(c) * w for c, w in zip(first17, weights, strict=True)) % 11]


USCC_CHARS = "0123456789ABCDEFGHJKLMNPQRTUWXY"


def uscc_check(first17: str) -> str:  # GB 32100-2015
    weights = (1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28)
    total = sum(USCC_CHARS.index(c) * w for c, w in zip(first17, weights, strict=True))
    return USCC_CHARS[(31 - total % 31) % 31]


def org_check(first8: str) -> str:  # GB 11714-1997: the organization code inside a USCC
    weights = (3, 7, 9, 10, 5, 8, 4, 2)
    value = 11 - sum(int(c, 36) * w for c, w in zip(first8, weights, strict=True)) % 11
    return {10: "X", 11: "0"}.get(value, str(value))


def iban_with_check(country: str, bban: str) -> str:  # ISO 13616: 98 - (BBAN + CC + "00") mod 97
    numeric = "".join(str(int(c, 36)) for c in bban + country + "00")
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


def luhn_digit(body: str) -> str:
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c) * (2 if i % 2 == 0 else 1)  # the check digit will sit right of `body`
        total += d - 9 if d > 9 else d
    return str((10 - total % 10) % 10)


# ---------------------------------------------------------------- values

PROVINCES = (11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46)
PROVINCES += (50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83)
# GB 32100-2015 appendix A: registering authority -> entity types.
USCC_TYPES = {"1": "1239", "2": "19", "3": "123459", "4": "19", "5": "1239", "6": "129", "7": "129", "8": "19"}
USCC_TYPES |= {"9": "123", "A": "19", "N": "12349", "Y": "1"}
ORG_CHARS = "0123456789ABCDEFGHJKLMNPQRTUWXY"  # the USCC charset, which an organization code inside one keeps to
# (prefixes, lengths) per network.
CARD_NETWORKS = (
    (("4",), (13, 16, 19)),  # Visa
    (("51", "52", "53", "54", "55", "2221", "2500", "2720"), (16,)),  # Mastercard
    (("34", "37"), (15,)),  # American Express
    (("6011", "644", "649", "65"), (16, 19)),  # Discover
    (("3528", "3550", "3589"), (16,)),  # JCB
    (("62",), (16, 17, 18, 19)),  # UnionPay
    (("36", "300", "305", "38"), (14,)),  # Diners Club
    (("2200", "2204"), (16,)),  # Mir
)


def resident_id(rng: random.Random) -> str:
    born = date(1930, 1, 1) + timedelta(days=rng.randrange(29000))
    body = (
        f"{rng.choice(PROVINCES)}{rng.randint(1, 90):02d}{rng.randint(1, 99):02d}{born:%Y%m%d}{rng.randrange(1000):03d}"
    )
    return body + id_check(body)


def uscc(rng: random.Random) -> str:
    authority = rng.choice(sorted(USCC_TYPES))
    region = (
        "100000" if rng.random() < 0.05 else f"{rng.choice(PROVINCES)}{rng.randint(0, 90):02d}{rng.randint(0, 99):02d}"
    )
    org = "".join(rng.choice(ORG_CHARS) for _ in range(8))
    body = authority + rng.choice(USCC_TYPES[authority]) + region + org + org_check(org)
    return body + uscc_check(body)


def iban_countries() -> dict[str, str]:
    """Country code -> BBAN structure (SWIFT notation, e.g. `4!a6!n8!n`), as python-stdnum lists them."""
    return {low: props["bban"] for _, low, _, props, _ in numdb.get("iban").prefixes}


def bban_alphabets(structure: str) -> list[str]:
    """The characters allowed at each BBAN position: `2!a3!n` -> [A-Z, A-Z, 0-9, 0-9, 0-9]."""
    alphabet = {"n": "0123456789", "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "c": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
    return [alphabet[kind] for count, kind in re.findall(r"(\d+)!([nac])", structure) for _ in range(int(count))]


def iban(rng: random.Random, country: str, structure: str) -> str:
    return iban_with_check(country, "".join(rng.choice(chars) for chars in bban_alphabets(structure)))


def card(rng: random.Random) -> str:
    prefixes, lengths = rng.choice(CARD_NETWORKS)
    prefix, length = rng.choice(prefixes), rng.choice(lengths)
    body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
    return body + luhn_digit(body)


def broken(kind: str, value: str, rng: random.Random) -> str:
    """`value` with its check character(s) replaced by another legal one."""
    if kind == "iban":
        check = rng.choice([f"{n:02d}" for n in range(2, 99) if f"{n:02d}" != value[2:4]])
        return value[:2] + check + value[4:]
    alphabet = {"cn_resident_id": "0123456789X", "cn_uscc": USCC_CHARS, "credit_card": "0123456789"}[kind]
    return value[:-1] + rng.choice([c for c in alphabet if c != value[-1]])


# ---------------------------------------------------------------- printing

STRUCTURE = {"cn_resident_id": (6, 8, 4), "cn_uscc": (2, 6, 9, 1)}  # region, birth date, sequence + check


def groups(value: str, sizes: list[int] | tuple[int, ...], sep: str) -> str:
    out, i = [], 0
    for size in sizes:
        out.append(value[i : i + size])
        i += size
    if i < len(value):
        out.append(value[i:])
    return sep.join(part for part in out if part)


def full_width(text: str, rng: random.Random) -> str:
    """Full-width letters and digits; separators full-width too, or left ASCII at random."""
    wide = rng.random() < 0.7
    out = []
    for c in text:
        if c.isascii() and c.isalnum():
            out.append(chr(ord(c) + 0xFEE0))
        elif c == " ":
            out.append("\u3000" if wide else c)
        elif c in "-.":
            out.append(chr(ord(c) + 0xFEE0) if wide else c)
        else:
            out.append(c)
    return "".join(out)


def printed(kind: str, value: str, rng: random.Random) -> tuple[str, str]:
    """A way `value` is printed in real documents, and its name."""
    style = rng.choice(["compact", "fours", "structure", "irregular"])
    sep = rng.choice([" ", "-", "."])
    if kind == "credit_card" and style in ("structure", "irregular"):
        style = "structure"
        sizes: list[int] | tuple[int, ...] = (4, 6, 5) if len(value) == 15 else [4] * 5
    elif style == "structure":
        sizes = STRUCTURE.get(kind, [4] * 9)
    elif style == "irregular":
        sizes = [rng.randint(3, 6) for _ in range(10)]
    else:
        sizes = [4] * 9
    text = value if style == "compact" else groups(value, sizes, sep)
    if rng.random() < 0.3:
        return full_width(text, rng), f"full-width {style}"
    return text, style if style == "compact" else f"{style} {sep!r}"


LABELS = {
    "cn_resident_id": ("身份证号码", "resident ID"),
    "cn_uscc": ("统一社会信用代码", "unified social credit code"),
    "iban": ("收款账户IBAN", "IBAN"),
    "credit_card": ("银行卡号", "card number"),
}
ZH = ("客户{label}为{value}，请核对。", "{label}：{value}。", "根据合同，乙方{label}（{value}）已登记。")
EN = ("The customer's {label} is {value}, please verify.", "{label}: {value}", "Pay to {label} {value} by Friday.")


@dataclass(frozen=True)
class Case:
    kind: str
    value: str  # compact
    text: str
    start: int  # where the printed value sits in `text`
    end: int
    style: str
    valid: bool


def sentences(kind: str, value: str, valid: bool, rng: random.Random) -> list[Case]:
    cases = []
    for templates, label in zip((ZH, EN), LABELS[kind], strict=True):
        shown, style = printed(kind, value, rng)
        head, tail = rng.choice(templates).split("{value}")
        head = head.format(label=label)
        cases.append(Case(kind, value, head + shown + tail, len(head), len(head) + len(shown), style, valid))
    return cases


def corpus(seed: int = 0, per_kind: int = 400, per_country: int = 5) -> list[Case]:
    """Valid and broken cases, every kind, in both languages."""
    rng = random.Random(seed)
    values = [("cn_resident_id", resident_id(rng)) for _ in range(per_kind)]
    values += [("cn_uscc", uscc(rng)) for _ in range(per_kind)]
    values += [("credit_card", card(rng)) for _ in range(per_kind)]
    values += [("iban", iban(rng, cc, bban)) for cc, bban in iban_countries().items() for _ in range(per_country)]
    cases = []
    for kind, value in values:
        cases += sentences(kind, value, True, rng)
        cases += sentences(kind, broken(kind, value, rng), False, rng)
    return cases
