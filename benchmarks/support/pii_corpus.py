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
    (("4",), (16, 19)),  # Visa (13 digits retired, and EAN-13's length: never a card, issue 32)
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


# ---------------------------------------------------------------- per locale: phones, cards, IBANs (issue 32)
#
# Phones: libphonenumber's example numbers (phonenumbers.example_number_for_type) with their last digits
# redrawn until the number is still valid, printed in every format libphonenumber prints (E164,
# INTERNATIONAL, NATIONAL, RFC3966) and in local variants (parentheses, dots, slashes, `(0)`, extensions),
# plus numbers in a national layout with digits drawn at random (printed, though in no assigned range).
# Cards: every scheme's published IIN ranges (Wikipedia "Payment card number"), drawn in range and length,
# with a Luhn digit. IBANs: the registry countries' BBAN formats, printed in groups of four, in their BBAN
# structure and in irregular groups. Benign: numbers documents print that are none of these.
# Five splits, each its own seed, read by benchmarks/pii_scan.py:
# - "train": what the tests hold to 99% recall and 0.1% benign flagged; the layout classes the first held-out
#   split found missed were added to it as classes, drawn here (`00` + country code for every region,
#   extensions in EN/ZH/JA/DE/FR, NANP numbers with random valid digits, hyphenated order numbers...);
# - "seen": the first held-out split (seed + 1000). Its misses were read to find those classes, so it is no
#   longer held out; kept as a regression split;
# - "heldout": seed + 2000, carriers, separators and languages written before any result was looked at
#   (email signatures, CSV rows, chat messages, addresses; no-break spaces, slashes, dots; other wording).
#   Scored once (first pass of issue 32): phones 74-81% per locale, cards and IBANs 100%, benign 0.17%. Two
#   defects of this split's own generator were found then: `tel:+…` rows expected `tel:` inside the span, and
#   `_rand` rewrote a leading `00` the layout writes, so `001-`/`0044 (0)`/`0049 (0)`/`0033 (0)`/`0086-` came
#   out as `051-…`, `0644 (0)…`: not phones. Both are fixed; with them fixed this split's misses were read to
#   tune the detector (`(+86) …`, `1 (AAA) …`, JP 4-2-4, `00CC (0)…`), so it is no longer held out;
# - "fresh": seed + 3000, the same (fixed) held-out generator, not read before the detector was tuned. Scored
#   (commit bcfd85f): phones 100% in every locale, cards 99.1-100%, IBANs 100%, benign 0/3000. Its two misses
#   (18-digit compact cards shaped as USCCs) were read, and that class was then fixed: no longer held out;
# - "fresh2": seed + 4000, the same generator, scored once at the end.
SPLIT_SEEDS = {"train": 0, "seen": 1000, "heldout": 2000, "fresh": 3000, "fresh2": 4000}
SPLITS = tuple(SPLIT_SEEDS)

