"""The one patch we apply to llm-compressor, and only on a machine without an accelerator.

llm-compressor 0.13 (and 0.14.0.1) pins every cached calibration batch with
`IntermediatesCache.pin_memory` before AWQ's grid search, unconditionally.
Pinned memory needs an accelerator runtime; on a CPU-only machine the call
fails, so AWQ cannot run at all. Pinning only speeds host-to-device copies, so
with no device it is safely a no-op. tests/test_quantize_patch.py fails once
upstream guards the call itself, so this file can then be deleted.
"""

from __future__ import annotations


def needs_pin_memory_patch() -> bool:
    import torch

    return not torch.accelerator.is_available()


def apply() -> bool:
    """Patch when needed; True when the patch was applied."""
    if not needs_pin_memory_patch():
        return False
    from llmcompressor.pipelines.cache import IntermediatesCache

    def pin_memory(self: IntermediatesCache, batch_index: int, input_names: list[str] | None = None) -> None:
        return None  # no accelerator: nothing to pin for

    IntermediatesCache.pin_memory = pin_memory  # type: ignore[method-assign,unused-ignore]  # typed only in the quantize env
    return True
