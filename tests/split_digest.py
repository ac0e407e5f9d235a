"""The digest of a held-out injection split: its figures in data/injection/README.md hold for this content only."""

from __future__ import annotations

import hashlib

from ai_platform.demo.injection_corpus import Sample


def digest(samples: list[Sample]) -> str:
    h = hashlib.sha256()
    for s in samples:
        h.update(repr((s.text, s.label, s.kind, s.language, s.span)).encode())
    return h.hexdigest()
