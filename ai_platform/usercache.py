"""This machine's cache of derived files: `$AI_PLATFORM_CACHE`, else `~/.cache/ai-platform`.

One folder per kind under it, each entry keyed by everything that determines it, so an entry is never stale,
only unused: the demo's trained model and the converted published model (`demo.cache`), the quantization results
a home shares (`quantize.shared`, where `make demo` points it), the side install of duckdb 2.0
(`warehouse.convert`) and xgrammar's verdict on each output schema (`prompts.engine`). Deleting it costs only the
time to make the entries again.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "AI_PLATFORM_CACHE"


def base() -> Path:
    """$AI_PLATFORM_CACHE, else ~/.cache/ai-platform."""
    return Path(os.environ.get(ENV) or Path.home() / ".cache" / "ai-platform")
