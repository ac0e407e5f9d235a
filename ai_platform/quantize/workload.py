"""The quantize workload: runs inside the quantize environment (torch, transformers, llm-compressor).

Steps, each logged: re-verify the input folder against the verified_weights
manifest; load and split the calibration data; score the base model on the
held-out split; the recipe's smoothing + quantization with llm-compressor; save into a temp folder;
reload the compressed checkpoint and score it the same way; hash it; rename
the temp folder to `<output_root>/<manifest digest>`.

Nothing is ever written at a final name until it is whole: a workload killed
at any point leaves at most a `.tmp-*` folder, which no stage reads and the
next run removes.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_platform.errors import QuantizationError
from ai_platform.logs import Log
from ai_platform.quantize import calibration, patches
from ai_platform.quantize import recipe as recipes
from ai_platform.weights import manifest as wm

if TYPE_CHECKING:
    from ai_platform.oci.store import RegistryStore

TMP_PREFIX = ".tmp-"


@dataclass
class Scored:
    """Per held-out sample: the target token ids and log-probs over the vocabulary at each."""

    targets: list[Any]  # torch.LongTensor per sample
    log_probs: list[Any]  # torch.Tensor [positions, vocab] per sample (float16 to bound memory)


def peak_rss_bytes() -> int:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork+exec.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _encode(tokenizer: Any, sample: calibration.Sample, max_len: int) -> tuple[list[int], int]:
    """(token ids, index of the first scored token)."""
    if sample.text is not None:
        ids = tokenizer(sample.text, add_special_tokens=False)["input_ids"][:max_len]
        return ids, 1
    messages = list(sample.messages or ())
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    ids = tokenizer(full, add_special_tokens=False)["input_ids"][:max_len]
    if messages[-1]["role"] != "assistant":
        return ids, 1
    prompt = tokenizer.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
    start = len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    return ids, min(max(start, 1), len(ids))


def score(model: Any, tokenizer: Any, samples: list[calibration.Sample], max_len: int) -> Scored:
    import torch

    targets, log_probs = [], []
    with torch.no_grad():
        for sample in samples:
            ids, start = _encode(tokenizer, sample, max_len)
            if start >= len(ids):
                continue
            logits = model(torch.tensor([ids])).logits[0, start - 1 : len(ids) - 1].float()
            targets.append(torch.tensor(ids[start:]))
            log_probs.append(torch.log_softmax(logits, dim=-1).to(torch.float16))
    if not targets:
        raise QuantizationError("no held-out sample has a token to score (raise calibration.max_seq_len?)")
    return Scored(targets, log_probs)


def compare(base: Scored, quantized: Scored) -> dict[str, float]:
    """Perplexity of each, mean KL(base || quantized) per token, and top-1 agreement."""
    nll_b = nll_q = kl = agree = 0.0
    count = 0
    for t, lb, lq in zip(base.targets, base.log_probs, quantized.log_probs, strict=True):
        lb, lq = lb.float(), lq.float()
        nll_b -= lb.gather(1, t[:, None]).sum().item()
        nll_q -= lq.gather(1, t[:, None]).sum().item()
        kl += (lb.exp() * (lb - lq)).sum().item()
        agree += (lb.argmax(-1) == lq.argmax(-1)).sum().item()
        count += len(t)
    ppl_base, ppl_quantized = math.exp(nll_b / count), math.exp(nll_q / count)
    return {
        "ppl_base": ppl_base,
        "ppl_quantized": ppl_quantized,
        "ppl_increase": ppl_quantized / ppl_base - 1.0,
        "kl_divergence": max(kl / count, 0.0),
        "top1_agreement": agree / count,
        "scored_tokens": count,
    }


def dtypes(model_config: dict[str, Any], *, accelerator: bool) -> tuple[str, str]:
    """(the checkpoint's dtype, the dtype to calibrate and score in).

    On an accelerator, the checkpoint's own. On a CPU, float32: AWQ's grid search scores each candidate scale by
    the *sum* of squared errors over a batch's outputs, taken in the outputs' dtype, and in float16 that sum passes
    65,504 once a layer's outputs grow (SmolLM2-135M's float16 checkpoint: from layer 23 every candidate scored inf,
    "No finite loss was found in best scales grid search"; llm-compressor issue #2213). A CPU has no faster
    half-precision arithmetic to lose, and base and quantized are then scored alike.
    """
    stored = str(model_config.get("dtype") or model_config.get("torch_dtype") or "float32")
    if stored not in ("float32", "float16", "bfloat16"):
        raise QuantizationError(f"config.json: dtype {stored!r} is not float32, float16 or bfloat16")
    return stored, stored if accelerator else "float32"


def verify_input(folder: Path, manifest_path: Path, log: Log) -> str:
    """The weights may have sat on shared storage since verified_weights: hash them again."""
    trusted = wm.load(manifest_path)
    actual = wm.build_manifest(folder)
    problems = wm.compare(actual, trusted)
    if problems:
        raise QuantizationError(f"{folder} no longer matches verified_weights: " + "; ".join(problems))
    log(f"input re-verified: {len(actual['files'])} files match sha256:{wm.digest(trusted)[:12]}")
    return wm.digest(trusted)


def _store(job: dict[str, Any]) -> RegistryStore | None:
    """The registry the step keeps artifacts in, when it names one: this pod shares no disk with the step."""
    if not job.get("store"):
        return None
    from ai_platform.oci.store import RegistryStore

    store = job["store"]
    cache = Path(job["output_root"]).parent
    return RegistryStore(store["url"], cache, insecure=store["insecure"], token_realms=store.get("token_realms", ()))


def _inputs(job: dict[str, Any], store: RegistryStore | None, log: Log) -> tuple[Path, Path, list[Path]]:
    """The weights folder, its manifest and the calibration files, on this machine."""
    if store is None:
        return Path(job["input_dir"]), Path(job["input_manifest"]), [Path(p) for p in job["calibration_files"]]
    log(f"fetching the verified weights from {store.where}")
    folder = store.folder(job["input_dir"])
    return folder, store.blob_path(job["input_manifest"]), [store.blob_path(d) for d in job["calibration_files"]]


def clean_stale(output_root: Path) -> None:
    for stale in output_root.glob(f"{TMP_PREFIX}*"):
        shutil.rmtree(stale, ignore_errors=True)


def run(job: dict[str, Any], log: Log) -> dict[str, Any]:
    import torch
    from llmcompressor import oneshot
    from transformers import AutoModelForCausalLM, AutoTokenizer, CompressedTensorsConfig

    started = time.monotonic()
    recipe = job["recipe"]
    output_root = Path(job["output_root"])
    store = _store(job)
    source, manifest_path, calibration_files = _inputs(job, store, log)
    input_digest = verify_input(source, manifest_path, log)
    model_config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    problem = recipes.group_size_problem(recipe, model_config)
    if problem:
        raise QuantizationError(problem)
    cal = recipe["calibration"]
    samples = calibration.load(calibration_files)
    calibrate, holdout = calibration.split(samples, cal["holdout_fraction"], cal["samples"])
    log(f"calibration: {len(calibrate)} samples, {len(holdout)} held out for scoring")
    if patches.apply():
        log("no accelerator: IntermediatesCache.pin_memory patched to a no-op (see ai_platform/quantize/patches.py)")

    torch.manual_seed(job.get("seed", 0))
    tokenizer = AutoTokenizer.from_pretrained(source)
    stored, compute = dtypes(model_config, accelerator=torch.cuda.is_available())
    if compute != stored:
        log(f"no accelerator: calibrating and scoring in {compute} (the checkpoint is {stored} and is written so)")
    model = AutoModelForCausalLM.from_pretrained(source, dtype=getattr(torch, compute))
    base = score(model, tokenizer, holdout, cal["max_seq_len"])
    log("base model scored on the held-out split")

    from datasets import Dataset

    texts = [
        s.text if s.text is not None else tokenizer.apply_chat_template(list(s.messages or ()), tokenize=False)
        for s in calibrate
    ]
    dataset = Dataset.from_dict({"text": texts}).map(
        lambda row: tokenizer(row["text"], truncation=True, max_length=cal["max_seq_len"], add_special_tokens=False),
        remove_columns=["text"],
    )
    log(f"{recipes.describe(recipe)} with llm-compressor")
    oneshot(
        model=model,
        dataset=dataset,
        recipe=recipes.modifiers(recipe),
        num_calibration_samples=len(texts),
        max_seq_length=cal["max_seq_len"],
        shuffle_calibration_samples=False,
    )

    output_root.mkdir(parents=True, exist_ok=True)
    clean_stale(output_root)
    tmp = output_root / f"{TMP_PREFIX}{uuid.uuid4().hex}"
    log(f"writing the compressed checkpoint to {tmp.name}")
    if compute != stored:
        model.to(getattr(torch, stored))  # casts the floating-point tensors only (weights, scales)
        model.config.dtype = stored
    model.save_pretrained(tmp, save_compressed=True)
    tokenizer.save_pretrained(tmp)
    del model

    # Decompressed on load so the forward pass runs on the quantized values themselves.
    config = CompressedTensorsConfig(run_compressed=False)
    reloaded = AutoModelForCausalLM.from_pretrained(tmp, quantization_config=config, dtype=getattr(torch, compute))
    metrics = compare(base, score(reloaded, tokenizer, holdout, cal["max_seq_len"]))
    log(
        f"perplexity {metrics['ppl_base']:.4f} -> {metrics['ppl_quantized']:.4f}, "
        f"KL {metrics['kl_divergence']:.5f}/token, top-1 agreement {metrics['top1_agreement']:.2%}"
    )

    manifest = wm.build_manifest(tmp)
    digest = wm.digest(manifest)
    final = output_root / digest
    if final.exists():  # the same bytes were produced before: keep the first copy
        shutil.rmtree(tmp)
    else:
        os.replace(tmp, final)
    if store is not None:
        log(f"keeping the quantized weights in {store.where}")
    return {
        "digest": digest,
        "folder": store.keep_folder(final) if store is not None else str(final),
        "input_digest": input_digest,
        "recipe_digest": recipes.digest(recipe),
        "duration_s": time.monotonic() - started,
        "peak_memory_bytes": peak_rss_bytes(),
        "calibration_samples": len(calibrate),
        "holdout_samples": len(holdout),
        **metrics,
    }