LOCALES = ("CN", "US", "GB", "DE", "FR", "JP")
IBAN_LOCALES = ("GB", "DE", "FR", "ES", "NO", "IT", "NL", "CH", "other")
CARD_SCHEMES = (  # (name, prefixes low-high as (low, high), lengths)
    ("visa", (4, 4), (16, 19)),
    ("mastercard", (51, 55), (16,)),
    ("mastercard", (2221, 2720), (16,)),
    ("amex", (34, 34), (15,)),
    ("amex", (37, 37), (15,)),
    ("discover", (6011, 6011), (16, 19)),
    ("discover", (644, 649), (16,)),
    ("jcb", (3528, 3589), (16, 17, 18, 19)),
    ("unionpay", (62, 62), (16, 17, 18, 19)),
    ("maestro", (5018, 5018), (12, 16, 19)),
    ("maestro", (5020, 5020), (12, 16)),
    ("maestro", (6759, 6759), (12, 16, 19)),
    ("maestro", (6761, 6763), (12, 16, 19)),
    ("maestro", (56, 58), (16, 19)),
    ("diners", (36, 36), (14,)),
    ("diners", (300, 305), (16,)),
    ("mir", (2200, 2204), (16,)),
    ("rupay", (508, 508), (16,)),
    ("rupay", (60, 60), (16,)),
)
TEMPLATES = {
    "train": {
        "CN": ("客户{label}为{value}，请核对。", "{label}：{value}。"),
        "JP": ("お客様の{label}は{value}です。", "{label}：{value}"),
        "DE": ("Die {label} des Kunden lautet {value}.", "{label}: {value}"),
        "FR": ("Le {label} du client est {value}.", "{label} : {value}"),
        "EN": ("The customer's {label} is {value}, please verify.", "{label}: {value}"),
    },
    "seen": {
        "CN": ("根据合同，乙方{label}（{value}）已登记。", "如有疑问请联系{value}"),
        "JP": ("{label}（{value}）までご連絡ください。", "連絡先 {value} 担当：佐藤"),
        "DE": ("Bitte kontaktieren Sie uns unter {value} oder per Post.", "({label} {value})"),
        "FR": ("Contactez-nous au {value} avant vendredi.", "[{label} {value}]"),
        "EN": ("Reach {label} {value} by Friday.", "({label}: {value})"),
    },
    "heldout": {
        "CN": (
            "您好，我的{label}是{value}，随时联系。",
            "联系人：王经理\n{label}：{value}\n地址：北京市朝阳区建国路88号",
            "姓名,{label},城市\n李伟,{value},上海",
            "收到请回电 {value} 谢谢",
        ),
        "JP": (
            "〒100-0005 東京都千代田区丸の内1-1-1 {label} {value}",
            "担当：山田（{label}：{value}）",
            "お問い合わせ：{value}（平日9時～18時）",
            "氏名,{label},備考\n田中,{value},至急",
        ),
        "DE": (
            "Mit freundlichen Grüßen\nAnna Schmidt\nVertrieb | Muster GmbH\n{label}: {value}\nwww.muster.example",
            "Musterstraße 12, 10115 Berlin, {label} {value}",
            "Rückruf bitte unter {value}, danke!",
            "Name;{label};Ort\nMüller;{value};Köln",
        ),
        "FR": (
            "Cordialement,\nMarie Dupont\nService client\n{label} : {value}",
            "12 rue de la Paix, 75002 Paris — {label} {value}",
            "Appelez le {value} ou écrivez-nous.",
            "nom;{label};ville\nDupont;{value};Lyon",
        ),
        "EN": (
            "Best regards,\nJohn Carter\nSales | Acme Ltd\n{label}: {value}\nwww.acme.example",
            "ok call me at {value} when you land",
            "Acme Ltd, 10 High Street, Springfield, {label} {value}",
            'id,name,{label},city\n17,"Carter, John",{value},Leeds',
        ),
    },
}
LANGUAGE = {"CN": "CN", "JP": "JP", "DE": "DE", "FR": "FR", "US": "EN", "GB": "EN"}
LOCALE_LABELS = {
    "phone": {"CN": "电话", "JP": "電話番号", "DE": "Telefonnummer", "FR": "numéro", "EN": "phone"},
    "credit_card": {"CN": "银行卡号", "JP": "カード番号", "DE": "Kartennummer", "FR": "numéro de carte", "EN": "card"},
    "iban": {"CN": "收款账户IBAN", "JP": "IBAN", "DE": "IBAN", "FR": "IBAN", "EN": "IBAN"},
}


@dataclass(frozen=True)
class LocaleCase:
    locale: str
    kind: str
    text: str
    start: int
    end: int
    style: str


def _redrawn(rng: random.Random, number: object, region: str) -> object:
    import phonenumbers

    example = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)  # type: ignore[arg-type]
    for _ in range(50):
        tail = "".join(rng.choice("0123456789") for _ in range(4))
        candidate = phonenumbers.parse(example[:-4] + tail, region)
        if phonenumbers.is_valid_number(candidate):
            return candidate
    return number


