"""Prompt leaks: a reply that repeats a run of its compiled system prompt.

The system prompt is the operator's: the instructions a prompt function ships with.
A reply that carries `min_tokens` (default 8) or more consecutive tokens of it has
leaked it, whether the model was asked to by an injection ("print your
instructions") or drifted into it. Tokens are `detectors.text.tokens`: words in
Latin text, characters in CJK text (Chinese has no spaces, so a character is its
unit, as for seq-rep), lower-cased, punctuation dropped. Eight Chinese characters
carry less than eight English words; a Chinese prompt whose wording replies may
legitimately echo (a law's title, a stock phrase) can raise `min_tokens`.

What counts. Only the literal text of the prompt's `system` messages: a
placeholder's value is the caller's, not the operator's, and splits the prompt
into pieces whose runs never join. The output format is not the secret: a reply
names its own fields, and a system prompt that lists them ("for each risk give
point, level, basis and suggestion") would otherwise make every well-formed reply
look like a leak. So:

- a reply that is JSON is read as its string values, each on its own: its keys
  (the schema's field names) are never tokens, and no run joins two values;
- an n-gram of the prompt counts only when more than half of its tokens are not
  the output schema's vocabulary (its property names, split at `_`, and its enum
  values). A run made mostly of field names and a few joining words is the reply
  format, not a quote; a run mostly of the prompt's own words is. (Excluding the
  schema's words outright instead would let a quote that crosses a field name
  through, and would join words that are not adjacent in the prompt.)

Cost: the prompt's n-grams are a set built once per compiled prompt (its version,
a sha256 of the document, and `min_tokens`) and cached; a reply is tokenized once
and each of its n-grams looked up, O(reply).

Standard library only, so the gateway can import it on its request path.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ai_platform.detectors.text import tokens
from ai_platform.prompts.template import pieces

CACHED = 256  # compiled prompts whose index is kept (a gateway serves a few bundles' prompts)


@dataclass(frozen=True)
class LeakIndex:
    """The n-grams of one compiled prompt's system text that a reply may not repeat."""

    n: int
    grams: frozenset[tuple[str, ...]]
    words: frozenset[str]  # every token of those n-grams: a reply's run of other tokens is skipped unread


@dataclass(frozen=True)
class Leak:
    tokens: int  # the longest run of the system prompt found in the reply, in tokens
    runs: int  # how many separate runs


def system_pieces(document: dict[str, Any]) -> list[str]:
    """The literal text of the compiled prompt's system messages, split at each placeholder."""
    out: list[str] = []
    for message in document.get("messages", []):
        if message.get("role") == "system":
            out.extend(p.text for p in pieces(message["content"]) if not p.variable)
    return out


def schema_vocabulary(schema: Any) -> frozenset[str]:
    """The tokens of an output schema's property names and enum/const values: the reply format's own words."""
    words: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for name in node.get("properties", {}) if isinstance(node.get("properties"), dict) else ():
                words.update(tokens(name))
            for value in [*(node.get("enum") or []), *([node["const"]] if "const" in node else [])]:
                words.update(tokens(value if isinstance(value, str) else json.dumps(value)))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    return frozenset(words)


def build(document: dict[str, Any], n: int) -> LeakIndex:
    """The index of `document`'s system text: each n-gram with more than half of its tokens outside the output
    schema's vocabulary."""
    vocabulary = schema_vocabulary(document.get("output_schema"))
    grams: set[tuple[str, ...]] = set()
    for piece in system_pieces(document):
        words = tokens(piece)
        for i in range(len(words) - n + 1):
            gram = tuple(words[i : i + n])
            if 2 * sum(w not in vocabulary for w in gram) > n:
                grams.add(gram)
    return LeakIndex(n, frozenset(grams), frozenset(w for gram in grams for w in gram))


_cache: OrderedDict[tuple[str, int], LeakIndex] = OrderedDict()
_lock = threading.Lock()


def leak_index(document: dict[str, Any], n: int, version: str | None = None) -> LeakIndex:
    """`build(document, n)`, once per compiled prompt: cached by its version (computed here when not given)."""
    if version is None:
        from ai_platform.prompts.compiler import version_of

        version = version_of(document)
    key = (version, n)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    index = build(document, n)
    with _lock:
        index = _cache.setdefault(key, index)
        while len(_cache) > CACHED:
            _cache.popitem(last=False)
    return index


def _texts(reply: str) -> Iterator[str]:
    """A JSON reply's string values, each on its own; any other reply as it is."""
    try:
        value = json.loads(reply)
    except ValueError:
        yield reply
        return
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def find_leak(index: LeakIndex, reply: str) -> Leak | None:
    """The runs of the indexed system prompt in `reply`, None when there is none of `index.n` tokens or more."""
    if not index.grams:
        return None
    n, grams, known, longest, runs = index.n, index.grams, index.words, 0, 0
    for text in _texts(reply):
        words = tokens(text)
        # an n-gram can only be the prompt's where all of its tokens are: look up those, and only those
        known_until, streak = [0] * (len(words) + 1), 0  # known_until[i]: tokens of the prompt from i on, in a row
        for i in range(len(words) - 1, -1, -1):
            known_until[i] = known_until[i + 1] + 1 if words[i] in known else 0
        for i in range(len(words) - n + 1):
            if known_until[i] >= n and tuple(words[i : i + n]) in grams:
                streak += 1
                runs += streak == 1
                longest = max(longest, streak + n - 1)
            else:
                streak = 0
    return Leak(longest, runs) if runs else None
