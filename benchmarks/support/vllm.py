"""The demo model on the vLLM CPU build for a benchmark: a server started here, or one already running."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ai_platform.config import Serving
from ai_platform.demo.cache import build
from ai_platform.demo.model import Recipe
from ai_platform.serving.vllm import SERVE_PYTHON, launch

MODEL = "contract-reviewer"  # the served name, as the test session's shared server (tests/conftest.py) has it
UPSTREAM_HELP = f"a vLLM already serving the demo model as {MODEL!r} (e.g. the test session's); default: start one"


@contextmanager
def demo_server(upstream: str | None, max_num_seqs: int, log_path: Path) -> Iterator[str]:
    """The base URL of a vLLM serving the demo model: `upstream` as given, else one launched here for the block."""
    if upstream:
        yield upstream.rstrip("/")
        return
    serving = Serving(max_model_len=1024, dtype="float32", block_size=32, max_num_seqs=max_num_seqs)
    with launch(build(Recipe()), MODEL, serving, python=SERVE_PYTHON, log_path=log_path) as server:
        yield server.base_url