def _nanp(rng: random.Random) -> tuple[str, str]:
    """A NANP area code and exchange with random digits, as the plan allows them: NXX, never N11; area codes
    not N9X (reserved for expansion). Most are not assigned: printed all the same (`(292)261-9295`)."""
    while True:
        area = rng.choice("23456789") + rng.choice("012345678") + rng.choice("0123456789")
        exchange = rng.choice("23456789") + rng.choice("0123456789") + rng.choice("0123456789")
        if area[1:] != "11" and exchange[1:] != "11":
            return area, exchange


def _rand(rng: random.Random, pattern: str) -> str:
    """`#` a digit, `N` 2-9, `0` then a digit: 0 and 1-9 (`00` is the international prefix), `AAA` and `EEE`
    a NANP area code and exchange (_nanp), others as they are."""
    if "AAA" in pattern or "EEE" in pattern:
        area, exchange = _nanp(rng)
        pattern = pattern.replace("AAA", area).replace("EEE", exchange)
    out = "".join(rng.choice("0123456789") if c == "#" else rng.choice("23456789") if c == "N" else c for c in pattern)
    # A drawn `00` at the start of a digit run would be the international prefix; a `00` the layout writes is one.
    kept = lambda m: m.group() if pattern[m.start() : m.end()] == "00" else "0" + rng.choice("123456789")  # noqa: E731
    return re.sub(r"(?<![0-9])00", kept, out)


# National layouts with random digits: what is printed even where no range is assigned.
RANDOM_LAYOUTS = {
    "train": {
        "US": ("(N##)N##-####", "N##-N##-####", "N##.N##.####", "+1-N##-N##-####x####", "(N##)N##-####x###"),
        "GB": ("(0###) ### ####", "0#### ######", "+44(0)#### ######"),
        "DE": ("(0###) ######", "0#### ######", "+49(0)### #######"),
        "FR": ("0# ## ## ## ##", "+33 # ## ## ## ##", "0#.##.##.##.##"),
        "JP": ("##-####-####", "0#-####-####", "0##-###-####"),
        "CN": ("1[3-9]# #### ####", "0##-########"),
    },
    "seen": {
        "US": ("1-N##-N##-####", "N##-N##-#### ext. ###", "+1 (N##) N##-####", "N##.N##.####x#####"),
        "GB": ("0### ### ####", "+44 (0)### ### ####", "0###-###-####"),
        "DE": ("0###/######", "+49 (0)### ######", "0### - ######"),
        "FR": ("0#-##-##-##-##", "+33 (0)# ## ## ## ##"),
        "JP": ("###-####-####", "(0#)####-####", "+81-#-####-####"),
        "CN": ("(0##)########", "+86 1[3-9]# #### ####"),
    },
    "heldout": {
        "US": ("AAA/EEE-####", "+1.AAA.EEE.####", "(AAA) EEE-#### ext ##", "1 (AAA) EEE-####", "001-AAA-EEE-####"),
        "GB": ("07### ######", "+44 7### ######", "0#### ###### ext 12", "0044 (0)## #### ####"),
        "DE": ("0### / ######", "+49-###-#######", "0049 (0)### ######", "0###-####### Durchwahl ##"),
        "FR": ("0#\u00a0##\u00a0##\u00a0##\u00a0##", "+33 #.##.##.##.##", "0033 (0)# ## ## ## ##"),
        "JP": ("0#(####)####", "0###-##-####", "+81 ##-####-####", "0#-####-#### 内線###"),
        "CN": ("0##-########转###", "(+86) 1[3-9]# #### ####", "+86-##-########", "0086-1[3-9]#-####-####"),
    },
}
# Extensions as each language writes them after a number (`{n}` the extension's digits).
EXTENSIONS = {
    "EN": (" ext. {n}", " ext {n}", " Ext. {n}", " extension {n}", " #{n}", " x{n}", ", ext. {n}"),
    "CN": (" 分机 {n}", "分机{n}", "转{n}", " 转 {n}"),
    "JP": (" 内線 {n}", "内線{n}"),
    "DE": (" Durchwahl {n}", " App. {n}"),
    "FR": (" poste {n}", " Poste {n}"),
}
# NANP numbers with random valid digits (_nanp), as the US prints them.
NANP_LAYOUTS = ("+1 (AAA) EEE-####", "(AAA) EEE-####", "AAA-EEE-####", "1-AAA-EEE-####", "+1 AAA EEE ####")
NANP_LAYOUTS += ("+1-AAA-EEE-####", "AAAEEE####")  # the last in one run: found after a word for a phone


