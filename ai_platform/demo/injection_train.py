"""Train the injection model (`injection_model.npz`) from the generated corpus, deterministically.

    python -m ai_platform.demo.injection_train [--out PATH]

Corpus: `injection_corpus.samples` with TRAIN_SEED (fit) and CALIBRATION_SEED (Platt scaling), with published
benign text beside it (`injection_published`: package READMEs and Debian's English and Chinese program messages,
part 0 for the fit, part 1 for calibration, one passage per PUBLISHED_SHARE generated samples), cut
into the scorer's own windows (`injection_model.windows`): a window of an attack sample is positive
when it holds most of the injected span (all windows of a standalone attack), a window that misses
the span is benign, one that cuts it is left out. The held-out splits (`injection_heldout`, `injection_fresh`,
`injection_family_d`, `injection_family_e`, `injection_author_t1`-`t3`, part 2 of `injection_published`) are not
read here. scikit-learn is a training dependency only; scoring needs numpy alone.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ai_platform.demo import injection_corpus, injection_published
from ai_platform.demo.injection_corpus import Sample
from ai_platform.detectors import injection_model

TRAIN_SEED, TRAIN_COUNT = 1, 32000
CALIBRATION_SEED, CALIBRATION_COUNT = 2, 4000
STOP_DF = 0.02
C = 1.0  # inverse L2 strength, chosen by cross-validation on the training split only
# One published passage per PUBLISHED_SHARE generated samples: README paragraphs (as many as part 0 has, if fewer:
# all 2,626 here) and Chinese program messages (English messages half as many). Without them the model flagged 3.9%
# of Debian's Chinese messages and 1.1% of the README paragraphs it never saw (part 2): markup, install commands
# and UI text were absent from the corpus.
PUBLISHED_SHARE = 8


def corpus(seed: int, count: int, part: int) -> list[Sample]:
    """The generated samples of `seed` and, beside them, published benign text of `part` (0 fit, 1 calibration)."""
    out = injection_corpus.samples(seed, count, prose_half=part)
    rng = random.Random(seed)
    readmes = injection_published.readme_paragraphs(part)
    out += [Sample(p, 0, "readme", "en") for p in rng.sample(readmes, min(len(readmes), count // PUBLISHED_SHARE))]
    for language, share in (("zh", PUBLISHED_SHARE), ("en", 2 * PUBLISHED_SHARE)):
        out += [
            Sample(p, 0, "messages", language)
            for p in injection_published.catalog_passages(rng, part, language, count // share)
        ]
    return out


def window_rows(samples: list[Sample]) -> tuple[list[npt.NDArray[np.int64]], npt.NDArray[np.int64]]:
    rows, labels = [], []
    for sample in samples:
        norm = injection_model.prepare(sample.text)
        span = None
        if sample.span is not None:
            s, e = sample.span
            span = (len(injection_model.prepare(sample.text[:s])), len(injection_model.prepare(sample.text[:e])))
        feats = injection_model.features(norm)
        for start, end in injection_model.windows(norm):
            if not sample.label:
                label = 0
            elif span is None:
                label = 1
            else:
                overlap = min(end, span[1]) - max(start, span[0])
                if overlap <= 0:
                    label = 0
                elif overlap >= 0.6 * min(span[1] - span[0], end - start):
                    label = 1
                else:
                    continue
            rows.append(injection_model.window_buckets(feats, start, end))
            labels.append(label)
    return rows, np.array(labels, dtype=np.int64)


def matrix(rows: list[npt.NDArray[np.int64]]) -> Any:
    from scipy.sparse import csr_matrix

    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    # each row's features weigh 1 / sqrt(max(its length, MIN_FEATURES)), as at scoring: one repeat, not a list of
    # 350,000 small arrays (the matrix took 14 s of the training's 45)
    data = np.repeat(1.0 / np.sqrt(np.maximum(lengths, injection_model.MIN_FEATURES)), lengths)
    m = csr_matrix((data, indices, indptr), shape=(len(rows), 1 << injection_model.BITS))
    m.sum_duplicates()
    return m


def corpus_sources() -> dict[str, str]:
    """What the corpus reads from outside this repo, by version: the interpreter (its reference topics,
    docstrings and licence text), the dialogue package and the published benign text (digests). Another version
    is another corpus, so the same code trains another model; the reproduction test says so instead of failing
    on a checksum."""
    import platform
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        "chatterbot-corpus": version("chatterbot-corpus"),
        **injection_published.sources(),
    }


def train(c: float = C, stop_df: float = STOP_DF) -> injection_model.Model:
    from scipy.sparse import diags
    from sklearn.linear_model import LogisticRegression

    rows, y = window_rows(corpus(TRAIN_SEED, TRAIN_COUNT, part=0))
    x = matrix(rows)
    # Stop features: n-grams in more than STOP_DF of all windows ("the", "and", "e ", "的") say how a text is
    # written, not what it asks; left in, the generator's style becomes the model's evidence. They keep a
    # weight of 0 (and still count in a window's length, as at run time).
    df = np.asarray((x > 0).sum(axis=0)).ravel()
    keep = (df <= stop_df * len(y)).astype(np.float64)
    fit = LogisticRegression(C=c, max_iter=2000, solver="lbfgs", class_weight="balanced")
    fit.fit(x @ diags(keep), y)
    weights = (fit.coef_[0] * keep).astype(np.float32)
    bias = float(fit.intercept_[0])
    model = injection_model.Model(weights, bias, 1.0, 0.0, {})
    cal_rows, cal_y = window_rows(corpus(CALIBRATION_SEED, CALIBRATION_COUNT, part=1))
    logits = np.array(
        [bias + float(weights[r].sum()) / np.sqrt(max(len(r), injection_model.MIN_FEATURES)) for r in cal_rows]
    )
    platt = LogisticRegression(C=1e6, solver="lbfgs")
    platt.fit(logits.reshape(-1, 1), cal_y)
    meta = {
        "train": {"seed": TRAIN_SEED, "samples": TRAIN_COUNT, "windows": len(y), "attack_windows": int(y.sum())},
        "calibration": {"seed": CALIBRATION_SEED, "samples": CALIBRATION_COUNT, "windows": len(cal_y)},
        "C": c,
        "stop_df": stop_df,
        "stop_features": int((keep == 0).sum()),
        "sources": corpus_sources(),
    }
    return injection_model.Model(
        weights, bias, round(float(platt.coef_[0][0]), 6), round(float(platt.intercept_[0]), 6), model.meta | meta
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=injection_model.MODEL_PATH)
    parser.add_argument("--c", type=float, default=C, help="inverse L2 strength (the shipped model: the default)")
    parser.add_argument("--stop-df", type=float, default=STOP_DF, help="stop-feature document frequency")
    args = parser.parse_args(argv)
    model = train(args.c, args.stop_df)
    injection_model.save(args.out, model)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes): {model.meta}", file=sys.stderr)


if __name__ == "__main__":
    main()
