"""The weights manifest: every file's size and sha256, every tensor's sha256.

A manifest is canonical JSON; its sha256 is the verified weights' digest. It is
what a later verification is held to (a trusted manifest) and what a
"fine-tune" is compared with (a reference manifest of its base model).
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.errors import (
    NoWeightsError,
    PickleNotAllowedError,
    SecondOpinionError,
    ShardIndexError,
    WeightsManifestError,
)
from ai_platform.weights import pickles
from ai_platform.weights.files import check_entry
from ai_platform.weights.hashing import hash_files
from ai_platform.weights.hub import safe_repo_path

SCHEMA = "ai-platform.weights-manifest/v1"


def scan(folder: Path, *, allow_pickle: bool = False) -> list[str]:
    """Relative paths of the files under `folder`, refusing what must never be loaded.

    Refused: anything but regular files and symlinks that end at one inside the folder
    (`files.check_entry`: FIFOs, sockets, devices, dangling or looping links, links that
    leave), and pickle-based weights (they run code on load) unless the spec opts in with
    `allow_pickle` and picklescan reports each one clean.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NoWeightsError(f"{folder}: not a folder")
    root = folder.resolve()
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        top = Path(dirpath) == folder
        # huggingface_hub keeps its download bookkeeping in <local_dir>/.cache/huggingface
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and not (top and d == ".cache"))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            relative = path.relative_to(folder).as_posix()
            check_entry(path, relative, root)
            if pickles.is_pickle(path):
                if not allow_pickle:
                    raise PickleNotAllowedError(
                        f"{relative}: pickle-based weights are refused (they can run code when loaded);"
                        " opt in with source.allow_pickle to accept a clean picklescan report"
                    )
                pickles.check(path, relative)
            found.append(relative)
    if not any(p.endswith(".safetensors") or (allow_pickle and pickles.is_pickle(p)) for p in found):
        kinds = ".safetensors or opted-in pickle" if allow_pickle else ".safetensors"
        raise NoWeightsError(f"{folder}: no weights ({kinds} files)")
    return found


def second_opinion(path: Path, names: set[str]) -> None:
    """Open the file with the reference `safetensors` reader too; it must agree on the tensors."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "np") as f:
            theirs = set(f.keys())
    except Exception as exc:  # the reference reader's own error types vary by version
        raise SecondOpinionError(f"{path.name}: the safetensors library refuses it: {exc}") from None
    if theirs != names:
        raise SecondOpinionError(f"{path.name}: the safetensors library sees other tensors ({sorted(theirs ^ names)})")


def build_manifest(
    folder: Path, *, allow_pickle: bool = False, on_done: Callable[[Path, int], None] | None = None
) -> dict[str, Any]:
    """Validate and hash every file of a model folder into a manifest.

    Pickle files (opted in, scanned clean) get a file-level sha256 only: their
    tensors cannot be located without unpickling, which is what we refuse to do.
    """
    folder = Path(folder)
    relative = scan(folder, allow_pickle=allow_pickle)
    hashed = hash_files([folder / r for r in relative], on_done=on_done)
    files = []
    for rel, h in zip(relative, hashed, strict=True):
        entry: dict[str, Any] = {"path": rel, "size": h.size, "sha256": h.sha256}
        if h.header is not None:
            second_opinion(h.path, {t.name for t in h.header.tensors})
            entry["metadata"] = h.header.metadata
            entry["tensors"] = [
                {
                    "name": t.name,
                    "dtype": t.dtype,
                    "shape": list(t.shape),
                    "data_begin": t.begin,
                    "data_end": t.end,
                    "sha256": h.tensors[t.name],
                }
                for t in h.header.tensors
            ]
        files.append(entry)
    for rel in relative:
        if rel.endswith(INDEX_SUFFIX):
            check_shard_index(folder, rel, files)
    return {"schema": SCHEMA, "files": files}


INDEX_SUFFIX = ".safetensors.index.json"


def check_shard_index(folder: Path, index: str, files: list[dict[str, Any]]) -> None:
    """A sharded model's index must name only shards that are in the folder and hold the tensors it says."""
    try:
        doc = json.loads((folder / index).read_bytes())
    except ValueError as exc:
        raise ShardIndexError(f"{index}: not a JSON shard index ({exc})") from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise ShardIndexError(f"{index}: weight_map must map tensor names to shard files")
    base = posixpath.dirname(index)
    outside = sorted({shard for shard in weight_map.values() if not safe_repo_path(shard)})
    if outside:
        named = ", ".join(map(repr, outside))
        raise ShardIndexError(f"{index}: weight_map names shards outside the model folder: {named}")
    tensors = {f["path"]: {t["name"] for t in f.get("tensors", [])} for f in files}
    missing: dict[str, str] = {}  # shard -> the first tensor the index puts there
    for tensor, shard in weight_map.items():
        if posixpath.join(base, shard) not in tensors:
            missing.setdefault(shard, tensor)
    if missing:
        named = ", ".join(f"{shard!r} (for {tensor})" for shard, tensor in sorted(missing.items()))
        raise ShardIndexError(
            f"{index}: weight_map names {named}, which {'is' if len(missing) == 1 else 'are'} not in the folder;"
            " put the missing shards back (from the hub: download the whole commit again)"
        )
    for tensor, shard in weight_map.items():
        if tensor not in tensors[posixpath.join(base, shard)]:
            raise ShardIndexError(f"{index}: {tensor} is not in {shard}, where weight_map puts it")