def _phone_texts(rng: random.Random, region: str, split: str) -> list[tuple[str, str]]:
    """(printed, style) phones of `region`."""
    import phonenumbers
    from phonenumbers import PhoneNumberFormat as F
    from phonenumbers import PhoneNumberType as T

    out = []
    for kind in (T.FIXED_LINE, T.MOBILE, T.TOLL_FREE):
        example = phonenumbers.example_number_for_type(region, kind)
        if example is None:
            continue
        number = _redrawn(rng, example, region)
        e164 = phonenumbers.format_number(number, F.E164)
        intl = phonenumbers.format_number(number, F.INTERNATIONAL)
        national = phonenumbers.format_number(number, F.NATIONAL)
        rfc = phonenumbers.format_number(number, F.RFC3966)[len("tel:") :]
        if split == "train":
            out += [(e164, "E164"), (intl, "INTERNATIONAL"), (national, "NATIONAL"), (rfc, "RFC3966")]
            out += [(national.replace(" ", "-"), "national -"), (intl.replace(" ", "."), "international .")]
            out += [(intl + " x" + _rand(rng, "###"), "international ext")]
            sep = rng.choice([" ", "-"])
            out += [("00" + intl[1:].replace(" ", sep), f"00 international {sep!r}")]
            ext = rng.choice(EXTENSIONS[LANGUAGE[region]]).format(n=_rand(rng, "#" * rng.randint(1, 4)))
            out += [(national + ext, "national ext")]
        elif split == "seen":
            code = str(number.country_code)
            out += [("00" + intl[1:], "00 international"), (intl.replace(" ", "-"), "international -")]
            out += [(national.replace(" ", "."), "national ."), (national + " ext. " + _rand(rng, "##"), "ext.")]
            out += [(f"+{code} " + e164[len(code) + 1 :], "+CC compact")]
        else:
            out += [("00" + intl[1:].replace(" ", "-"), "00 international -"), ("tel:" + e164, "tel: E164")]
            out += [(intl.replace(" ", "\u00a0"), "international nbsp")]
            out += [(national.replace(" ", "\u00a0"), "national nbsp")]
            out += [(national + " (ext. " + _rand(rng, "###") + ")", "(ext.)")]
    if split == "train" and region == "US":
        out += [(_rand(rng, layout), "nanp " + layout) for layout in NANP_LAYOUTS]
    for layout in RANDOM_LAYOUTS[split][region]:
        mobile = layout.replace("1[3-9]", "1" + rng.choice("3456789"))
        out.append((_rand(rng, mobile), "random " + layout))
    return out


def _card_number(rng: random.Random, low: int, high: int, length: int) -> str:
    prefix = str(rng.randint(low, high))
    body = prefix + "".join(rng.choice("0123456789") for _ in range(length - len(prefix) - 1))
    return body + luhn_digit(body)


def _card_printed(rng: random.Random, value: str, split: str) -> tuple[str, str]:
    seps = {"train": [" ", "-"], "seen": [" ", "-", "."], "heldout": [" ", "-", "\u00a0"]}
    sep = rng.choice(seps.get(split, seps["heldout"]))
    if rng.random() < 0.4:
        return value, "compact"
    sizes = (4, 6, 5) if len(value) == 15 else [4] * 5
    return groups(value, sizes, sep), f"groups {sep!r}"


