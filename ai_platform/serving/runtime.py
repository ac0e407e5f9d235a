"""The serving preflight: what the target runtime can execute, known before anything is built for it.

vLLM's CPU build ships three kernel libraries and loads one by the CPU's flags;
only the AVX-512 ones have the W4A16 GEMM (`cpu_gemm_wna16`). An AVX2-only
machine therefore dies a minute into start-up on a W4A16 checkpoint. So the
serve environment is asked (`probe.py`, run by its own interpreter) which
library it loads and which ops it has, and that answer decides which scheme
the quantize stage produces and whether a canary or rollout may start vLLM at all.

`AI_PLATFORM_VLLM_CPU_ISA=avx2` makes the probe and every vLLM server load the
AVX2 library on an AVX-512 CPU (`cpu_isa/sitecustomize.py`), so both paths can
be run on either kind of machine.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, get_args

from ai_platform.config import Scheme
from ai_platform.errors import ServingError

PROBE = Path(__file__).with_name("probe.py")
ISA_SHIM = Path(__file__).with_name("cpu_isa")
ISA_ENV = "AI_PLATFORM_VLLM_CPU_ISA"

# The custom ops vLLM's CPU kernels call for each compressed-tensors scheme
# (vllm/model_executor/kernels/linear/{mixed_precision,scaled_mm}/cpu.py).
WEIGHT_ONLY_OPS = ("cpu_gemm_wna16",)
INT8_OPS = ("create_onednn_scaled_mm_handler", "onednn_scaled_mm", "dynamic_scaled_int8_quant")
ALL_SCHEMES: tuple[str, ...] = (*get_args(Scheme), "none")
SCHEME_TITLES = {"W8A8": "W8A8 (int8 weights and activations)", "none": "unquantized"}


def title(scheme: str) -> str:
    return SCHEME_TITLES.get(scheme, f"{scheme} (int{scheme[1]} weights, 16-bit activations)")


def cpu_ops(scheme: str) -> tuple[str, ...]:
    if scheme == "none":
        return ()
    return INT8_OPS if scheme == "W8A8" else WEIGHT_ONLY_OPS


@dataclass(frozen=True)
class Runtime:
    """The probe's answer for one serve environment on one machine."""

    device: str
    vllm: str
    kernel_library: str
    ops: dict[str, bool]
    cpu_flags: tuple[str, ...] = ()
    isa_override: str | None = None
    compute_capability: int | None = None
    min_capability: dict[str, int | None] = field(default_factory=dict)
    gpu_name: str | None = None

    @classmethod
    def from_probe(cls, facts: dict[str, Any]) -> Runtime:
        return cls(
            device=facts["device"],
            vllm=facts["vllm"],
            kernel_library=facts.get("kernel_library") or "?",
            ops=dict(facts.get("ops") or {}),
            cpu_flags=tuple(facts.get("cpu_flags") or ()),
            isa_override=facts.get("isa_override"),
            compute_capability=facts.get("compute_capability"),
            min_capability=dict(facts.get("min_capability") or {}),
            gpu_name=facts.get("gpu_name"),
        )

    def describe(self) -> str:
        if self.device == "gpu":
            cc = self.compute_capability or 0
            return f"{self.gpu_name or 'GPU'} (compute capability {cc // 10}.{cc % 10}), vLLM {self.vllm}"
        forced = f", forced by {ISA_ENV}={self.isa_override}" if self.isa_override else ""
        flags = " ".join(self.cpu_flags) or "no AVX2/AVX-512"
        return f"vLLM {self.vllm} CPU kernels {self.kernel_library} (CPU flags: {flags}{forced})"

    def missing(self, scheme: str) -> str | None:
        """None if this runtime serves `scheme`; else one sentence saying why not."""
        if scheme == "none":
            return None
        if self.device == "gpu":
            needed = self.min_capability.get("W8A8" if scheme == "W8A8" else "WNA16")
            if needed is None or (self.compute_capability or 0) >= needed:
                return None
            have = self.compute_capability or 0
            return (
                f"this GPU (compute capability {have // 10}.{have % 10}) is below the {needed // 10}.{needed % 10}"
                f" vLLM {self.vllm} needs for {scheme}"
            )
        absent = [op for op in cpu_ops(scheme) if not self.ops.get(op)]
        if not absent:
            return None
        what = {"W4A16": "W4A16 GEMM", "W8A8": "int8 GEMM"}.get(scheme, f"weight-only GEMM for {scheme}")
        return f"this CPU's vLLM kernels ({self.kernel_library}) have no {what} ({', '.join(absent)})"

    def serves(self, quantized_only: bool = False) -> list[str]:
        """The schemes this runtime executes, the spec's order ("none" last unless `quantized_only`)."""
        return [s for s in ALL_SCHEMES if self.missing(s) is None and not (quantized_only and s == "none")]

    def as_record(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "vllm": self.vllm,
            "kernel_library": self.kernel_library,
            "cpu_flags": list(self.cpu_flags),
            "isa_override": self.isa_override,
            "ops": self.ops,
            "compute_capability": self.compute_capability,
            "gpu_name": self.gpu_name,
        }


