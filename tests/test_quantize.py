"""quantized_weights end to end: the serving preflight's scheme (AWQ W4A16 where the runtime has the
W4A16 GEMM, SmoothQuant W8A8 where it has only int8) on the demo model in the quantize environment
through Dagster Pipes, the perplexity and KL gates, method none, and a killed workload."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml
from conftest import MODEL, ROOT, materialize

from ai_platform.artifacts import FolderStore, canonical_json, sha256_hex
from ai_platform.platform_repo import git
from ai_platform.quantize.recipe import from_spec
from ai_platform.quantize.stage import job_for, preflight
from ai_platform.records import QuantizedWeights, Records, VerifiedWeights
from ai_platform.serving.runtime import ISA_ENV, probe
from ai_platform.serving.vllm import SERVE_PYTHON
from ai_platform.site import site_of
from ai_platform.specs import SpecSnapshot, pinned_spec
from ai_platform.warehouse import Warehouse
from ai_platform.weights import manifest as wm

QUANTIZE_PYTHON = ROOT / ".venvs" / "quantize" / "bin" / "python"
CHAIN = ("model_spec", "raw_weights", "verified_weights", "quantized_weights")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.quantize,
    pytest.mark.skipif(not (QUANTIZE_PYTHON.is_file() and SERVE_PYTHON.is_file()), reason="needs `make envs`"),
]


def needs_wna16() -> None:
    """Skip where this machine's vLLM has no W4A16 GEMM: the preflight would not produce W{n}A16 here."""
    why = probe(SERVE_PYTHON).missing("W4A16")
    if why:
        pytest.skip(f"needs vLLM's cpu_gemm_wna16 kernel (AVX-512 CPUs): {why}")