def _iban_printed(rng: random.Random, value: str, structure: str, split: str) -> tuple[str, str]:
    sep = rng.choice([" ", "-", "."])
    if split == "train":
        style = rng.choice(["fours", "bban", "cc apart"])
    elif split == "seen":
        style = rng.choice(["random", "cc apart random", "bban"])
    else:
        sep = rng.choice([" ", "\u00a0", "-"])
        style = rng.choice(["fours", "random", "cc apart", "bban"])
    parts = [int(n) for n, _ in re.findall(r"(\d+)!([nac])", structure)]
    if style == "fours":
        return groups(value, [4] * 9, sep), style
    if style == "bban":
        return groups(value, [4, *parts], sep), style
    sizes = [rng.randint(2, 6) for _ in range(12)]
    if style == "cc apart":
        return value[:2] + sep + value[2:4] + sep + groups(value[4:], [4] * 9, sep), style
    if style == "cc apart random":
        return value[:2] + sep + value[2:4] + sep + groups(value[4:], sizes, sep), style
    return groups(value, [4, *sizes], sep), style


def _placed(locale: str, kind: str, shown: str, style: str, split: str, rng: random.Random) -> LocaleCase:
    language = LANGUAGE.get(locale, "EN")
    head, tail = rng.choice(TEMPLATES[split][language]).split("{value}")
    head = head.format(label=LOCALE_LABELS[kind][language])
    scheme = len("tel:") if shown.startswith("tel:") else 0  # the URI's scheme is not part of the number
    return LocaleCase(locale, kind, head + shown + tail, len(head) + scheme, len(head) + len(shown), style)


def locale_corpus(seed: int = 7, split: str = "train", rounds: int = 12) -> list[LocaleCase]:
    """Valid phones, cards and IBANs per locale, inside sentences in the locale's language."""
    rng = random.Random(seed + SPLIT_SEEDS[split])
    cases = []
    countries = iban_countries()
    for _ in range(rounds):
        for locale in LOCALES:
            for shown, style in _phone_texts(rng, locale, split):
                cases.append(_placed(locale, "phone", shown, style, split, rng))
            for _scheme, (low, high), lengths in CARD_SCHEMES:
                value = _card_number(rng, low, high, rng.choice(lengths))
                shown, style = _card_printed(rng, value, split)
                cases.append(_placed(locale, "credit_card", shown, style, split, rng))
        for locale in IBAN_LOCALES:
            picks = [locale] if locale != "other" else rng.sample(sorted(countries), 12)
            for country in picks:
                value = iban(rng, country, countries[country])
                shown, style = _iban_printed(rng, value, countries[country], split)
                cases.append(_placed(locale, "iban", shown, style, split, rng))
    return cases


def _gtin(body: str) -> str:
    total = sum(int(c) * (3 if i % 2 == 0 else 1) for i, c in enumerate(reversed(body)))
    return body + str((10 - total % 10) % 10)


