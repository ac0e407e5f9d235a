"""The quantization recipe as data: what the spec asks for, in a form whose digest names it.

The platform builds it from the model spec; the workload turns it into
llm-compressor modifiers (`modifiers`). Keeping the recipe plain JSON means its
digest is stable across library versions and lands in the warehouse as is.
"""

from __future__ import annotations

from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex


def from_spec(quantization: Any) -> dict[str, Any]:
    """`quantization` is config.Quantization (not imported: the workload env has no pydantic models)."""
    calibration = quantization.calibration
    return {
        "method": quantization.method,
        "scheme": quantization.scheme,
        "weights": {"num_bits": int(quantization.scheme[1]), "type": "int", "symmetric": quantization.symmetric,
                    "strategy": "group", "group_size": quantization.group_size},
        "targets": ["Linear"],
        "ignore": list(quantization.ignore),
        "awq": {"duo_scaling": "both"},
        "calibration": {"samples": calibration.samples, "max_seq_len": calibration.max_seq_len,
                        "holdout_fraction": calibration.holdout_fraction},
    }  # fmt: skip


def digest(recipe: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(recipe))


def modifiers(recipe: dict[str, Any]) -> list[Any]:
    """AWQ smoothing, then W{n}A16 group quantization in compressed-tensors' pack-quantized format."""
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from llmcompressor.modifiers.transform.awq import AWQModifier

    return [
        AWQModifier(duo_scaling=recipe["awq"]["duo_scaling"]),
        QuantizationModifier(
            ignore=recipe["ignore"],
            config_groups={"group_0": {"targets": recipe["targets"], "weights": recipe["weights"]}},
        ),
    ]
