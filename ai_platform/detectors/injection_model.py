"""The learned half of the injection score: a linear model on hashed character and word n-grams.

Why this shape: it has to answer on the gateway's request path (p99 under 5 ms for 4 KB on 2 cores),
in Chinese and English, offline, with no model download. A logistic regression over hashed n-grams
does: the features are computed here in numpy (a polynomial rolling hash of the character n-grams,
CRC-32 of the Latin word unigrams and bigrams), the weights are one float32 array shipped with the
package (`injection_model.npz`, written by `python -m ai_platform.demo.injection_train`, which
trains it with scikit-learn on the generated corpus, `injection_corpus.py`, and published benign text,
`injection_published.py`: data/injection/README.md).

The model never reads the attacks' names (`TOPIC_WORDS`: "system prompt", "developer mode", "jailbreak",
"DAN", 系统提示, 越狱...): `prepare` deletes them before the features, in training and in scoring (feature
version 3), so what it learns is the form of an instruction to the assistant, and `injection.py`'s vocabulary
rules, which do read them, are separate evidence (version 2 read them too, and a sentence about a "system
prompt" scored up to 1.0 from the topic alone).

Long inputs are scored by window: the normalized text is cut into sentences and lines, each window
is a run of consecutive segments up to WINDOW bytes of UTF-8 (one per starting segment; a longer segment
is cut into overlapping chunks), plus every segment of at least ALONE bytes on its own, and the text's
score is its best window's. An instruction hidden in a long benign document is then judged on its own, not
diluted by the pages around it nor by the sentences after it (version 1 had no single-segment windows: a
hijack followed by a paragraph of contract was read together with it, and held-out recall was 10-30 points
lower). Segments under ALONE bytes ("Tell me a joke.") are read with the segments after them, not alone (alone,
short ordinary imperatives looked like attacks and flagged published dialogue), unless nothing follows within
the window: the last segment of a text is always a window of its own. The features of
a window are the n-grams that start inside it (character n-grams that also end inside it), counted
and divided by the square root of their number (at least MIN_FEATURES); every window's sum comes from
prefix sums, so the cost is linear in the text, not in the number of windows.

Calibration: the window's logit goes through Platt scaling fitted on a separate calibration split (generated
samples and published benign text; about one window in seven is an attack's), so a score of 0.8 means that
among calibration windows scoring about 0.8, about 80% were injections. Real traffic has far fewer
attacks than that split, so a score is a statement about how injection-like the text is, not the
probability that a random request is an attack.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import string
import unicodedata
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ai_platform.errors import DetectorModelError

MODEL_PATH = Path(__file__).with_name("injection_model.npz")
FEATURE_VERSION = 5  # bump when featurization or windowing changes: a model file of another version is refused
BITS = 18
CHAR_NGRAMS = (2, 3, 4, 5)
WINDOW = 200  # UTF-8 bytes per window (segments are joined up to this)
ALONE = 48  # UTF-8 bytes: a segment at least this long is also a window of its own
# A window's feature sum is divided by sqrt(max(its number of features, MIN_FEATURES)), in training and scoring
# (feature version 4). With the plain square root a window of a few features was judged on one or two n-grams at
# full strength: "降息" (rates cut, two characters, one feature) scored 1.00 and "加息" 0.996. A text that short
# holds too little evidence to be refused on; 48 features is about a 12-character English phrase or a Chinese
# clause of 15 characters, under which a window's logit shrinks by sqrt(features / 48).
MIN_FEATURES = 48

_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
# Latin look-alikes from Cyrillic and Greek (Wei et al. 2023's homoglyph smuggling), folded before hashing.
_CONFUSABLES = str.maketrans(
    "аеорсхіуѕјԁһԛԝаАВЕКМНОРСТХІЈЅαοντιρκΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcxiysjdhqwaabekmhopctxijsaovtipkabezhikmnoptyx",
)
_SEGMENT_END = re.compile(r"[\n.!?;。！？；]+")
# ...except a single Latin ". ! ? ;" with an ASCII letter, digit or "_" right after it (feature version 5): that is
# "legal@example.com", "v2.4.1" or "3.5", not a sentence's end. Version 4 cut there too, so an e-mail header line
# came apart into fragments ("to: legal@example.") that the scorer then judged as sentences of their own. Checked
# after the match rather than with a lookahead in the pattern: the regex's own time 0.09 ms per 4 KB instead of
# 0.16; `windows` as a whole takes 0.03 ms more than with version 4's cuts. Chinese after the
# mark still cuts ("停止!请...": NFKC turns the full-width ！ into "!").
_INSIDE_A_WORD = frozenset(string.ascii_letters + string.digits + "_")
_WORD = re.compile(r"[a-z0-9']+")
_PRIME = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(64 - BITS)
_ZERO = np.zeros(1)


# Topic words: the names of the attacks, which benign text about security uses just as often ("the router's
# developer mode", "our system prompt guidelines", "jailbreak detection"). The vocabulary rules of
# `injection.py` read them (TOPIC_WORDS is their one source: each alternative with a word boundary before it);
# the model does not: `prepare` deletes them, in training and in scoring alike, so the model's score is evidence
# of an instruction apart from the topic, and the two are not counted twice. Upper-case "DAN" is read in the
# text as written ("Dan" is a name).
TOPIC_WORDS: dict[str, tuple[str, ...]] = {
    "system_prompt": (r"system\s+prompt\b",),
    "developer_mode": (r"(?:developer|god)\s+mode\b",),  # not "debug/admin mode": software contracts
    "jailbreak": (r"jailbr(?:eak|oken)\w*", r"do\s+anything\s+now\b"),
    "zh_system_prompt": ("系统提示",),
    "zh_developer_mode": ("开发者模式", "越狱", "上帝模式"),
}
TOPIC_CASED = r"\bDAN\b"
# One pattern per alternative, each starting with a literal so that the regex engine skips ahead to it (an
# alternation, or a leading \b, is tried at every position: 0.3 ms per 4 KB instead of 0.04). Without the
# leading \b a word that merely ends in a topic word loses it too: the model may read less, never more.
# Chinese ones also match with whitespace between the characters ("开 发 者").
_TOPIC = tuple(
    re.compile(r"\s*".join(alt) if name.startswith("zh_") else alt)
    for name, alts in TOPIC_WORDS.items()
    for alt in alts
)
_TOPIC_CASED = re.compile(TOPIC_CASED)


def prepare(text: str) -> str:
    """NFKC, invisible characters out, look-alike letters folded, topic words out, lowercase, spaces collapsed."""
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    text = _TOPIC_CASED.sub(" ", text.translate(_CONFUSABLES)).lower()
    for topic in _TOPIC:
        text = topic.sub(" ", text)
    return re.sub(r"[^\S\n]+", " ", text)


def windows(norm: str) -> list[tuple[int, int]]:
    """[start, end) spans of `norm`: for each segment, the run of segments from it that fits WINDOW bytes.

    Measured in UTF-8 bytes, so a window holds about as much text in either language: a Chinese
    character (3 bytes) says about what an English word of 3 letters does."""
    cuts = [
        m.end()
        for m in _SEGMENT_END.finditer(norm)
        if m.end() - m.start() > 1
        or norm[m.start()] not in ".!?;"
        or m.end() == len(norm)
        or norm[m.end()] not in _INSIDE_A_WORD
    ]
    bounds = [0, *(c for c in cuts if c < len(norm)), len(norm)]
    segments = [(a, b, len(norm[a:b].encode())) for a, b in itertools.pairwise(bounds) if b > a]
    spans: list[tuple[int, int]] = []
    for i, (start, end, size) in enumerate(segments):
        if size > WINDOW:  # a long segment: overlapping chunks of about WINDOW bytes
            chars = max(8, WINDOW * (end - start) // size)
            step = max(4, chars // 2)
            spans += [(s, min(s + chars, end)) for s in range(start, max(start + 1, end - step), step)]
            continue
        j, total = i, size
        while j + 1 < len(segments) and total + segments[j + 1][2] <= WINDOW:
            j += 1
            total += segments[j][2]
        spans.append((start, segments[j][1]))
        if j > i and size >= ALONE:  # and the segment alone: an instruction is not diluted by the text after it
            spans.append((start, end))
    return spans or [(0, len(norm))]


@dataclass(frozen=True)
class Features:
    """Every feature of a normalized text: its hash bucket and where it starts; char n-grams by length."""

    chars: dict[int, npt.NDArray[np.int64]]  # n -> bucket of the n-gram starting at each position
    word_starts: npt.NDArray[np.int64]
    word_buckets: npt.NDArray[np.int64]


def _bucket(hashes: npt.NDArray[np.uint64], salt: np.uint64 | npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    return ((hashes ^ salt) * _MIX >> _SHIFT).astype(np.int64)


def features(norm: str) -> Features:
    codes = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    rolled = []
    rolling = np.zeros(len(codes), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for n in CHAR_NGRAMS:
            if len(codes) < n:
                break
            rolling = rolling[: len(codes) - n + 1] * _PRIME + codes[n - 1 :]
            rolled.append(rolling)
        # every n bucketed in one pass, each salted with its n (numpy's cost is per call: a short input is all calls)
        sizes = [len(r) for r in rolled]
        salts = np.repeat(np.array(CHAR_NGRAMS[: len(rolled)], dtype=np.uint64), sizes)
        flat = _bucket(np.concatenate(rolled), salts) if rolled else np.zeros(0, dtype=np.int64)
    bounds = list(itertools.accumulate(sizes, initial=0))
    chars = {n: flat[a:b] for n, a, b in zip(CHAR_NGRAMS, bounds, bounds[1:], strict=False)}
    words = [(m.start(), m.group()) for m in _WORD.finditer(norm)]
    starts = [s for s, _ in words] + [s for s, _ in words[:-1]]
    crcs = [zlib.crc32(w.encode()) for _, w in words]
    crcs += [zlib.crc32(f"{a} {b}".encode()) | (1 << 32) for (_, a), (_, b) in itertools.pairwise(words)]
    with np.errstate(over="ignore"):
        word_buckets = _bucket(np.array(crcs, dtype=np.uint64), np.uint64(99)) if crcs else np.zeros(0, dtype=np.int64)
    return Features(chars, np.array(starts, dtype=np.int64), word_buckets)


def window_buckets(feats: Features, start: int, end: int) -> npt.NDArray[np.int64]:
    """The buckets of the features inside one window (what training counts; scoring sums the same)."""
    parts = [buckets[start : max(start, end - n + 1)] for n, buckets in feats.chars.items()]
    inside = (feats.word_starts >= start) & (feats.word_starts < end)
    parts.append(feats.word_buckets[inside])
    return np.concatenate(parts)


@dataclass(frozen=True)
class Model:
    weights: npt.NDArray[np.float32]
    bias: float
    platt_a: float
    platt_b: float
    meta: dict[str, object]

    def window_logits(self, norm: str) -> tuple[list[tuple[int, int]], npt.NDArray[np.float64]]:
        """Each window's raw logit: bias + sum of its features' weights / sqrt(max(their number, MIN_FEATURES))."""
        spans = windows(norm)
        if not norm:
            return spans, np.full(len(spans), self.bias)
        feats = features(norm)
        starts = np.array([s for s, _ in spans], dtype=np.int64)
        ends = np.array([e for _, e in spans], dtype=np.int64)
        total = np.zeros(len(spans))
        count = np.zeros(len(spans))
        # ndarray methods and np.minimum rather than np.cumsum, np.clip, np.searchsorted: the same arithmetic
        # without numpy's Python-level wrappers (np.clip alone took ~10 us a call; a short input is ~60 calls)
        for n, buckets in feats.chars.items():
            prefix = np.concatenate((_ZERO, self.weights[buckets].cumsum(dtype=np.float64)))
            last = np.minimum(np.maximum(starts, ends - n + 1), len(buckets))  # starts >= 0: never below 0
            first = np.minimum(starts, last)
            total += prefix[last] - prefix[first]
            count += last - first
        if len(feats.word_buckets):
            order = feats.word_starts.argsort(kind="stable")
            word_starts = feats.word_starts[order]
            prefix = np.concatenate((_ZERO, self.weights[feats.word_buckets[order]].cumsum(dtype=np.float64)))
            lo = word_starts.searchsorted(starts, side="left")
            hi = word_starts.searchsorted(ends, side="left")
            total += prefix[hi] - prefix[lo]
            count += hi - lo
        return spans, self.bias + total / np.sqrt(np.maximum(count, float(MIN_FEATURES)))

    def calibrate(self, logits: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        result: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-(self.platt_a * logits + self.platt_b)))
        return result

    def score(self, text: str) -> float:
        """The calibrated score of the text's most injection-like window, in [0, 1]."""
        _, logits = self.window_logits(prepare(text))
        return float(self.calibrate(logits).max())


