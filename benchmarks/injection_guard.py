"""injection_score (rules + the learned model), which the gateway runs on every input, vs the rules alone.

Splits (data/injection/README.md):
  train      the training family's generator (`injection_corpus`) at a seed neither fitted nor calibrated on
  heldout    a different generator (`injection_heldout`: its own wordings, personas, documents, separators, seed)
  fresh      a third generator (`injection_fresh`: new wordings, registers and carriers, its own seed), written
             after heldout had been consulted; only its aggregate rates are read
  family_d   a fourth generator (`injection_family_d`: hijack and leak in documents, jailbreaks, benign contracts,
             prose, imperatives and requests to an assistant; its own slots, carriers, separators, seed), written
             and measured before any tuning it could inform; only its aggregate rates are read
  family_e   a fifth generator (`injection_family_e`: hijack and leak in new kinds of documents, short and long,
             extraction by repeat/translate/reformat, "begin with", role play and fake completion; jailbreaks; benign
             news, recipes, agendas, letters, notices with imperatives to people, requests to an assistant), written
             and measured before the tuning of 2026-12-08; only its aggregate rates are read
  authors    three more generators by three other authors (`injection_author_t1`: workplace and institutional
             documents; `_t2`: informal and online registers, short attacks; `_t3`: long jailbreaks, instructions in
             long documents), written as training material and never trained on (it did not help: README)
  contracts  the demo's contracts (`ai_platform.demo.corpus`), all benign: every one must stay under the threshold
  docs       the paragraphs of this repo's docs/ and README: real technical prose about prompts and guards, benign
  licenses   the paragraphs of the licence texts every Debian system ships (/usr/share/common-licenses: GPL,
             Apache, MPL...): legal prose that addresses its reader as "you", benign, never trained on
  dialogue   every turn of the held-out third of chatterbot-corpus's topics (published chit-chat and questions,
             `injection_corpus.dialogue_lines` part 2), English and Chinese, benign: what a gateway's users send
  readmes    the paragraphs of the long descriptions (READMEs) of the installed Python distributions of
             `injection_published` part 2 (whole packages never trained or calibrated on), benign: Markdown, HTML,
             install commands and the imperatives of technical documentation
  messages   runs of Debian's program messages (coreutils, bash, dpkg, make, PostgreSQL's tools... the gettext
             catalogs of part 2, never trained on), in the original English and the published Chinese translation,
             benign
For each split: the share of attacks caught (score >= THRESHOLD) by class and language, and the share of benign
passages flagged, ours beside `rules` (injection_score as of BASELINE_COMMIT, the rules alone, read with
`git show`). Then the time per 4 KB input (p50, p99 over a few hundred documents padded to 4,096 characters,
attacks and benign), ours vs rules and the ratio. Targets (issue 32), on every held-out split (family_e and
authors first: no tuner wrote them), both languages: >= 95% of hijack and leak instructions in documents, >= 70% of
jailbreaks, <= 0.5% of benign flagged, p99 < 5 ms.
"""

from __future__ import annotations

import argparse
import glob
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from ai_platform.demo import corpus as demo  # noqa: E402
from ai_platform.demo import (  # noqa: E402
    injection_author_t1,
    injection_author_t2,
    injection_author_t3,
    injection_corpus,
    injection_family_d,
    injection_family_e,
    injection_fresh,
    injection_heldout,
    injection_published,
)
from ai_platform.demo.injection_corpus import Sample  # noqa: E402
from ai_platform.detectors.injection import injection_score  # noqa: E402
from benchmarks.support import SMOKE_HELP, module_at  # noqa: E402

BASELINE_COMMIT = "0d9ea90"  # the last injection.py before the learned model: the rules alone
THRESHOLD = 0.8  # guards.injection.threshold's default: at or over it, the gateway refuses the input
HELD_OUT_PART = 2  # injection_published's third that is neither trained nor calibrated on
EVAL_SEED = 3  # the training family at a seed that is neither TRAIN_SEED nor CALIBRATION_SEED


def rules_only(commit: str = BASELINE_COMMIT) -> Callable[[str], float]:
    score: Callable[[str], float] = module_at(commit, "ai_platform/detectors/injection.py").injection_score
    return score