BENIGN = {
    "train": (
        "EAN {ean13}",
        "ISBN {isbn}",
        "UPC {upc}",
        "Order #{n6}-{n4} shipped on {date}.",
        "订单号{n10}，金额￥{amount}。",
        "Invoice {year}-{n6}, total {amount} EUR",
        "Rechnung vom {ddmmyyyy}, Betrag {amount_de} €",
        "Version {ver}, build {n5}",
        "Server {ip}:{port}",
        "日期：{year}年{mm}月{dd}日，合同编号HT{year}{n6}",
        "Ref. {n8} / {n4}",
        "Tracking 1Z{alnum}",
        "ID-like {idlike}",
        "Le {ddmmyyyy} à {hh}h{mi}, montant {amount_fr} €",
        "Population {bignum} in {year}",
        # Added with the layout classes the first held-out split showed (issue 32): hyphenated order and
        # reference numbers, invoices, tracking numbers, dates and times, amounts, ISBN-10, part numbers.
        "Order No. {z4}-{n6}-{n3}",
        "订单编号 {z4}-{n6}-{n3}",
        "Bestellnummer {z4}-{n6}-{n2}",
        "N° de commande {z3}-{n7}-{n2}",
        "Ref {z4}-{n5}-{n4}",
        "Invoice INV-{year}-{n5}, due {mm}/{dd}/{year_2}",
        "Rechnung Nr. {n3}/{year} vom {ddmmyyyy}",
        "Facture n° {z4} {n3} {n3_2} du {dd}/{mm}/{year}",
        "请款单 {year}{mm}{dd}-{n4}",
        "USPS {usps}",
        "FedEx tracking 7{n3} {n4} {n4_2}",
        "追跡番号 {n4}-{n4_2}-{n4_3}",
        "Sendungsnummer {z4} {n4} {n4_2} {n4_3}",
        "Meeting {dd}/{mm}/{year} {hh}:{mi}-{hh_2}:{mi_2}",
        "{year}/{mm}/{dd} {hh}:{mi}:{ss}",
        "Öffnungszeiten {hh}.{mi} - {hh_2}.{mi_2} Uhr, {dd}.{mm}.{year}",
        "Amount: $ {amount}",
        "Montant : {amount_fr_nbsp} €",
        "Betrag CHF {amount_ch}",
        "合计：¥{amount}（{n4}件）",
        "ISBN {isbn10}",
        "P/N {z4}-{n3}-{n2}",
        "Art.-Nr. {z3} {n3} {n3_2}",
        "部品番号 {z3}-{n4}-{n3}",
        "SKU {n3}-{n4}-{n4_2}-{n1}",
    ),
    "seen": (
        "GTIN {ean13} lot {n5}",
        "ISBN-13: {isbn}",
        "Barcode {upc}",
        "PO {n8}, delivered {date}",
        "发票号码{n8}，开票日期{year}-{mm}-{dd}",
        "Kundennummer {n7}, Datum {ddmmyyyy}",
        "Build {ver} ({n6})",
        "coordinates {coord}",
        "身份证样号{idlike}（作废）",
        "Total: {amount} ({n4} items)",
        "Réf. {n6}-{n3}, le {ddmmyyyy}",
        "注文番号 {n4}-{n6}-{n3}",
        "Account ending {n4}, balance {amount}",
    ),
    # Written before any result on it was read; carriers and classes the train split does not hold.
    "heldout": (
        "〒{n3}-{n4} 東京都港区芝公園{n1}-{n1_2}-{n1_3}",
        "Musterstraße {n2}, {n5} Berlin",
        "Flight LH {z4}, seat {n2}A, gate B{n2_2}",
        "Aktenzeichen {n2} O {n3}/{yy}",
        "申请号 {year}{n1}{n7}.{n1_2}",
        "会员卡号 {n4} {n4_2} {n4_3}",
        "Ticket #{n7} opened {mm}/{dd}/{year} {hh}:{mi}",
        "date,time,amount,currency\n{date},{hh}:{mi},{amount_plain},EUR",
        "pages {n4}-{n4_2}",
        "Lot {z4}-{n3}-{n2}, exp. {mm}/{yy}",
        "Zimmer {n1}.{n3}, Durchwahl-Liste Stand {ddmmyyyy}",
        "Total TTC : {amount_fr_nbsp} € (TVA {n2},{n2_2} %)",
        "Kassenbon {n4}/{n3}/{n5} {ddmmyyyy} {hh}:{mi}",
        "快递单号 SF{n12}",
        "Serial S/N {z4}-{n4}-{n4_2}-{n2}",
        "ok it was like {bignum} views lol",
        "順位 {n1}位、得点 {n3}.{n2}点 ({year}年)",
        "Ref: {year}-{mm}-{n6}-{n2}",
    ),
}


# "fresh", "fresh2": the held-out generator, its two defects fixed (the `tel:` scheme outside the span, the `00`
# a layout writes kept), each drawn on a seed no result had been read from when the detector was tuned.
for _fresh in ("fresh", "fresh2"):
    TEMPLATES[_fresh] = TEMPLATES["heldout"]
    RANDOM_LAYOUTS[_fresh] = RANDOM_LAYOUTS["heldout"]
    BENIGN[_fresh] = BENIGN["heldout"]


def _isbn10(body: str) -> str:
    check = sum((10 - i) * int(c) for i, c in enumerate(body)) % 11
    digit = "0123456789X"[(11 - check) % 11]
    return f"{body[0]}-{body[1:4]}-{body[4:9]}-{digit}"


