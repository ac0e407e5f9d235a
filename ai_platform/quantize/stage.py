"""The quantized_weights stage, platform side: the job for the workload, its result
re-verified, the quality gates, and the warehouse record.

The workload's report is not taken on trust: the output folder is hashed again
here and must be named by its own manifest digest.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ai_platform.artifacts import ArtifactStore, canonical_json, sha256_hex
from ai_platform.config import Quantization
from ai_platform.errors import MissingArtifactError, QuantizationError
from ai_platform.quantize import calibration, recipe, shared
from ai_platform.records import QuantizedWeights, QuantizeRun, Records, VerifiedWeights
from ai_platform.serving.runtime import Runtime, title
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse
from ai_platform.weights import manifest as wm

MODULE = "ai_platform.quantize"
PPL_GATE = "perplexity_within_budget"
KL_GATE = "kl_within_budget"


@dataclass(frozen=True)
class SchemeChoice:
    """The serving preflight's decision: the scheme to produce for the target runtime, and why."""

    requested: str
    scheme: str
    reason: str
    runtime: Runtime | None  # None: the target was not probed (a Kubernetes GPU pool)


def choose_scheme(q: Quantization, runtime: Runtime | None, spec_file: str) -> SchemeChoice:
    """The spec's scheme if the runtime serves it, else the first of `fallback` it serves, else an error."""
    if runtime is None:
        return SchemeChoice(
            q.scheme, q.scheme, f"{q.scheme}: as the spec asks (the target runtime is not probed from here)", None
        )
    why = runtime.missing(q.scheme)
    if why is None:
        return SchemeChoice(
            q.scheme, q.scheme, f"{title(q.scheme)}: as the spec asks; {runtime.describe()} serves it", runtime
        )
    for scheme in q.fallback:
        if runtime.missing(scheme) is None:
            return SchemeChoice(
                q.scheme, scheme, f"{title(scheme)}: {why}, and the spec's fallback allows {scheme}", runtime
            )
    served = runtime.serves(quantized_only=True) or ["none (unquantized)"]
    rule = (
        f"none of its fallback {q.fallback} is served either"
        if q.fallback
        else "the spec allows no fallback (quantization.fallback is empty)"
    )
    raise QuantizationError(
        f"{spec_file}: quantization.scheme {q.scheme} cannot be served here: {why}; {rule}. "
        f"This runtime ({runtime.describe()}) serves {', '.join(served)}."
    )


def preflight(snap: SpecSnapshot, runtime: Runtime | None) -> SchemeChoice:
    """The scheme to produce for the target runtime (as the execution backend probed it)."""
    return choose_scheme(snap.spec.quantization, runtime, f"models/{snap.spec.name}.yaml")


def record_preflight(warehouse: Warehouse, snap: SpecSnapshot, choice: SchemeChoice, target: str) -> None:
    r = choice.runtime
    serves = r.serves() if r else None
    with warehouse.write() as con:
        con.execute(
            "INSERT INTO serving_preflights (preflight_id, model, stage, target, device, vllm_version,"
            " kernel_library, cpu_flags, isa_override, compute_capability, ops, serves, requested_scheme,"
            " chosen_scheme, reason) VALUES (?, ?, 'quantized_weights', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                uuid.uuid4().hex,
                snap.spec.name,
                target,
                r.device if r else None,
                r.vllm if r else None,
                r.kernel_library if r else None,
                list(r.cpu_flags) if r else None,
                r.isa_override if r else None,
                r.compute_capability if r else None,
                json.dumps(r.ops) if r else None,
                serves,
                choice.requested,
                choice.scheme,
                choice.reason,
            ],
        )


@dataclass(frozen=True)
class Quantized:
    digest: str
    folder: str
    method: str
    input_digest: str  # the verified weights it was made from
    report: dict[str, Any] = field(default_factory=dict)  # the workload's figures; empty for method none
    gates: dict[str, tuple[bool, str]] = field(default_factory=dict)
    choice: SchemeChoice | None = None  # None for method none

    @property
    def passed(self) -> bool:
        return all(ok for ok, _ in self.gates.values())

    @property
    def record(self) -> QuantizedWeights:
        scheme = self.choice.scheme if self.choice else "none"
        return QuantizedWeights(self.digest, self.folder, self.method, scheme, self.report.get("recipe_digest"))