def probe_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the serve interpreter: the ISA shim on its path when the override asks for it."""
    env = dict(os.environ if base is None else base)
    override = env.get(ISA_ENV)
    if override:
        if override != "avx2":
            raise ServingError(f"{ISA_ENV}={override!r}: the only override is 'avx2'")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ISA_SHIM), env.get("PYTHONPATH", "")) if p)
    return env


def probe(python: Path) -> Runtime:
    """Ask the serve environment at `python` (about 6 s: it imports vLLM); cached per process and override."""
    return _probe(str(python), os.environ.get(ISA_ENV, ""))


@cache
def _probe(python: str, _override: str) -> Runtime:
    if not Path(python).is_file():
        raise ServingError(f"serve environment not found: {python} (run `make envs`)")
    ops = sorted({*WEIGHT_ONLY_OPS, *INT8_OPS})
    done = subprocess.run(
        [python, "-P", str(PROBE), *ops],
        capture_output=True,
        text=True,
        timeout=300,
        env={**probe_env(), "VLLM_NO_USAGE_STATS": "1", "HF_HUB_OFFLINE": "1"},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = "\n".join((done.stderr or done.stdout).splitlines()[-15:])
        raise ServingError(f"the serve environment's runtime probe failed (exit {done.returncode}):\n{tail}")
    return Runtime.from_probe(json.loads(lines[-1]))


def checkpoint_scheme(model_dir: Path) -> str | None:
    """The scheme a model folder's config.json declares: "none", "W4A16"/"W8A16"/..., "W8A8"; None if unknown."""
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    quant = config.get("quantization_config")
    if not quant:
        return "none"
    if quant.get("quant_method") != "compressed-tensors":
        return None
    for group in (quant.get("config_groups") or {}).values():
        weights, acts = group.get("weights") or {}, group.get("input_activations")
        if weights.get("type") != "int":
            return None
        bits = weights.get("num_bits")
        if acts is None:
            return f"W{bits}A16"
        if bits == 8 and acts.get("type") == "int" and acts.get("num_bits") == 8:
            return "W8A8"
        return None
    return None


def preflight(model_dir: Path, python: Path, device: str) -> None:
    """Refuse, in one sentence, a checkpoint the runtime cannot execute, before vLLM spends a minute finding out."""
    scheme = checkpoint_scheme(model_dir)
    if scheme in (None, "none"):
        return  # unquantized, or a format we do not classify: vLLM itself decides
    runtime = probe(python)
    if runtime.device != device:
        return
    why = runtime.missing(scheme)
    if why:
        served = ", ".join(runtime.serves(quantized_only=True)) or "only unquantized"
        raise ServingError(
            f"{model_dir.name}: cannot serve this {scheme} checkpoint: {why}; this runtime serves "
            f"{served} (`ai-platform runtime show` lists them)"
        )