def _benign_values(rng: random.Random, extra: random.Random) -> dict[str, str]:
    """Values for the benign templates; those added after the first held-out split draw from `extra`, so the
    earlier splits' sentences stay as they were."""
    d = lambda n: "".join(rng.choice("0123456789") for _ in range(n))  # noqa: E731
    e = lambda n: "".join(extra.choice("0123456789") for _ in range(n))  # noqa: E731
    isbn = _gtin("978" + d(9))
    year, mm, dd = rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28)
    amount = f"{rng.randint(1, 9_999_999):,}.{rng.randint(0, 99):02d}"
    body17 = f"{rng.choice(PROVINCES)}{d(4)}{rng.randint(1900, 2020)}{rng.randint(13, 99):02d}{d(2)}{d(3)}"  # month 13+
    values = {
        "ean13": _gtin(str(rng.randint(1, 9)) + d(11)),
        "isbn": f"{isbn[:3]}-{isbn[3]}-{isbn[4:6]}-{isbn[6:12]}-{isbn[12]}",
        "upc": _gtin(d(11)),
        "n3": d(3),
        "n4": d(4),
        "n5": d(5),
        "n6": d(6),
        "n7": d(7),
        "n8": d(8),
        "n10": str(rng.randint(1, 9)) + d(9),
        "date": f"{year}-{mm:02d}-{dd:02d}",
        "ddmmyyyy": f"{dd:02d}.{mm:02d}.{year}",
        "year": str(year),
        "mm": f"{mm:02d}",
        "dd": f"{dd:02d}",
        "hh": f"{rng.randint(0, 23):02d}",
        "mi": f"{rng.randint(0, 59):02d}",
        "amount": amount,
        "amount_de": amount.replace(",", "_").replace(".", ",").replace("_", "."),
        "amount_fr": amount.replace(",", " ").replace(".", ","),
        "ver": f"{rng.randint(1, 20)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}.{d(4)}",
        "ip": ".".join(str(rng.randint(1, 254)) for _ in range(4)),
        "port": str(rng.randint(1024, 65535)),
        "alnum": "".join(rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(16)),
        "idlike": body17 + rng.choice("0123456789X"),
        "bignum": f"{rng.randint(1_000_000, 1_400_000_000):,}",
        "coord": f"{rng.uniform(-90, 90):.6f}, {rng.uniform(-180, 180):.6f}",
    }
    return values | {
        "n1": e(1),
        "n2": e(2),
        "n12": e(12),
        "z3": "0" + e(2),
        "z4": "0" + e(3),
        "yy": f"{year % 100:02d}",
        "ss": f"{extra.randint(0, 59):02d}",
        "usps": " ".join(["9400", e(4), e(4), e(4), e(4), e(2)]),
        "isbn10": _isbn10(e(9)),
        "amount_plain": f"{extra.randint(1, 99999)}.{extra.randint(0, 99):02d}",
        "amount_fr_nbsp": amount.replace(",", "\u202f").replace(".", ","),
        "amount_ch": amount.replace(",", "'"),
        # a second (third) value of the same shape in one template
        "n1_2": e(1),
        "n1_3": e(1),
        "n2_2": e(2),
        "n3_2": e(3),
        "n4_2": e(4),
        "n4_3": e(4),
        "hh_2": f"{extra.randint(0, 23):02d}",
        "mi_2": f"{extra.randint(0, 59):02d}",
        "year_2": str(extra.randint(1990, 2030)),
    }


def benign_numbers(seed: int = 7, split: str = "train", count: int = 3000) -> list[str]:
    """Sentences whose numbers are none of phone, card, IBAN, ID: barcodes, ISBNs, dates, amounts, references."""
    rng = random.Random(seed + SPLIT_SEEDS[split])
    extra = random.Random(seed + SPLIT_SEEDS[split] + 1)
    templates = BENIGN[split]
    return [rng.choice(templates).format(**_benign_values(rng, extra)) for _ in range(count)]
