"""Text metrics on model replies: seq-rep-n (Welleck et al. 2019, "Neural Text
Degeneration with Unlikelihood Training").

seq-rep-n = 1 - unique n-grams / total n-grams within one text: 0 for text that
never repeats an n-gram, close to 1 for a degenerate loop. Chinese has no spaces
between words, so each CJK ideograph (and CJK punctuation mark) is its own unit,
as in character-level seq-rep for Chinese; runs of other non-space characters are
word units, so English is measured over words. Mixed text mixes both.

`tokens` is the tokenizer of the prompt-leak guard (detectors/leak.py): the same
units with case and punctuation dropped, since a quote of a prompt keeps its words
however it is re-punctuated, re-cased or escaped inside a JSON string.

Standard library only, so the gateway can import it on its request path.
"""

from __future__ import annotations

import re

# CJK ideographs (unified, extension A, compatibility, extensions B+), kana, CJK
# punctuation (not U+3000, the ideographic space, which is whitespace) and the
# full-width punctuation of U+FF00-U+FF65 (not the full-width letters and digits).
_CJK = (
    "\u3001-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\U00020000-\U0003134f"
)
_UNIT = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")


def units(text: str) -> list[str]:
    """Each CJK character is a unit; each run of other non-space characters is one."""
    return _UNIT.findall(text)


# A CJK ideograph or kana is a token; so is each run of other letters and digits (no CJK punctuation: it joins).
_IDEOGRAPH = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN = re.compile(f"[{_IDEOGRAPH}]|[^\\W_{_IDEOGRAPH}]+")


def tokens(text: str) -> list[str]:
    """Words for Latin (and other spaced) scripts, characters for CJK, lower-cased; punctuation, whitespace and
    underscores are separators, never tokens: `Read the CONTRACT, clause-by-clause.` is read, the, contract,
    clause, by, clause; `依据《民法典》第XXX条` is 依, 据, 民, 法, 典, 第, xxx, 条."""
    return _TOKEN.findall(text.lower())


def seq_rep_n(text: str, n: int = 4) -> float:
    """1 - unique n-grams / n-grams over `units(text)`; 0.0 when there are fewer than n units."""
    if n < 1:
        raise ValueError(f"n must be at least 1 (got {n})")
    tokens = units(text)
    if len(tokens) < n:
        return 0.0
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams)