def digest(manifest: dict[str, Any]) -> str:
    return sha256_hex(canonical_json(manifest))


def load(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WeightsManifestError(f"{path}: cannot read manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise WeightsManifestError(f"{path}: not a weights manifest (schema must be {SCHEMA!r})")
    return manifest


def _tensors(manifest: dict[str, Any]) -> dict[tuple[str, str], str]:
    return {(f["path"], t["name"]): t["sha256"] for f in manifest["files"] for t in f.get("tensors", [])}


def compare(actual: dict[str, Any], trusted: dict[str, Any]) -> list[str]:
    """Every difference from the trusted manifest, naming the file and, for weights, the tensor."""
    problems = []
    mine = {f["path"]: f for f in actual["files"]}
    theirs = {f["path"]: f for f in trusted["files"]}
    for path in sorted(theirs.keys() - mine.keys()):
        problems.append(f"{path}: missing")
    for path in sorted(mine.keys() - theirs.keys()):
        problems.append(f"{path}: not in the trusted manifest")
    ours_t, trusted_t = _tensors(actual), _tensors(trusted)
    for path in sorted(mine.keys() & theirs.keys()):
        if mine[path]["sha256"] == theirs[path]["sha256"]:
            continue
        changed = [name for (p, name), sha in trusted_t.items() if p == path and ours_t.get((p, name)) != sha]
        added = [name for (p, name) in ours_t if p == path and (p, name) not in trusted_t]
        detail = f"; tensors differ: {', '.join(changed + added)}" if changed or added else ""
        problems.append(
            f"{path}: sha256 {mine[path]['sha256'][:12]}… != trusted {theirs[path]['sha256'][:12]}…{detail}"
        )
    return problems


def identical_fraction(actual: dict[str, Any], reference: dict[str, Any]) -> float:
    """Share of this model's tensors byte-identical to the reference's tensor of the same name."""
    ours = {name: sha for (_, name), sha in _tensors(actual).items()}
    base = {name: sha for (_, name), sha in _tensors(reference).items()}
    return sum(base.get(name) == sha for name, sha in ours.items()) / len(ours) if ours else 0.0


def not_a_fine_tune(fraction: float, limit: float) -> list[str]:
    """The problem a claimed fine-tune has when at least `limit` of its tensors equal its base model's
    (the model spec's verification.identical_fraction_limit)."""
    if fraction < limit:
        return []
    return [
        f"{fraction:.1%} of tensors are byte-identical to the reference model,"
        f" at or above the {limit * 100:g}% limit: not a fine-tune"
    ]