def digest(weights: npt.NDArray[np.float32], bias: float, platt_a: float, platt_b: float) -> str:
    h = hashlib.sha256(np.ascontiguousarray(weights, dtype="<f4").tobytes())
    h.update(json.dumps([bias, platt_a, platt_b]).encode())
    return h.hexdigest()


def save(path: Path, model: Model) -> None:
    meta = dict(model.meta, feature_version=FEATURE_VERSION, bits=BITS, char_ngrams=list(CHAR_NGRAMS), window=WINDOW)
    meta["alone"] = ALONE
    meta["min_features"] = MIN_FEATURES
    meta["sha256"] = digest(model.weights, model.bias, model.platt_a, model.platt_b)
    meta.update(bias=model.bias, platt_a=model.platt_a, platt_b=model.platt_b)
    with path.open("wb") as out:
        np.savez_compressed(out, weights=model.weights.astype("<f4"), meta=np.array(json.dumps(meta, sort_keys=True)))


def load(path: Path = MODEL_PATH) -> Model:
    """The model file, checked: its feature version matches this code and its checksum its contents."""
    try:
        with np.load(path, allow_pickle=False) as data:
            weights = np.asarray(data["weights"], dtype=np.float32)
            meta = json.loads(str(data["meta"]))
    except (OSError, ValueError, KeyError, EOFError, zlib.error) as exc:
        raise DetectorModelError(f"{path}: not a readable injection model file ({exc})") from exc
    except Exception as exc:  # zipfile.BadZipFile and friends from a truncated or overwritten file
        raise DetectorModelError(f"{path}: not a readable injection model file ({type(exc).__name__}: {exc})") from exc
    if not isinstance(meta, dict) or meta.get("feature_version") != FEATURE_VERSION or meta.get("bits") != BITS:
        raise DetectorModelError(
            f"{path}: model built for feature version {meta.get('feature_version') if isinstance(meta, dict) else '?'}"
            f", this code reads version {FEATURE_VERSION}: retrain (python -m ai_platform.demo.injection_train)"
        )
    if weights.shape != (1 << BITS,):
        raise DetectorModelError(f"{path}: {weights.shape[0]} weights, expected {1 << BITS}")
    bias, platt_a, platt_b = float(meta["bias"]), float(meta["platt_a"]), float(meta["platt_b"])
    if digest(weights, bias, platt_a, platt_b) != meta.get("sha256"):
        raise DetectorModelError(f"{path}: checksum mismatch (the file was changed after training)")
    return Model(weights, bias, platt_a, platt_b, meta)


@cache
def shipped() -> Model:
    """The model that ships with the package, loaded once per process."""
    return load(MODEL_PATH)