def job_for(
    snap: SpecSnapshot, verified: VerifiedWeights, choice: SchemeChoice, store: ArtifactStore
) -> dict[str, Any]:
    """What the workload needs, as plain JSON (it travels as Pipes extras, possibly to a pod)."""
    q = snap.spec.quantization
    planned = recipe.from_spec(q, choice.scheme)
    if store.keeps_folders_in_place:  # the model's shape is readable here: refuse before any work
        check_group_size(planned, store.folder(verified.folder), f"models/{snap.spec.name}.yaml")
    files = calibration.files(snap.platform.file(q.calibration.path))
    calibration.split(calibration.load(files), q.calibration.holdout_fraction, q.calibration.samples)  # fail here
    job: dict[str, Any] = {
        "output_root": str(snap.platform.artifacts_path / "quantized"),
        "recipe": planned,
        "seed": 0,
        "log_path": str(snap.platform.artifacts_path / "logs" / f"quantize-{snap.spec.name}.log"),
    }
    if store.keeps_folders_in_place:  # the workload shares this machine's disk
        return job | {
            "input_dir": str(store.folder(verified.folder)),
            "input_manifest": str(store.blob_path(verified.digest)),
            "calibration_files": [str(f) for f in files],
        }
    return job | {  # the workload fetches its inputs from the store and keeps its output there
        "store": store.workload_settings(),
        "input_dir": verified.folder,
        "input_manifest": verified.digest,
        "calibration_files": [store.put_bytes(f.read_bytes()) for f in files],
    }


def check_group_size(planned: dict[str, Any], folder: Path, where: str) -> None:
    """Raise unless the recipe's group size divides every Linear input of the model in `folder` (its
    config.json); the workload checks the same where it fetches the weights itself (`workload.run`)."""
    path = Path(folder) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise QuantizationError(f"{path}: cannot read the model's config: {exc}") from None
    problem = recipe.group_size_problem(planned, config)
    if problem:
        raise QuantizationError(f"{where}: {problem}")


def inputs_key(
    snap: SpecSnapshot, verified: VerifiedWeights, job: dict[str, Any], code_version: str, where: str
) -> str:
    """Everything the workload's result depends on: the stage's code version, the verified weights, the recipe (the
    scheme the preflight chose, the calibration settings), the seed, the calibration data's bytes, and where it runs
    (`where`: the target, and a cluster's quantize image). The quality budgets are not in it: the gates are judged
    again on the report."""
    files = calibration.files(snap.platform.file(snap.spec.quantization.calibration.path))
    identity = {
        "code": code_version,
        "verified": verified.digest,
        "recipe": job["recipe"],
        "seed": job["seed"],
        "calibration": [sha256_hex(f.read_bytes()) for f in files],
        "where": where,
    }
    return sha256_hex(canonical_json(identity))


def recorded(
    snap: SpecSnapshot,
    verified: VerifiedWeights,
    choice: SchemeChoice,
    key: str,
    records: Records,
    cache: Path | None = None,
) -> tuple[Quantized, str] | None:
    """The result the same inputs and code made before, its output folder re-hashed and held to its name, and where
    it was found ("home": this home's record; "shared": the machine's shared results, `cache`, then recorded here);
    None where there is none, or its output is gone or no longer matches (then the workload runs again)."""
    run = records.find(QuantizeRun, key)
    if run is not None:
        try:
            return accept(snap, verified, choice, run.report, records.store), "home"
        except (QuantizationError, MissingArtifactError, OSError):
            pass
    if cache is None or not records.store.keeps_folders_in_place:
        return None
    report = shared.get(cache, key, snap.platform.artifacts_path / "quantized")
    if report is None:
        return None
    try:
        found = accept(snap, verified, choice, report, records.store)
    except (QuantizationError, MissingArtifactError, OSError):
        shutil.rmtree(report["folder"], ignore_errors=True)  # a damaged entry: neither it nor its copy is kept
        shared.drop(cache, key)
        return None
    records.publish(QuantizeRun(key, report), key)
    return found, "shared"


