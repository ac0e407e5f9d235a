"""What this machine's vLLM can execute, asked of vLLM itself: run by the serve environment's Python.

`python ai_platform/serving/probe.py` prints one JSON object. It imports only
the standard library, torch and vllm (the serve environment has no
ai_platform), lets vLLM's platform load its kernel library exactly as the
server would, then reports:

- `kernel_library`: the `vllm/_C*.so` file the process mapped (on x86 CPUs vLLM
  picks `_C` for AVX-512 + BF16, `_C_AVX512`, or `_C_AVX2` by the CPU's flags);
- `ops`: for each custom op a quantization scheme needs, whether `torch.ops._C` has it;
- on a GPU, its compute capability and the minimum capability vLLM's
  compressed-tensors schemes declare.

`ai_platform.serving.runtime` reads this output; the op names live there.
"""

from __future__ import annotations

import json
import os
import platform
import sys

OPS = sys.argv[1:]


def kernel_libraries() -> list[str]:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        found = {line.split()[-1] for line in maps if "/vllm/_C" in line and line.rstrip().endswith(".so")}
    return sorted(os.path.basename(path).split(".")[0] for path in found)


def cpu_flags() -> list[str]:
    wanted = {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8", "avx_vnni"}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("flags"):
                    return sorted(wanted & set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return []


def gpu_facts() -> dict[str, object]:
    import torch

    if not torch.cuda.is_available():
        return {}
    major, minor = torch.cuda.get_device_capability()
    minimum: dict[str, int | None] = {}
    try:
        from vllm.model_executor.layers.quantization.compressed_tensors import schemes

        for scheme, cls in (("WNA16", "CompressedTensorsWNA16"), ("W8A8", "CompressedTensorsW8A8Int8")):
            minimum[scheme] = getattr(schemes, cls).get_min_capability()
    except (ImportError, AttributeError):
        pass
    return {
        "gpu_name": torch.cuda.get_device_name(),
        "compute_capability": major * 10 + minor,
        "min_capability": minimum,
    }


def main() -> None:
    import torch
    import vllm
    from vllm.platforms import current_platform

    device = "gpu" if current_platform.is_cuda_alike() else "cpu"
    current_platform.import_kernels()
    libraries = kernel_libraries()
    facts = {
        "device": device,
        "arch": platform.machine(),
        "vllm": vllm.__version__,
        "torch": torch.__version__,
        "cpu_flags": cpu_flags(),
        "isa_override": os.environ.get("AI_PLATFORM_VLLM_CPU_ISA") or None,
        "kernel_library": libraries[0] if len(libraries) == 1 else ",".join(libraries),
        "ops": {op: hasattr(torch.ops._C, op) for op in OPS},
        **gpu_facts(),
    }
    print(json.dumps(facts), flush=True)


if __name__ == "__main__":
    main()