def docs_paragraphs() -> list[str]:
    paths = [*sorted(glob.glob(str(ROOT / "docs" / "*.md"))), str(ROOT / "README.md")]
    return [p for path in paths for p in Path(path).read_text(encoding="utf-8").split("\n\n") if len(p.strip()) > 40]


def license_paragraphs() -> list[str]:
    out = []
    for path in sorted(Path("/usr/share/common-licenses").glob("*")):
        if path.is_file() and not path.is_symlink():
            text = path.read_text(encoding="utf-8", errors="replace")
            out += [p for p in text.split("\n\n") if len(p.strip()) > 40]
    return out


def count_flagged(texts: list[str], scorers: dict[str, Callable[[str], float]]) -> dict[str, int]:
    """scorer -> how many of `texts` (all benign) it scores at or over THRESHOLD."""
    return {name: sum(score(t) >= THRESHOLD for t in texts) for name, score in scorers.items()}


def rates(samples: list[Sample], scorers: dict[str, Callable[[str], float]]) -> dict[tuple[str, str], dict[str, float]]:
    """(class, language) -> {"n": count, scorer: share at or over THRESHOLD}."""
    hits: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for sample in samples:
        kind = sample.kind if sample.label else "benign"
        for key in ((kind, sample.language), (kind, "both")):
            hits[key]["n"] += 1
            for name, score in scorers.items():
                hits[key][name] += score(sample.text) >= THRESHOLD
    return {key: {k: (v if k == "n" else v / row["n"]) for k, v in row.items()} for key, row in sorted(hits.items())}