def keep(key: str, report: dict[str, Any], result: Quantized, records: Records, cache: Path | None = None) -> None:
    """Record a fresh (and re-hashed) result under its inputs key, and share it with the machine's other homes where
    `cache` names a folder and the folder is on this machine's disk."""
    records.publish(QuantizeRun(key, report), key)
    if cache is not None and records.store.keeps_folders_in_place:
        shared.put(cache, key, report, records.store.folder(result.folder))


def gates(q: Quantization, report: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    increase, kl = report["ppl_increase"], report["kl_divergence"]
    return {
        PPL_GATE: (
            increase <= q.max_ppl_increase,
            f"perplexity {report['ppl_base']:.4f} -> "
            f"{report['ppl_quantized']:.4f} ({increase:+.2%}; max {q.max_ppl_increase:+.2%})",
        ),
        KL_GATE: (
            kl <= q.max_kl_divergence,
            f"mean KL(base || quantized) {kl:.5f} per token "
            f"(max {q.max_kl_divergence}); top-1 agreement {report['top1_agreement']:.2%}",
        ),
    }


def accept(
    snap: SpecSnapshot, verified: VerifiedWeights, choice: SchemeChoice, report: dict[str, Any], store: ArtifactStore
) -> Quantized:
    """The workload's output, re-hashed and held to its own name, judged by the quality gates."""
    if store.keeps_folders_in_place:
        folder = Path(report["folder"])
        expected = snap.platform.artifacts_path / "quantized" / report["digest"]
        if folder.resolve() != expected.resolve():
            raise QuantizationError(f"the workload reported {folder}, not {expected}")
        kept = store.keep_folder(folder)  # the folder itself: one machine
    else:  # kept in the registry by the workload's pod: fetched here, every byte held to its digest
        kept = report["folder"]
        folder = store.folder(kept)
    manifest = wm.build_manifest(folder)
    actual = store.put_json(manifest)  # the image stage reads it
    if actual != report["digest"]:
        raise QuantizationError(f"{folder}: manifest digest {actual[:12]}… != reported {report['digest'][:12]}…")
    method = recipe.from_spec(snap.spec.quantization, choice.scheme)["method"]
    return Quantized(actual, kept, method, verified.digest, report, gates(snap.spec.quantization, report), choice)


def passthrough(verified: VerifiedWeights) -> Quantized:
    """method: none: the verified weights, unchanged (same folder, same digest)."""
    unchanged = (True, "method none: weights unchanged")
    return Quantized(
        verified.digest, verified.folder, "none", verified.digest, gates={PPL_GATE: unchanged, KL_GATE: unchanged}
    )


def record(warehouse: Warehouse, snap: SpecSnapshot, result: Quantized) -> None:
    r = result.report
    choice = result.choice
    spec_recipe = recipe.from_spec(snap.spec.quantization, choice.scheme if choice else None)
    row = [
        result.digest,
        snap.spec.name,
        result.input_digest,
        result.method,
        canonical_json(spec_recipe).decode(),
        recipe.digest(spec_recipe),
        r.get("ppl_base"),
        r.get("ppl_quantized"),
        r.get("ppl_increase"),
        r.get("duration_s"),
        r.get("peak_memory_bytes"),
        r.get("kl_divergence"),
        r.get("top1_agreement"),
        result.passed,
        choice.scheme if choice else "none",
        snap.spec.quantization.scheme,
        choice.reason if choice else "method none: weights unchanged",
    ]
    with warehouse.write() as con:
        con.execute("DELETE FROM quantizations WHERE digest = ?", [result.digest])
        con.execute(
            "INSERT INTO quantizations (digest, model, input_digest, method, recipe, recipe_digest, ppl_base,"
            " ppl_quantized, ppl_increase, duration_s, peak_memory_bytes, kl_divergence, top1_agreement,"
            f" recipe_ok, scheme, requested_scheme, scheme_reason) VALUES ({', '.join('?' * len(row))})",
            row,
        )