def checks(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    evaluations = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    return {e.check_name: e for e in evaluations}


def set_quantization(repo: Path, **changes: object) -> None:
    path = repo / f"models/{MODEL}.yaml"
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec["quantization"].update(changes)
    path.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", f"quantization: {changes}")


def test_awq_w4a16_passes_both_gates_and_lands_in_the_warehouse(instance, tmp_path: Path) -> None:
    needs_wna16()
    result = materialize(instance, *CHAIN)
    assert result.success
    gates = checks(result)
    assert gates["perplexity_within_budget"].passed and gates["kl_within_budget"].passed
    (mat,) = result.asset_materializations_for_node("quantized_weights")
    figures = {k: mat.metadata[k].value for k in ("ppl_base", "ppl_quantized", "kl_divergence", "peak_memory_bytes")}
    assert figures["ppl_base"] > 1.0 and figures["ppl_quantized"] > 1.0 and figures["peak_memory_bytes"] > 0

    folder = Path(mat.metadata["folder"].value)
    config = json.loads((folder / "config.json").read_text())["quantization_config"]
    assert config["quant_method"] == "compressed-tensors" and config["format"] == "pack-quantized"
    weights = config["config_groups"]["group_0"]["weights"]
    assert (weights["num_bits"], weights["group_size"], weights["symmetric"]) == (4, 128, False)
    assert config["ignore"] == ["lm_head"]
    assert wm.digest(wm.build_manifest(folder)) == folder.name  # named by its own content

    _, rows = Warehouse(tmp_path / "home/warehouse.duckdb").query(
        "SELECT method, ppl_base, ppl_quantized, kl_divergence, recipe_ok, duration_s, scheme FROM quantizations"
    )
    ((method, ppl_base, ppl_quantized, kl, ok, duration, scheme),) = rows
    assert method == "awq" and ok and duration > 0 and scheme == "W4A16"
    assert (ppl_base, ppl_quantized, kl) == (figures["ppl_base"], figures["ppl_quantized"], figures["kl_divergence"])
    assert mat.metadata["scheme"].value == "W4A16" and "as the spec asks" in mat.metadata["scheme_reason"].value


def test_an_avx2_runtime_gets_the_w8a8_fallback_under_the_same_gates(
    instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo spec asks for W4A16 with `fallback: [W8A8]`; vLLM's AVX2 kernels (forced here on any CPU)
    have no W4A16 GEMM, so the preflight picks W8A8, says why, and the same two gates hold it."""
    monkeypatch.setenv(ISA_ENV, "avx2")
    result = materialize(instance, *CHAIN)
    assert result.success
    gates = checks(result)
    assert gates["perplexity_within_budget"].passed and gates["kl_within_budget"].passed
    (mat,) = result.asset_materializations_for_node("quantized_weights")
    assert (mat.metadata["scheme"].value, mat.metadata["scheme_requested"].value) == ("W8A8", "W4A16")
    reason = mat.metadata["scheme_reason"].value
    assert reason.startswith("W8A8 (int8") and "_C_AVX2" in reason and "no W4A16 GEMM (cpu_gemm_wna16)" in reason
    folder = Path(mat.metadata["folder"].value)
    config = json.loads((folder / "config.json").read_text())["quantization_config"]
    group = config["config_groups"]["group_0"]
    assert (group["weights"]["num_bits"], group["weights"]["strategy"], group["input_activations"]["dynamic"]) == (
        8,
        "channel",
        True,
    )
    assert config["ignore"] == ["lm_head"]

    warehouse = Warehouse(tmp_path / "home/warehouse.duckdb")
    _, rows = warehouse.query("SELECT method, scheme, requested_scheme, recipe_ok FROM quantizations")
    assert rows == [("smoothquant", "W8A8", "W4A16", True)]
    _, rows = warehouse.query(
        "SELECT kernel_library, isa_override, ops->>'cpu_gemm_wna16', chosen_scheme, serves FROM serving_preflights"
    )
    assert rows == [("_C_AVX2", "avx2", "false", "W8A8", ["W8A8", "none"])]


def test_a_spec_that_insists_on_an_unservable_scheme_is_refused_before_any_work(
    instance, own_demo_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ISA_ENV, "avx2")
    set_quantization(own_demo_repo, fallback=[])
    result = materialize(instance, *CHAIN)
    assert not result.success
    (failure,) = result.get_step_failure_events()
    assert failure.step_key == "quantized_weights"
    message = failure.step_failure_data.error.to_string()
    assert f"models/{MODEL}.yaml: quantization.scheme W4A16 cannot be served here" in message
    assert "(_C_AVX2) have no W4A16 GEMM (cpu_gemm_wna16)" in message and "serves W8A8" in message
    assert "fallback is empty" in message
    artifacts = tmp_path / "home/artifacts"
    assert not (artifacts / "quantized").exists() and not list(artifacts.glob("logs/quantize-*")), "no work started"


def test_a_kl_budget_of_zero_fails_the_gate_and_blocks_downstream(instance, own_demo_repo: Path, tmp_path: Path):
    """Runs on any CPU with whatever scheme the preflight picks: no real quantization has zero divergence."""
    set_quantization(own_demo_repo, max_kl_divergence=0.0)
    result = materialize(instance, *CHAIN, "model_image")
    gates = checks(result)
    assert gates["perplexity_within_budget"].passed and not gates["kl_within_budget"].passed
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "model_image" not in ran
    with pytest.raises(Exception, match="has not been materialized"):
        Records(FolderStore(tmp_path / "home/artifacts")).read(QuantizedWeights, MODEL)


def test_two_bit_recipe_fails_the_gate_and_blocks_downstream(instance, own_demo_repo: Path, tmp_path: Path) -> None:
    needs_wna16()
    set_quantization(own_demo_repo, scheme="W2A16", fallback=[])
    result = materialize(instance, *CHAIN, "model_image")
    gates = checks(result)
    assert not gates["kl_within_budget"].passed, gates["kl_within_budget"].metadata
    ran = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    assert "model_image" not in ran
    with pytest.raises(Exception, match="has not been materialized"):
        Records(FolderStore(tmp_path / "home/artifacts")).read(QuantizedWeights, MODEL)


def test_method_none_passes_the_verified_weights_through(instance, own_demo_repo: Path) -> None:
    set_quantization(own_demo_repo, method="none")
    result = materialize(instance, *CHAIN)
    assert result.success and all(c.passed for c in checks(result).values())
    versions = {
        node: result.asset_materializations_for_node(node)[0].tags["dagster/data_version"]
        for node in ("verified_weights", "quantized_weights")
    }
    assert versions["quantized_weights"] == versions["verified_weights"]


def test_weights_changed_after_verification_are_refused(instance, tmp_path: Path) -> None:
    assert materialize(instance, *CHAIN[:3]).success
    snap = pinned_spec(tmp_path / "home", MODEL)
    weights = Path(Records(snap.platform.artifacts()).read(VerifiedWeights, MODEL).folder)
    target = weights / "model.safetensors"
    data = bytearray(target.read_bytes())
    data[-3] ^= 0x01
    target.write_bytes(bytes(data))
    result = materialize(instance, "quantized_weights")
    assert not result.success
    (failure,) = result.get_step_failure_events()
    assert "no longer matches verified_weights" in failure.step_failure_data.error.to_string()


def workload_job(instance: dg.DagsterInstance, tmp_path: Path) -> tuple[SpecSnapshot, dict[str, Any]]:
    """The workload's job for the demo model, as quantized_weights would hand it over, its inputs verified."""
    assert materialize(instance, *CHAIN[:3]).success
    snap = pinned_spec(tmp_path / "home", MODEL)
    store = site_of(snap.platform).store
    verified = Records(store).read(VerifiedWeights, MODEL)
    return snap, job_for(snap, verified, preflight(snap, probe(SERVE_PYTHON)), store)


def test_a_killed_workload_leaves_nothing_a_later_step_could_take(instance, tmp_path: Path) -> None:
    _, job = workload_job(instance, tmp_path)
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(job))
    output_root = Path(job["output_root"])
    proc = subprocess.Popen(
        [str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize", str(job_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # kill it the moment it starts writing its output
        if "writing the compressed checkpoint" in line:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    for folder in output_root.iterdir():
        assert folder.name.startswith(".tmp-") or wm.digest(wm.build_manifest(folder)) == folder.name
    with pytest.raises(Exception, match="has not been materialized"):
        Records(FolderStore(tmp_path / "home/artifacts")).read(QuantizedWeights, MODEL)

    result = materialize(instance, "quantized_weights")
    assert result.success
    assert not [f for f in output_root.iterdir() if f.name.startswith(".tmp-")], "the next run cleans up"


def test_the_pin_memory_patch_is_still_needed() -> None:
    """Fails once llm-compressor stops pinning unconditionally: then delete ai_platform/quantize/patches.py."""
    probe = (
        "import torch\n"
        "from llmcompressor.pipelines.cache import IntermediatesCache, IntermediateValue\n"
        "cache = IntermediatesCache([{'x': IntermediateValue(value=torch.zeros(2), device=None)}])\n"
        "try:\n    cache.pin_memory(0)\nexcept RuntimeError as exc:\n    print('still broken:', exc)\n"
        "else:\n    print('fixed upstream')\n"
    )
    out = subprocess.run([str(QUANTIZE_PYTHON), "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "still broken" in out, out


def test_workload_cli_rejects_bad_input_without_a_traceback(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "recipe": {},
                "input_dir": str(tmp_path),
                "output_root": str(tmp_path / "out"),
                "input_manifest": str(tmp_path / "missing.json"),
                "calibration_files": [],
            }
        )
    )
    proc = subprocess.run(
        [str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize", str(job)], capture_output=True, text=True, cwd=tmp_path
    )
    # llm-compressor's logger may speak first; the verdict is the last line, and never a traceback
    assert proc.returncode == 1 and proc.stderr.splitlines()[-1].startswith("error: ")
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert sys.executable  # the platform env stays untouched: the workload ran in its own


def test_a_pod_reports_its_result_through_its_log(tmp_path: Path) -> None:
    """The workload run as PipesK8sClient's pod runs it: the same command, the environment the client gives the
    pod, stdout and stderr captured as one pod log, which dagster-k8s's own line handler decodes. A workload that
    moved its stderr to a log file took its messages with it, and the step saw "ended without a result"."""
    from dagster._core.pipes.utils import PipesEnvContextInjector, extract_message_or_forward_to_stdout
    from dagster_k8s.pipes import PipesK8sPodLogsMessageReader

    job = {
        "recipe": {},
        "input_dir": str(tmp_path),
        "output_root": str(tmp_path / "out"),
        "input_manifest": str(tmp_path / "missing.json"),
        "calibration_files": [],
        "log_path": str(tmp_path / "logs" / "quantize.log"),
    }
    seen: dict[str, Any] = {}

    @dg.asset
    def pod_workload(context):  # type: ignore[no-untyped-def]
        with dg.open_pipes_session(
            context, PipesEnvContextInjector(), PipesK8sPodLogsMessageReader(), extras={"job": job}
        ) as session:
            env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **session.get_bootstrap_env_vars()}
            pod = subprocess.run(
                [str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize"],
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for line in pod.stdout.splitlines():
                extract_message_or_forward_to_stdout(session.message_handler, line)
            seen.update(log=pod.stdout, code=pod.returncode, messages=session.get_custom_messages())
        return dg.MaterializeResult()

    assert dg.materialize([pod_workload]).success
    assert seen["code"] == 0, seen["log"][-2000:]
    messages = seen["messages"]
    assert len(messages) == 1 and messages[0]["error_type"].endswith("Error"), seen["log"][-2000:]
    assert "missing.json" in messages[0]["error"]


def test_a_group_size_the_model_cannot_take_fails_before_the_workload(instance, own_demo_repo: Path) -> None:
    set_quantization(own_demo_repo, group_size=256)  # the demo model is 128 wide
    result = materialize(instance, *CHAIN)
    assert not result.success
    (failure,) = result.get_step_failure_events()
    message = failure.step_failure_data.error.to_string()
    assert "quantization.group_size 256 does not divide the model's hidden_size 128" in message
    assert not result.asset_materializations_for_node("quantized_weights")


def test_the_same_inputs_and_code_report_the_recorded_result_instead_of_quantizing_again(
    instance, own_demo_repo: Path, tmp_path: Path
) -> None:
    """Asked again with the same verified weights, recipe, calibration data and code version, quantized_weights does
    not run AWQ: it reports the recorded result, its output re-hashed. A budget is no input (the gates are judged
    again on the report); a recipe change is one (another key: the workload runs)."""
    from ai_platform.quantize.stage import inputs_key
    from assets import versions

    needs_wna16()
    first = materialize(instance, *CHAIN)
    assert first.success
    (made,) = first.asset_materializations_for_node("quantized_weights")
    assert made.metadata["reused"].value is False

    set_quantization(own_demo_repo, max_ppl_increase=0.5)  # a budget: the same inputs
    again = materialize(instance, "model_spec", "quantized_weights")
    assert again.success
    (mat,) = again.asset_materializations_for_node("quantized_weights")
    assert mat.metadata["reused"].value is True and mat.metadata["digest"].value == made.metadata["digest"].value
    logs = [e.user_message for e in instance.all_logs(again.run_id) if e.step_key == "quantized_weights"]
    assert any("reporting the recorded result" in m for m in logs)
    assert mat.metadata["duration_s"].value == made.metadata["duration_s"].value  # the recorded report, not a rerun
    assert checks(again)["perplexity_within_budget"].passed
    _, rows = Warehouse(tmp_path / "home/warehouse.duckdb").query("SELECT count(*) FROM quantizations")
    assert rows == [(1,)]

    home = tmp_path / "home"
    snap = pinned_spec(home, MODEL)
    store = site_of(snap.platform).store
    verified = Records(store).read(VerifiedWeights, MODEL)
    choice = preflight(snap, probe(SERVE_PYTHON))
    key = inputs_key(snap, verified, job_for(snap, verified, choice, store), versions.QUANTIZE, "embedded")
    set_quantization(own_demo_repo, group_size=64)
    assert materialize(instance, "model_spec").success
    other = pinned_spec(home, MODEL)
    assert inputs_key(other, verified, job_for(other, verified, choice, store), versions.QUANTIZE, "embedded") != key
    assert inputs_key(snap, verified, job_for(snap, verified, choice, store), "another code version", "embedded") != key


# The residual stream made S times larger without changing what the model computes: the embeddings and every write
# into the residual stream (o_proj, down_proj) scaled by S; each RMSNorm reading the stream undoes S (up to its eps),
# so the head, untied from the embeddings, stays as it was. Saved in float16, as published checkpoints are.
LOUDER = """
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
source, target, s = sys.argv[1], sys.argv[2], float(sys.argv[3])
model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
with torch.no_grad():
    if model.config.tie_word_embeddings:
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
        model.config.tie_word_embeddings = False
    model.model.embed_tokens.weight.mul_(s)
    for layer in model.model.layers:
        layer.self_attn.o_proj.weight.mul_(s)
        layer.mlp.down_proj.weight.mul_(s)
model.to(torch.float16).save_pretrained(target)
AutoTokenizer.from_pretrained(source).save_pretrained(target)
"""


def test_a_float16_checkpoint_with_large_activations_is_calibrated_without_overflow(instance, tmp_path: Path) -> None:
    """A published checkpoint in float16 whose layer outputs are large (SmolLM2-135M's reach 200 by layer 24): AWQ's
    grid search sums squared errors over a batch's outputs, and in float16 that sum passed 65,504 and every
    candidate scored inf ("No finite loss was found in best scales grid search"). On a CPU the workload calibrates
    and scores in float32 and writes the checkpoint in the source's dtype. Here the demo model's residual stream
    is made 64 times larger (the same function: RMSNorm undoes the scale) and saved in float16."""
    snap, job = workload_job(instance, tmp_path)
    loud = tmp_path / "loud"
    subprocess.run([str(QUANTIZE_PYTHON), "-c", LOUDER, job["input_dir"], str(loud), "64"], check=True)
    manifest = tmp_path / "loud-manifest.json"
    manifest.write_text(json.dumps(wm.build_manifest(loud)), encoding="utf-8")
    job |= {
        "input_dir": str(loud),
        "input_manifest": str(manifest),
        "output_root": str(tmp_path / "out"),
        "recipe": from_spec(snap.spec.quantization, "W4A16"),  # AWQ's grid search, whatever vLLM here serves
    }
    job["recipe"]["calibration"]["samples"] = 8  # each batch's sum overflowed: 8 batches show it as 64 do
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    proc = subprocess.run(
        [str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize", str(job_file)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert 1.0 < result["ppl_base"] < 50 and result["ppl_increase"] < 0.25, result
    folder = Path(result["folder"])
    saved = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert saved["dtype"] == "float16", "written in the source's dtype"


def test_a_new_home_on_the_same_machine_takes_the_shared_result_and_a_damaged_one_is_made_again(
    instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With $AI_PLATFORM_QUANTIZED_CACHE set (make demo sets it), a home without a record of the same inputs takes
    the result another home made, copied into its own artifacts and re-hashed there, instead of running the workload
    again; an entry whose bytes changed is not taken: the workload runs and a whole entry replaces it."""
    cache = tmp_path / "shared"
    monkeypatch.setenv("AI_PLATFORM_QUANTIZED_CACHE", str(cache))
    first = materialize(instance, *CHAIN)
    assert first.success
    (made,) = first.asset_materializations_for_node("quantized_weights")
    assert made.metadata["reused"].value is False and "reused_from" not in made.metadata
    (entry,) = cache.iterdir()
    digest = made.metadata["digest"].value.removeprefix("sha256:")
    assert json.loads((entry / "report.json").read_text())["digest"] == digest

    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "second-home"))
    again = materialize(instance, *CHAIN)
    assert again.success
    (taken,) = again.asset_materializations_for_node("quantized_weights")
    assert taken.metadata["reused_from"].value == "shared" and taken.metadata["digest"].value == f"sha256:{digest}"
    assert taken.metadata["duration_s"].value == made.metadata["duration_s"].value  # the report, not a rerun
    assert Path(taken.metadata["folder"].value) == tmp_path / "second-home" / "artifacts" / "quantized" / digest
    assert checks(again)["perplexity_within_budget"].passed

    weights = entry / digest / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    monkeypatch.setenv("AI_PLATFORM_HOME", str(tmp_path / "third-home"))
    third = materialize(instance, *CHAIN)
    assert third.success
    (rerun,) = third.asset_materializations_for_node("quantized_weights")
    assert rerun.metadata["reused"].value is False  # the workload ran again
    (replaced,) = cache.iterdir()
    report = json.loads((replaced / "report.json").read_text())
    assert sha256_hex(canonical_json(wm.build_manifest(replaced / report["digest"]))) == report["digest"]
