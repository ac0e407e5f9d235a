"""Published benign text for the injection detector: what real people wrote, not our generators.

Two sources this machine already holds, neither of them about prompt injection:

- **Package READMEs**: the long descriptions (`Description` / message body of the `METADATA` file) of the Python
  distributions installed beside this package, the platform environment pinned by `requirements/platform.lock`:
  Markdown and reStructuredText with badges, HTML, links, install commands, code and the imperatives of
  technical documentation ("Run the following...", "Ignore the warning...", "Output the result to..."). English.
- **Debian's gettext catalogs** (`/usr/share/locale/zh_CN/LC_MESSAGES/*.mo`): every user-facing message of git,
  apt, coreutils, PostgreSQL, glibc... in the original English and its published Simplified Chinese translation
  ("忽略 %s", "请使用 'git add <文件>' 标记解决方案", "用法：%s [选项]"): short imperative UI text in both languages,
  including the words attacks use (忽略, 覆盖, 输出, 指令, prompt, ignore, override).

Each source is split into three parts by a stable hash of the distribution's or catalog's name (CRC-32 mod 3):
part 0 is training material, part 1 calibration, part 2 is never trained or calibrated on and is what
`benchmarks/injection_guard.py --split readmes/messages` measures. Whole packages and catalogs fall on one side;
the same boilerplate can still stand in packages on both sides (a licence paragraph, "Usage: %s [OPTION]..."):
105 of the 1,859 distinct README paragraphs of part 2 and 361 of its 11,353 messages are also in parts 0 or 1
here, and the benchmark counts them with the rest.

Both depend on the machine: another lock file or another Debian release is another corpus, so `sources()`
digests what was read and the model records it (data/injection/README.md).
"""

from __future__ import annotations

import gettext
import hashlib
import random
import struct
import zlib
from functools import cache
from importlib.metadata import distributions
from pathlib import Path

CATALOGS = Path("/usr/share/locale/zh_CN/LC_MESSAGES")
OWN_DISTRIBUTION = "ai-platform"  # its README is this repo's, measured as the `docs` split
MIN_PARAGRAPH = 40  # characters: shorter README paragraphs are badges, headings and rules
MAX_PARAGRAPH = 2000


def part_of(name: str) -> int:
    """0 training, 1 calibration, 2 held out: the side of the line a whole package or catalog falls on."""
    return zlib.crc32(name.encode()) % 3


@cache
def _readmes() -> tuple[tuple[str, str, str], ...]:
    """(name, version, long description) of each installed distribution, by name, this package's own left out."""
    seen: dict[str, tuple[str, str, str]] = {}
    for dist in distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if not name or name == OWN_DISTRIBUTION or name in seen:
            continue
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""  # type: ignore[attr-defined]
        seen[name] = (name, dist.version, str(body))
    return tuple(seen[name] for name in sorted(seen))


def readme_paragraphs(part: int) -> list[str]:
    """The paragraphs (blank-line separated, over MIN_PARAGRAPH characters) of the READMEs in `part`."""
    out = []
    for name, _, body in _readmes():
        if part_of(name) == part:
            out += [p.strip()[:MAX_PARAGRAPH] for p in body.split("\n\n") if len(p.strip()) > MIN_PARAGRAPH]
    return out


@cache
def _catalogs() -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """(catalog name, its (English, Chinese) messages in file order) for Debian's zh_CN catalogs; the ISO code
    lists (country and language names) are left out: names, not sentences."""
    out = []
    for path in sorted(CATALOGS.glob("*.mo")) if CATALOGS.is_dir() else []:
        if path.stem.startswith("iso_"):
            continue
        try:
            with path.open("rb") as handle:
                catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except (OSError, ValueError, LookupError, struct.error):  # not a catalog, truncated, or an unknown charset
            continue
        pairs = []
        for key, value in catalog.items():
            english = key[0] if isinstance(key, tuple) else key  # plural forms: (msgid, n)
            if english and isinstance(value, str) and value.strip():
                pairs.append((english.strip(), value.strip()))
        out.append((path.stem, tuple(pairs)))
    return tuple(out)


def catalog_messages(part: int) -> list[tuple[str, str]]:
    return [pair for name, pairs in _catalogs() if part_of(name) == part for pair in pairs]


def catalog_passages(rng: random.Random, part: int, language: str, count: int) -> list[str]:
    """`count` runs of one to five messages adjacent in `part`'s catalogs (a catalog keeps them sorted by their
    English text, so a run is a few neighbouring options, errors or usage lines, now and then across two catalogs),
    in English (the msgids) or Chinese (the translations)."""
    messages = catalog_messages(part)
    if not messages:
        return []
    side = 0 if language == "en" else 1
    out = []
    for _ in range(count):
        start = rng.randrange(len(messages))
        out.append("\n".join(pair[side] for pair in messages[start : start + rng.randint(1, 5)]))
    return out


def sources() -> dict[str, str]:
    """What was read, digested: the distributions (name and version) and the catalogs (name and size)."""
    readmes = hashlib.sha256(repr([(name, version) for name, version, _ in _readmes()]).encode()).hexdigest()
    catalogs = hashlib.sha256(repr([(name, len(pairs)) for name, pairs in _catalogs()]).encode()).hexdigest()
    return {"readmes": readmes[:16], "debian-zh_CN-catalogs": catalogs[:16]}
