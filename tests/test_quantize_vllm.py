"""Acceptance: the demo model quantized by the workload (AWQ W4A16 g128, asymmetric) is served by
the real vLLM CPU build with its WNA16 kernel, and the compiled prompt's replies still validate."""

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
from ai_platform.serving.vllm import launch, server_args
from ai_platform.weights import manifest as wm

QUANTIZE_PYTHON = ROOT / ".venvs" / "quantize" / "bin" / "python"
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not (QUANTIZE_PYTHON.is_file() and SERVE_PYTHON.is_file()), reason="needs `make envs`"),
]


def test_quantized_demo_model_serves_with_the_wna16_kernel(demo_model_dir: Path, demo_repo: Path, tmp_path: Path):
    trusted = tmp_path / "manifest.json"
    trusted.write_bytes(canonical_json(wm.build_manifest(demo_model_dir)))
    job = {"input_dir": str(demo_model_dir), "input_manifest": str(trusted), "output_root": str(tmp_path / "out"),
           "calibration_files": [str(demo_repo / "calibration/contracts.jsonl")],
           "recipe": recipe.from_spec(Quantization())}  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(job))
    done = subprocess.run([str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize", str(tmp_path / "job.json")],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["kl_divergence"] < Quantization().max_kl_divergence

    serving = Serving(max_model_len=1024, dtype="auto", block_size=32, max_num_seqs=8)
    with pytest.raises(ServingError, match=r"needs serving\.dtype bfloat16"):
        server_args(Path(result["folder"]), MODEL, serving.model_copy(update={"dtype": "float32"}), "cpu", "h", 1)
    assert "bfloat16" in server_args(Path(result["folder"]), MODEL, serving, "cpu", "127.0.0.1", 8000)
    log = tmp_path / "vllm.log"
    document = compile_file(demo_repo / "prompts/contract_review.prompt").document
    cases = [json.loads(line) for line in (demo_repo / "evals/contract_review.jsonl").read_text().splitlines()][:6]
    with launch(Path(result["folder"]), MODEL, serving, python=SERVE_PYTHON, log_path=log) as server:
        for case in cases:
            body = {**request_body(document, case["vars"], model=MODEL), "temperature": 0, "max_tokens": 512}
            reply = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, timeout=120).json()
            jsonschema.validate(json.loads(reply["choices"][0]["message"]["content"]), document["output_schema"])
        text = server.log_text()
    assert "WNA16" in text, "vLLM did not pick a WNA16 kernel for the compressed-tensors checkpoint"
    # vLLM read the scheme from the checkpoint's config.json: no --quantization flag was given.
    assert "--quantization" not in server_args(Path(result["folder"]), MODEL, serving, "cpu", "127.0.0.1", 8000)
