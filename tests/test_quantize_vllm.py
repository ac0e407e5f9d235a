"""Acceptance: the demo model, quantized by the workload in the scheme the runtime serves, is served by
the real vLLM CPU build, and the compiled prompt's replies still validate.

- W4A16 (AWQ g128, asymmetric) with the WNA16 kernel: where vLLM's kernels have `cpu_gemm_wna16`
  (AVX-512 CPUs); skipped elsewhere, naming the kernel.
- W8A8 (SmoothQuant int8) with the oneDNN int8 kernel, on the AVX2 kernel library: on every x86 CPU,
  because the server is made to load `_C_AVX2` even where AVX-512 exists.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import jsonschema
import pytest
from conftest import MODEL, ROOT, SERVE_PYTHON

from ai_platform.artifacts import canonical_json
from ai_platform.config import Quantization, Serving
from ai_platform.errors import ServingError
from ai_platform.prompts.compiler import compile_file
from ai_platform.prompts.render import request_body
from ai_platform.quantize import recipe
from ai_platform.serving.runtime import ISA_ENV, checkpoint_scheme, probe
from ai_platform.serving.vllm import launch, server_args
from ai_platform.weights import manifest as wm

QUANTIZE_PYTHON = ROOT / ".venvs" / "quantize" / "bin" / "python"
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not (QUANTIZE_PYTHON.is_file() and SERVE_PYTHON.is_file()), reason="needs `make envs`"),
]


def quantize(demo_model_dir: Path, demo_repo: Path, out: Path, scheme: str) -> dict:
    trusted = out / "manifest.json"
    out.mkdir(parents=True, exist_ok=True)
    trusted.write_bytes(canonical_json(wm.build_manifest(demo_model_dir)))
    job = {
        "input_dir": str(demo_model_dir),
        "input_manifest": str(trusted),
        "output_root": str(out / "out"),
        "calibration_files": [str(demo_repo / "calibration/contracts.jsonl")],
        "recipe": recipe.from_spec(Quantization(), scheme),
    }
    (out / "job.json").write_text(json.dumps(job))
    done = subprocess.run(
        [str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize", str(out / "job.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["kl_divergence"] < Quantization().max_kl_divergence
    assert checkpoint_scheme(Path(result["folder"])) == scheme
    return result


def kernel_libraries(group: int) -> set[str]:
    """The vllm/_C*.so files mapped by the processes of a server's process group."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) != group:
                continue
            maps = (stat.parent / "maps").read_text()
        except (OSError, IndexError, ValueError):
            continue
        found |= {line.rsplit("/", 1)[1].split(".")[0] for line in maps.splitlines() if "/vllm/_C" in line}
    return found


def replies_validate(folder: Path, serving: Serving, demo_repo: Path, log: Path) -> tuple[str, set[str]]:
    """Serve the folder, send six eval cases, validate every reply; the server's log and kernel libraries."""
    document = compile_file(demo_repo / "prompts/contract_review.prompt").document
    cases = [json.loads(line) for line in (demo_repo / "evals/contract_review.jsonl").read_text().splitlines()][:6]
    with launch(folder, MODEL, serving, python=SERVE_PYTHON, log_path=log) as server:
        for case in cases:
            body = {**request_body(document, case["vars"], model=MODEL), "temperature": 0, "max_tokens": 512}
            reply = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=120).json()
            jsonschema.validate(json.loads(reply["choices"][0]["message"]["content"]), document["output_schema"])
        return server.log_text(), kernel_libraries(server.pid)


def test_quantized_demo_model_serves_with_the_wna16_kernel(demo_model_dir: Path, demo_repo: Path, tmp_path: Path):
    why = probe(SERVE_PYTHON).missing("W4A16")
    if why:
        pytest.skip(f"needs vLLM's cpu_gemm_wna16 kernel (AVX-512 CPUs): {why}")
    result = quantize(demo_model_dir, demo_repo, tmp_path, "W4A16")
    serving = Serving(max_model_len=1024, dtype="auto", block_size=32, max_num_seqs=8)
    with pytest.raises(ServingError, match=r"needs serving\.dtype bfloat16"):
        server_args(Path(result["folder"]), MODEL, serving.model_copy(update={"dtype": "float32"}), "cpu", "h", 1)
    assert "bfloat16" in server_args(Path(result["folder"]), MODEL, serving, "cpu", "127.0.0.1", 8000)
    text, _ = replies_validate(Path(result["folder"]), serving, demo_repo, tmp_path / "vllm.log")
    assert "WNA16" in text, "vLLM did not pick a WNA16 kernel for the compressed-tensors checkpoint"
    # vLLM read the scheme from the checkpoint's config.json: no --quantization flag was given.
    assert "--quantization" not in server_args(Path(result["folder"]), MODEL, serving, "cpu", "127.0.0.1", 8000)


def test_w8a8_serves_with_the_int8_kernel_of_the_avx2_library(
    demo_model_dir: Path, demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ISA_ENV, "avx2")  # what an AVX2-only CPU runs, on whatever CPU this is
    result = quantize(demo_model_dir, demo_repo, tmp_path, "W8A8")
    serving = Serving(max_model_len=1024, dtype="auto", block_size=32, max_num_seqs=8)
    args = server_args(Path(result["folder"]), MODEL, serving, "cpu", "127.0.0.1", 8000)
    assert args[args.index("--dtype") + 1] == "auto"  # the checkpoint's own dtype: the int8 kernel takes float32
    text, libraries = replies_validate(Path(result["folder"]), serving, demo_repo, tmp_path / "vllm.log")
    assert "CPUInt8ScaledMMLinearKernel" in text, "vLLM did not pick its int8 kernel for the W8A8 checkpoint"
    assert libraries == {"_C_AVX2"}, f"the server loaded {libraries}, not the AVX2 kernel library"
