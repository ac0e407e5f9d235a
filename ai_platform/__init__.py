"""ai-platform: carry an open LLM from hub weights to a canary-gated vLLM service.

This package is the library. It never imports Dagster; the orchestration layer
(`assets/`, `sensors/`, `definitions.py`) calls into it.
"""

__version__ = "0.1.0"
