"""The retrieval hook: when a reply is not trusted, ask again with the clauses a corpus says are relevant.

`Retriever` is the interface (anything with `retrieve(text, k) -> list[str]`);
`KeywordRetriever` is the small built-in one: a JSONL corpus of `{"text": ...}`
clauses ranked by character-bigram overlap (works for Chinese and English
without a tokenizer or a model). With no corpus configured nothing is re-asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from ai_platform.trust.clauses import ClauseIndex


class Retriever(Protocol):
    def retrieve(self, text: str, k: int = 3) -> list[str]: ...


def _bigrams(text: str) -> set[str]:
    compact = "".join(text.split()).lower()
    return {compact[i : i + 2] for i in range(len(compact) - 1)}


class KeywordRetriever:
    def __init__(self, corpus: Path) -> None:
        lines = Path(corpus).read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines if line.strip()]
        self.clauses = [e["text"] for e in entries]
        self.grams = [_bigrams(c) for c in self.clauses]
        self.index = ClauseIndex(entries)  # what the trust features judge a reply against (trust.clauses)

    def retrieve(self, text: str, k: int = 3) -> list[str]:
        query = _bigrams(text)
        ranked = sorted(range(len(self.clauses)), key=lambda i: -len(query & self.grams[i]) / (len(self.grams[i]) or 1))
        return [self.clauses[i] for i in ranked[:k] if query & self.grams[i]]


def with_context(messages: list[dict[str, str]], clauses: list[str]) -> list[dict[str, str]]:
    """The same conversation with the retrieved clauses as an extra system message before the last user turn."""
    note = {"role": "system", "content": "参考条款 / Reference clauses:\n" + "\n".join(f"- {c}" for c in clauses)}
    return [*messages[:-1], note, messages[-1]]
