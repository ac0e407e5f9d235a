"""Make vLLM load its AVX2 kernel library on a CPU that has AVX-512.

On the path (PYTHONPATH) of the serve environment's processes when
`AI_PLATFORM_VLLM_CPU_ISA=avx2`: vLLM chooses `_C`, `_C_AVX512` or `_C_AVX2` by
`torch.cpu._is_avx512_supported()` and `_is_avx512_bf16_supported()`, in the
API server and in every engine process it starts. Both answer False here, so an
AVX-512 machine runs what an AVX2-only machine runs (tests use it to cover both).
"""

import os

if os.environ.get("AI_PLATFORM_VLLM_CPU_ISA") == "avx2":
    import torch

    torch.cpu._is_avx512_supported = lambda: False
    torch.cpu._is_avx512_bf16_supported = lambda: False
