"""Which clause kinds of a retrieval corpus a text shows, and which a reply raises: the trust model's view of a
miss (a kind the corpus finds in the input that the reply does not raise).

A corpus entry is a `{"text": ..., "kind": ...}` line of the retrieval corpus (`feedback.retrieval_corpus`, the
one the gateway re-asks with); an entry without a `kind` is a kind of its own. Text is compared as the
retriever compares it, by character bigrams (Chinese and English alike, no tokenizer or model), with
whitespace and digits left out (amounts, days and dates vary where the wording does not).

- An input sentence (split at line ends and sentence punctuation) shows the kind of the entry that holds the
  largest share of the sentence's bigrams, when that share is at least `FOUND` (0.8). On the demo's
  generator every risky wording of every kind scores 1.0 and every safe wording at most 0.73 (the
  safe payment, penalty and warranty clauses share most words with the risky ones).
- A reply's risk point (its fields' text) raises the kind of the entry that holds the largest share of its
  bigrams, when that share is at least `RAISED` (0.5): a point names the risk and its basis in its own words.

On the request path: numpy over the text's code points, one sort, no loop over sentences or entries; 0.2 to
0.4 ms of CPU for a 4 KB input on a loaded 2-core machine (`tests/test_trust_features.py` holds it under 1 ms).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FOUND = 0.8  # share of an input sentence's bigrams an entry must hold for the sentence to show its kind
RAISED = 0.5  # share of a risk point's bigrams an entry must hold for the point to raise its kind
_BASE = 0x110000  # code points: a bigram is first * _BASE + second
_PAIR = _BASE * _BASE  # a (sentence, bigram) key is sentence * _PAIR + bigram
_DENSE = 1 << 18  # sentences x entries up to which the match is one table
_ENDS = [ord(c) for c in "\n。；;！？!?"]

Codes = npt.NDArray[np.int64]


def _codes(text: str) -> Codes:
    return np.frombuffer(text.lower().encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def _distinct(values: Codes) -> tuple[Codes, Codes]:
    """The sorted distinct values and how often each occurs (np.unique's hashing is slower on a few thousand)."""
    if not len(values):
        return values, values
    ordered = np.sort(values)
    first = np.flatnonzero(np.append(True, ordered[1:] != ordered[:-1]))
    return ordered[first], np.diff(np.append(first, len(ordered)))


def _sentence_bigrams(parts: Sequence[str]) -> tuple[Codes, Codes, int]:
    """Each sentence's distinct bigrams as (sentence, bigram) pairs, sorted by sentence, and how many sentences:
    `parts` is split further at line ends and sentence punctuation (a '.' before whitespace or the end)."""
    c = _codes("\n".join(parts))
    if len(c) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    space = (c <= 32) | (c == 0xA0) | (c == 0x3000)
    end = (c == ord(".")) & np.append(space[1:], True)
    for mark in _ENDS:
        end |= c == mark
    sentence = np.cumsum(end)
    keep = ~(space | end | ((c >= ord("0")) & (c <= ord("9"))) | ((c >= 0xFF10) & (c <= 0xFF19)))
    kept, within = c[keep], sentence[keep]
    same = within[:-1] == within[1:]
    key, _ = _distinct(within[:-1][same] * _PAIR + kept[:-1][same] * _BASE + kept[1:][same])
    return key // _PAIR, key % _PAIR, int(sentence[-1]) + 1


class ClauseIndex:
    """The bigrams of each entry of a retrieval corpus, indexed so that every sentence of a text is matched to
    its best entry in a few array operations."""

    def __init__(self, entries: Iterable[dict[str, Any]]) -> None:
        entries = list(entries)
        self.kinds = [str(e.get("kind") or e["text"]) for e in entries]
        per: list[Codes] = []
        for e in entries:
            _, grams, _ = _sentence_bigrams([str(e["text"]).replace("\n", " ")])
            per.append(np.unique(grams))
        self.ids = np.unique(np.concatenate(per)) if per else np.zeros(0, np.int64)
        owners = [np.searchsorted(self.ids, p) for p in per]  # where each entry's bigrams sit in `ids`
        pairs = sorted((int(i), j) for j, at in enumerate(owners) for i in at)
        self.owner = np.array([j for _, j in pairs], dtype=np.int64)  # entries of each bigram, grouped by bigram
        self.count = np.bincount([i for i, _ in pairs], minlength=len(self.ids)).astype(np.int64)
        self.start = np.concatenate([[0], np.cumsum(self.count)[:-1]]).astype(np.int64)

    @classmethod
    def load(cls, corpus: Path) -> ClauseIndex:
        lines = Path(corpus).read_text(encoding="utf-8").splitlines()
        return cls(json.loads(line) for line in lines if line.strip())

    def _best(self, parts: Sequence[str], floor: float) -> set[str]:
        """The kinds whose entry holds at least `floor` of some sentence's bigrams, each sentence's best entry."""
        if not len(self.ids):
            return set()
        sentences, grams, n = _sentence_bigrams(parts)
        if not len(grams):
            return set()
        total = np.bincount(sentences, minlength=n)
        at = np.minimum(np.searchsorted(self.ids, grams), len(self.ids) - 1)
        hit = self.ids[at] == grams
        at, sentences = at[hit], sentences[hit]
        if not len(at):
            return set()
        many = self.count[at]  # how many entries hold each bigram that hit
        firsts = np.repeat(self.start[at] - np.cumsum(many) + many, many) + np.arange(int(many.sum()))
        entries = len(self.kinds)
        pairs = np.repeat(sentences, many) * entries + self.owner[firsts]  # (sentence, entry) per bigram held
        if n * entries <= _DENSE:  # a table of sentence by entry: one pass, no sort
            table = np.bincount(pairs, minlength=n * entries).reshape(n, entries)
            which = table.argmax(axis=1)
            held = table[np.arange(n), which]
            return {self.kinds[int(j)] for j in which[(held > 0) & (held >= floor * total)]}
        keys, counts = _distinct(pairs)  # a long text against a large corpus: only the pairs that occur
        order = np.lexsort((counts, keys // entries))  # by sentence, then by how many bigrams the entry holds
        keys, counts = keys[order], counts[order]
        last = np.append(keys[1:] // entries != keys[:-1] // entries, True)  # each sentence's best entry
        best, shown = keys[last], counts[last] >= floor * total[keys[last] // entries]
        return {self.kinds[int(j)] for j in best[shown] % entries}

    def found(self, text: str) -> set[str]:
        """The kinds the corpus finds in `text` (an input)."""
        return self._best([text], FOUND)

    def raised(self, points: Sequence[Any]) -> set[str]:
        """The kinds a reply's risk points raise (each point's field values, or the point itself, as text)."""
        texts = [" ".join(map(str, p.values())) if isinstance(p, dict) else str(p) for p in points]
        return self._best([t.replace("\n", " ") for t in texts], RAISED)
