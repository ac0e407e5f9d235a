"""find_pii, which the gateway runs on every reply, vs the recognizers it replaced and a plain `re` scan.

Texts (seeded, the same for all three):
  contracts  the demo corpus's contracts and their JSON answers, Chinese and English (no PII)
  long       40 of those contracts joined (about 6,000 characters: a long reply)
  pii        the test corpus's sentences (support/pii_corpus.py): identifiers printed compact,
             grouped, full-width, valid and with a broken check, Chinese and English
Timed per text, best of --repeat passes over each set:
  ours       ai_platform.detectors.pii.find_pii (fold, grouped windows, python-stdnum checks)
  main       find_pii as of MAIN_COMMIT (issue 32's first pass), read with `git show`
  previous   find_pii as of BASELINE_COMMIT (one regex per kind, its own validators), read with `git show`
  re         one `re.finditer` of a digit-run pattern over the text: the least a scan costs
On the pii set it also prints what each finds: valid values at their exact span, broken ones flagged.
Per locale (issue 32), on each split of the locale corpus (benchmarks/support/pii_corpus.py): recall of
phones, cards and IBANs at their exact span, ours beside `main` (find_pii as of MAIN_COMMIT, issue 32's first
pass) with the ratio ours/main, and `before` (BEFORE_COMMIT, the last pii.py before issue 32); and the share
of benign numbers (barcodes, ISBNs, dates, amounts, references) each flags. Splits: `train` (what the tests
hold to 99%), `seen` (the first held-out split, read to add layout classes to train), `heldout` (the second,
its generator's two defects fixed, then read to find the detector's misses: no longer held out either) and
`fresh` (the held-out generator on a new seed, scored after tuning; its two misses then read and fixed) and
`fresh2` (another seed, scored once at the end). `--split` shows one; all by default.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from ai_platform.demo import corpus as demo  # noqa: E402
from ai_platform.detectors.pii import find_pii  # noqa: E402
from benchmarks.support import SMOKE_HELP, module_at  # noqa: E402
from benchmarks.support.pii_corpus import (  # noqa: E402
    IBAN_LOCALES,
    LOCALES,
    SPLITS,
    benign_numbers,
    corpus,
    locale_corpus,
)

BASELINE_COMMIT = "2996a20"  # the last pii.py before issue 22
BEFORE_COMMIT = "afb9656"  # the last pii.py before issue 32 (foreign phones, every card scheme, IBAN groupings)
MAIN_COMMIT = "0d9ea90"  # issue 32's first pass: phonenumbers, the IIN table, IBAN groupings
FLOOR = re.compile(r"[0-9][0-9 .-]{11,}[0-9Xx]")


def previous(commit: str = BASELINE_COMMIT, path: str = "ai_platform/evaluation/pii.py") -> Callable[[str], list[Any]]:
    scan: Callable[[str], list[Any]] = module_at(commit, path).find_pii
    return scan


def floor(text: str) -> list[re.Match[str]]:
    return list(FLOOR.finditer(text))


def per_text_us(scan: Callable[[str], object], texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for text in texts:
            scan(text)
        best = min(best, time.perf_counter() - start)
    return best / len(texts) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    args = parser.parse_args()
    contracts, cases, rounds, benign = 400, corpus(seed=7), 12, 3000
    if args.smoke:
        args.repeat, contracts, cases, rounds, benign = 1, 40, cases[:: max(1, len(cases) // 200)], 1, 200
    examples = demo.examples(0, contracts, "bench")
    sets = {
        "contracts": [e.text for e in examples] + [json.dumps(e.answer, ensure_ascii=False) for e in examples],
        "long": ["\n".join(e.text for e in examples[i : i + 40]) for i in range(0, contracts, 40)],
        "pii": [c.text for c in cases],
    }
    old = previous()
    main_scan = previous(MAIN_COMMIT, "ai_platform/detectors/pii.py")
    header = ("set", "texts", "chars", "ours us", "main us", "ratio", "baseline us", "ratio", "re us", "ratio")
    print("{:10s} {:>6s} {:>6s} {:>9s} {:>9s} {:>6s} {:>12s} {:>6s} {:>7s} {:>6s}".format(*header))
    for name, texts in sets.items():
        ours_us = per_text_us(find_pii, texts, args.repeat)
        main_us = per_text_us(main_scan, texts, args.repeat)
        old_us = per_text_us(old, texts, args.repeat)
        re_us = per_text_us(floor, texts, args.repeat)
        chars = sum(map(len, texts)) / len(texts)
        print(
            f"{name:10s} {len(texts):6d} {chars:6.0f} {ours_us:9.1f} {main_us:9.1f} {ours_us / main_us:6.2f}"
            f" {old_us:12.1f} {ours_us / old_us:6.2f} {re_us:7.1f} {ours_us / re_us:6.1f}"
        )
    valid = [c for c in cases if c.valid]
    broken = [c for c in cases if not c.valid]
    for label, scan in (("ours", find_pii), ("previous", old)):
        hits = sum(any((f.kind, f.start, f.end) == (c.kind, c.start, c.end) for f in scan(c.text)) for c in valid)
        flagged = sum(bool(scan(c.text)) for c in broken)
        found = f"{hits}/{len(valid)} valid found ({hits / len(valid):.1%})"
        print(f"{label}: {found}, {flagged}/{len(broken)} broken flagged")
    baselines = {"main": main_scan}
    baselines["before"] = previous(BEFORE_COMMIT, "ai_platform/detectors/pii.py")
    splits = ("heldout",) if args.smoke else SPLITS if args.split == "all" else (args.split,)
    for split in splits:
        locales(baselines, split, rounds, benign)


def locales(baselines: dict[str, Callable[[str], list[Any]]], split: str, rounds: int, benign: int) -> None:
    """Recall per locale and kind, ours beside each baseline, on one split of the locale corpus; benign numbers
    flagged. `ratio`: ours / main."""
    cases = locale_corpus(seed=7, split=split, rounds=rounds)
    scans = {"ours": find_pii, **baselines}
    hits: dict[tuple[str, str, str], list[bool]] = {}
    for label, scan in scans.items():
        for c in cases:
            found = any((f.kind, f.start, f.end) == (c.kind, c.start, c.end) for f in scan(c.text))
            hits.setdefault((label, c.locale, c.kind), []).append(found)

    def rate(label: str, locale: str, kind: str) -> float | None:
        got = hits.get((label, locale, kind))
        return sum(got) / len(got) if got else None

    def cell(value: float | None) -> str:
        return f"{value:7.1%}" if value is not None else f"{'-':>7s}"

    print(f"\nrecall per locale, {split} split ({len(cases)} cases): ours | main ({MAIN_COMMIT}) | ratio ours/main")
    print(f"  | before ({BEFORE_COMMIT}, no phones outside CN)")
    names = ("phone", "card", "iban")
    print(f"{'locale':8s} {' '.join(f'{n:>7s}' for n in names * 3)} | {' '.join(f'{n:>7s}' for n in names)}")
    for locale in dict.fromkeys((*LOCALES, *IBAN_LOCALES)):
        kinds = ("phone", "credit_card", "iban")
        ours = [rate("ours", locale, kind) for kind in kinds]
        main = [rate("main", locale, kind) for kind in kinds]
        ratio = [f"{o / m:7.2f}" if o is not None and m else f"{'-':>7s}" for o, m in zip(ours, main, strict=True)]
        before = [cell(rate("before", locale, kind)) for kind in kinds]
        row = [*map(cell, ours), *map(cell, main), *ratio]
        print(f"{locale:8s} {' '.join(row)} | {' '.join(before)}")
    texts = benign_numbers(seed=7, split=split, count=benign)
    for label, scan in scans.items():
        flagged = sum(bool(scan(t)) for t in texts)
        print(f"{label}: {flagged}/{len(texts)} benign numbers flagged ({flagged / len(texts):.2%})")


if __name__ == "__main__":
    main()