def print_table(title: str, table: dict[tuple[str, str], dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'class':<12}{'lang':<6}{'n':>6}  {'ours':>7}  {'rules':>7}  {'ratio':>6}   (baseline: the rules alone)")
    for (kind, language), row in table.items():
        ratio = f"{row['ours'] / row['rules']:.1f}x" if row["rules"] else "-"
        flagged = " (flagged)" if kind == "benign" else ""
        shares = f"{row['ours']:>7.1%}  {row['rules']:>7.1%}"
        print(f"  {kind:<12}{language:<6}{int(row['n']):>6}  {shares}  {ratio:>6}{flagged}")


def four_kb(samples: list[Sample]) -> list[str]:
    """Each sample padded with benign held-out documents to 4,096 characters (the attack stays where it was)."""
    fillers = [s.text for s in samples if not s.label]
    out = []
    for i, sample in enumerate(samples):
        text = sample.text
        j = i
        while len(text) < 4096:
            text += "\n\n" + fillers[j % len(fillers)]
            j += 7
        out.append(text[:4096])
    return out


def timing(score: Callable[[str], float], texts: list[str]) -> tuple[float, float]:
    times = []
    for text in texts:
        start = time.perf_counter()
        score(text)
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times) * 1e3, times[min(len(times) - 1, int(0.99 * len(times)))] * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    parser.add_argument(
        "--split",
        choices=(
            "train",
            "heldout",
            "fresh",
            "family_d",
            "family_e",
            "authors",
            "contracts",
            "docs",
            "licenses",
            "dialogue",
            "readmes",
            "messages",
            "all",
        ),
        default="all",
    )
    args = parser.parse_args()
    small = args.smoke
    scorers = {"ours": injection_score, "rules": rules_only()}
    heldout = injection_heldout.samples(120 if small else 2000)
    if args.split in ("train", "all"):
        print_table(
            f"train family (injection_corpus, seed {EVAL_SEED}): caught, or benign flagged, at >= {THRESHOLD}",
            rates(injection_corpus.samples(EVAL_SEED, 150 if small else 3000), scorers),
        )
    if args.split in ("heldout", "all"):
        print_table(f"held-out (injection_heldout, seed {injection_heldout.SEED})", rates(heldout, scorers))
    if args.split in ("fresh", "all"):
        fresh = injection_fresh.samples(120 if small else 2000)
        print_table(f"fresh (injection_fresh, seed {injection_fresh.SEED})", rates(fresh, scorers))
    if args.split in ("family_d", "all"):
        family_d = injection_family_d.samples(120 if small else 2000)
        print_table(f"family D (injection_family_d, seed {injection_family_d.SEED})", rates(family_d, scorers))
    if args.split in ("family_e", "all"):
        family_e = injection_family_e.samples(120 if small else 2000)
        print_table(f"family E (injection_family_e, seed {injection_family_e.SEED})", rates(family_e, scorers))
    if args.split in ("authors", "all"):
        for author, about in (
            (injection_author_t1, "workplace and institutional documents"),
            (injection_author_t2, "informal and online registers"),
            (injection_author_t3, "long-form jailbreaks and long documents"),
        ):
            samples = author.samples(120 if small else 2000)
            name = author.__name__.rsplit(".", 1)[-1]
            print_table(f"{name} ({about}, seed {author.SEED})", rates(samples, scorers))
    if args.split in ("contracts", "all"):
        contracts = demo.examples(0, 50 if small else 2000, "bench")
        worst = max(injection_score(c.text) for c in contracts)
        flagged = sum(injection_score(c.text) >= THRESHOLD for c in contracts)
        old = sum(scorers["rules"](c.text) >= THRESHOLD for c in contracts)
        print(f"\ndemo contracts: {flagged} of {len(contracts)} flagged (rules: {old}); highest score {worst:.3f}")
    if args.split in ("docs", "all"):
        docs = docs_paragraphs()[: 40 if small else None]
        n = count_flagged(docs, scorers)
        print(
            f"repo docs paragraphs (benign, never trained on): {n['ours']} of {len(docs)} flagged (rules: {n['rules']})"
        )
    if args.split in ("licenses", "all"):
        licenses = license_paragraphs()[: 40 if small else None]
        if licenses:
            n = count_flagged(licenses, scorers)
            print(
                f"licence paragraphs (/usr/share/common-licenses, benign, never trained on): {n['ours']} of"
                f" {len(licenses)} flagged ({n['ours'] / len(licenses):.1%}; rules: {n['rules']})"
            )
        else:
            print("licence paragraphs: none here (/usr/share/common-licenses is Debian's base-files)")
    if args.split in ("dialogue", "all"):
        print("\nheld-out dialogue turns (chatterbot-corpus topics never trained or calibrated on), flagged:")
        for language in ("en", "zh"):
            turns = [t for talk in injection_corpus.dialogue_lines(language, 2) for t in talk][: 60 if small else None]
            n = count_flagged(turns, scorers)
            print(f"  {language}: ours {n['ours']} of {len(turns)} ({n['ours'] / len(turns):.1%}); rules {n['rules']}")
    if args.split in ("readmes", "all"):
        readmes = injection_published.readme_paragraphs(HELD_OUT_PART)[: 60 if small else None]
        if not readmes:
            print(f"\npackage README paragraphs: no installed distribution of part {HELD_OUT_PART} has a description")
        else:
            n = count_flagged(readmes, scorers)
            print(
                f"\npackage README paragraphs (installed distributions of part {HELD_OUT_PART}, never trained or"
                f" calibrated on): {n['ours']} of {len(readmes)} flagged ({n['ours'] / len(readmes):.1%});"
                f" rules {n['rules']}"
            )
    if args.split in ("messages", "all"):
        print(f"Debian's program messages (zh_CN catalogs of part {HELD_OUT_PART}, never trained on), flagged:")
        for language in ("en", "zh"):
            passages = injection_published.catalog_passages(
                random.Random(EVAL_SEED), HELD_OUT_PART, language, 60 if small else 1000
            )
            if not passages:
                print(f"  {language}: no readable catalog of part {HELD_OUT_PART} in {injection_published.CATALOGS}")
                continue
            n = count_flagged(passages, scorers)
            print(
                f"  {language}: ours {n['ours']} of {len(passages)} ({n['ours'] / len(passages):.1%});"
                f" rules {n['rules']}"
            )
    texts = four_kb(heldout[: 40 if small else 400])
    for text in texts[:5]:
        injection_score(text)  # the model file is loaded once per process: not part of a request
    ours_p50, ours_p99 = timing(injection_score, texts)
    old_p50, old_p99 = timing(scorers["rules"], texts)
    print(f"\ntime per 4 KB input ({len(texts)} inputs): ours p50 {ours_p50:.2f} ms p99 {ours_p99:.2f} ms;")
    print(f"  rules p50 {old_p50:.2f} ms p99 {old_p99:.2f} ms; ratio p99 {ours_p99 / old_p99:.1f}x")


if __name__ == "__main__":
    main()
