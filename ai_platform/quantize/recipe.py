"""The quantization recipe as data: what the spec asks for, in a form whose digest names it.

The platform builds it from the model spec; the workload turns it into
llm-compressor modifiers (`modifiers`). Keeping the recipe plain JSON means its
digest is stable across library versions and lands in the warehouse as is.
"""

from __future__ import annotations

from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex


def from_spec(quantization: Any, scheme: str | None = None) -> dict[str, Any]:
    """`quantization` is config.Quantization (not imported: the workload env has no pydantic models).

    `scheme`: the one the serving preflight chose (the spec's own, or its fallback).
    W{n}A16 is AWQ smoothing plus group-wise weight quantization; W8A8 is SmoothQuant
    plus int8 per-channel weights and dynamic per-token int8 activations, the
    compressed-tensors layout vLLM's CPU int8 kernel (oneDNN) serves.
    """
    scheme = scheme or quantization.scheme
    calibration = quantization.calibration
    common = {
        "scheme": scheme,
        "targets": ["Linear"],
        "ignore": list(quantization.ignore),
        "calibration": {
            "samples": calibration.samples,
            "max_seq_len": calibration.max_seq_len,
            "holdout_fraction": calibration.holdout_fraction,
        },
    }
    if scheme == "W8A8":
        return {
            "method": "smoothquant",
            **common,
            "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"},
            "input_activations": {
                "num_bits": 8,
                "type": "int",
                "symmetric": True,
                "strategy": "token",
                "dynamic": True,
            },
            "smoothquant": {"smoothing_strength": 0.8},
        }
    return {
        "method": quantization.method,
        **common,
        "weights": {
            "num_bits": int(scheme[1]),
            "type": "int",
            "symmetric": quantization.symmetric,
            "strategy": "group",
            "group_size": quantization.group_size,
        },
        "awq": {"duo_scaling": "both"},
    }


def linear_inputs(config: dict[str, Any]) -> dict[str, int]:
    """The input widths of a decoder's Linear layers, from its Hugging Face `config.json`: what group-wise
    quantization cuts into groups (q/k/v, gate and up take `hidden_size`; down takes `intermediate_size`; o takes
    the attention heads' width). A multimodal config keeps the language model's under `text_config`."""
    config = config.get("text_config") or config
    found: dict[str, int] = {}
    for name in ("hidden_size", "intermediate_size"):
        if isinstance(config.get(name), int):
            found[name] = config[name]
    heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    head_dim = config.get("head_dim") or (hidden // heads if isinstance(hidden, int) and heads else None)
    if isinstance(heads, int) and isinstance(head_dim, int):
        found["num_attention_heads × head_dim"] = heads * head_dim
    return found


def group_size_problem(recipe: dict[str, Any], config: dict[str, Any]) -> str | None:
    """Why this recipe's group size cannot cut the model's Linear inputs into whole groups, or None."""
    weights = recipe.get("weights", {})
    if weights.get("strategy") != "group":
        return None
    size = weights["group_size"]
    bad = {name: width for name, width in linear_inputs(config).items() if width % size}
    if not bad:
        return None
    widths = ", ".join(f"{name} {width}" for name, width in bad.items())
    fits = sorted({g for g in (32, 64, 128) if all(w % g == 0 for w in linear_inputs(config).values())})
    hint = f"; a group size of {' or '.join(map(str, fits))} divides them all" if fits else ""
    return f"quantization.group_size {size} does not divide the model's {widths}{hint}"


def describe(recipe: dict[str, Any]) -> str:
    """One line for logs and metadata, e.g. "AWQ W4A16 (group 128, asymmetric)"."""
    weights = recipe["weights"]
    if recipe["method"] == "smoothquant":
        return f"SmoothQuant {recipe['scheme']} (int8 per-channel weights, dynamic per-token int8 activations)"
    symmetry = "symmetric" if weights["symmetric"] else "asymmetric"
    return f"AWQ {recipe['scheme']} (group {weights['group_size']}, {symmetry})"


def digest(recipe: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(recipe))


def modifiers(recipe: dict[str, Any]) -> list[Any]:
    """The llm-compressor modifiers: a smoothing pass, then quantization in compressed-tensors' format."""
    from llmcompressor.modifiers.quantization import QuantizationModifier

    group: dict[str, Any] = {"targets": recipe["targets"], "weights": recipe["weights"]}
    if "input_activations" in recipe:
        group["input_activations"] = recipe["input_activations"]
    quantize = QuantizationModifier(ignore=recipe["ignore"], config_groups={"group_0": group})
    if recipe["method"] == "smoothquant":
        from llmcompressor.modifiers.transform.smoothquant import SmoothQuantModifier

        return [SmoothQuantModifier(smoothing_strength=recipe["smoothquant"]["smoothing_strength"]), quantize]
    from llmcompressor.modifiers.transform.awq import AWQModifier

    return [AWQModifier(duo_scaling=recipe["awq"]["duo_scaling"]), quantize]
