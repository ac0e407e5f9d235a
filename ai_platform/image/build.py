"""The model image: a reproducible, layered OCI image of a model folder, written daemonless.

Layers (uncompressed tar: weights do not compress, and the digest stays the
diff_id), files under `/models/<name>/` so the image mounts as a Kubernetes
image volume (KEP-4639) and works as a KServe modelcar:
  one per weight file    unchanged files keep their layer digest across builds
  one for the rest       config, tokenizer, chat template, generation config
  one health check       a static script; the same layer in every image
Prompts are not in the image: they travel in the prompt bundle, so a prompt
change never makes a new model image. With a base image (base.py) its layers
come first and its runtime config (shell, Env) is kept; the manifest names it.

With `known` sha256s (the verified manifest), a weight layer whose key
(path, size, content sha256, mtime) was built before is reused without reading
the file; otherwise the file is streamed once, hashed as it is packed, and
held to the known sha256.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ai_platform.artifacts import atomic_write, canonical_json, sha256_hex
from ai_platform.errors import DigestMismatchError, UnpackableFolderError
from ai_platform.image.base import BASE_DIGEST, BASE_LAYERS, BASE_NAME, PLATFORM, BaseImage
from ai_platform.image.tarball import Entry, write_layer
from ai_platform.oci.layout import Descriptor, OciLayout

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
TITLE = "org.opencontainers.image.title"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
CACHE = "ai-platform-layers.json"  # beside the layout's blobs: layer key -> descriptor
KEY_VERSION = 1
# One packer per core: on 2 cores, 4 shards of 512 MiB took 2.4-3.2 s with 1, 1.2-1.3 s with 2, 1.4 s with 4.
PACKERS = os.cpu_count() or 2


@dataclass
class Built:
    descriptor: Descriptor
    manifest: dict[str, Any]
    layers: list[dict[str, Any]] = field(default_factory=list)  # title, digest, size, reused
    bytes_written: int = 0

    @property
    def digest(self) -> str:
        return self.descriptor.digest


def _files(folder: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                raise UnpackableFolderError(f"{path}: links and special files are not packed")
            found.append(path.relative_to(folder).as_posix())
    if not found:
        raise UnpackableFolderError(f"{folder}: no files to pack")
    return sorted(found)


def healthcheck_script() -> bytes:
    return resources.files("ai_platform.image").joinpath("healthcheck.py").read_bytes()


class _Cache:
    def __init__(self, layout: OciLayout) -> None:
        self.path = layout.root / CACHE
        self.layout = layout
        try:
            self.entries: dict[str, dict[str, Any]] = json.loads(self.path.read_text()) if self.path.is_file() else {}
        except ValueError:
            self.entries = {}  # a cache, not a record: rebuild it

    def get(self, key: str) -> Descriptor | None:
        hit = self.entries.get(key)
        if hit and self.layout.has_blob(hit["digest"]):
            return Descriptor(LAYER, hit["digest"], hit["size"])
        return None

    def put(self, key: str, descriptor: Descriptor) -> None:
        self.entries[key] = {"digest": descriptor.digest, "size": descriptor.size}

    def save(self) -> None:
        atomic_write(self.path, canonical_json(self.entries))


def _layer(layout: OciLayout, entries: list[Entry], mtime: int, known: dict[str, str]) -> Descriptor:
    with layout.blob_writer(LAYER) as writer:
        # The content hash is only needed to hold files to a verified sha256.
        digests = write_layer(writer, entries, mtime, hash_contents=any(e.name in known for e in entries))
        for entry in entries:
            want = known.get(entry.name)
            if want and digests[entry.name] != want:
                raise DigestMismatchError(
                    f"{entry.source}: sha256 {digests[entry.name][:12]}… != verified {want[:12]}…"
                )
        return writer.commit()


def build(
    layout: OciLayout,
    model_dir: Path,
    name: str,
    *,
    created: str,
    mtime: int,
    annotations: dict[str, str] | None = None,
    known_sha256: dict[str, str] | None = None,
    tags: list[str] | None = None,
    base: BaseImage | None = None,
) -> Built:
    """Pack `model_dir` as image `name`; `known_sha256` maps relative paths to their verified sha256.

    `base` (already in `layout`, see base.fetch) goes under the model's layers."""
    model_dir = Path(model_dir)
    start = layout.bytes_written
    root = f"models/{name}"
    files = _files(model_dir)
    known = {f"{root}/{rel}": sha for rel, sha in (known_sha256 or {}).items()}
    cache = _Cache(layout)

    def weight_layer(rel: str) -> tuple[str, Descriptor, bool]:
        entry = Entry(f"{root}/{rel}", source=model_dir / rel)
        sha = known.get(entry.name)
        key = sha256_hex(canonical_json([KEY_VERSION, entry.name, entry.size, sha, mtime])) if sha else None
        hit = cache.get(key) if key else None
        descriptor = hit or _layer(layout, [entry], mtime, known)
        if key:
            cache.put(key, descriptor)
        return rel, descriptor, hit is not None

    # Shards in parallel: hashing one (hashlib releases the GIL) overlaps the kernel's copy
    # of another.
    weights = [f for f in files if f.endswith(WEIGHT_SUFFIXES)]
    with ThreadPoolExecutor(max_workers=max(1, min(len(weights), PACKERS))) as pool:
        layers: list[tuple[str, Descriptor, bool]] = list(pool.map(weight_layer, weights))
    rest = [Entry(f"{root}/{rel}", source=model_dir / rel) for rel in files if not rel.endswith(WEIGHT_SUFFIXES)]
    if rest:
        layers.append(("model files (config, tokenizer, chat template)", _layer(layout, rest, mtime, known), False))
    check = [Entry(f"{root}/.ai-platform/healthcheck.py", data=healthcheck_script())]
    layers.append(("health check", _layer(layout, check, mtime, {}), False))
    cache.save()

    labels = dict(sorted((annotations or {}).items()))
    runtime = {"WorkingDir": f"/{root}", "Labels": labels}
    history = [{"created": created, "created_by": f"ai-platform image build: {title}"} for title, _, _ in layers]
    notes = {"org.opencontainers.image.created": created, **(annotations or {})}
    base_layers: list[Descriptor] = []
    if base is not None:
        # The base's runtime (Env, Entrypoint, Cmd, User) is what a modelcar runs; ours adds labels.
        base_runtime = base.config.get("config") or {}
        runtime = {**base_runtime, **runtime, "Labels": {**(base_runtime.get("Labels") or {}), **labels}}
        history = [*base.config.get("history", []), *history]
        notes |= {BASE_NAME: base.name, BASE_DIGEST: base.digest, BASE_LAYERS: str(len(base.layers))}
        base_layers = base.layers
    config = {
        "created": created,
        "architecture": PLATFORM[1],
        "os": PLATFORM[0],
        "config": runtime,
        "rootfs": {"type": "layers", "diff_ids": [*(base.diff_ids if base else []), *(d.digest for _, d, _ in layers)]},
        "history": history,
    }
    config_blob = layout.put_blob(canonical_json(config), CONFIG)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": config_blob.to_json(),
        "layers": [
            *(d.to_json() for d in base_layers),
            *(Descriptor(LAYER, d.digest, d.size, {TITLE: title}).to_json() for title, d, _ in layers),
        ],
        "annotations": dict(sorted(notes.items())),
    }
    short = sha256_hex(canonical_json(manifest))[:16]
    descriptor = layout.put_manifest(manifest, tags=[*(tags or []), f"sha-{short}"])
    summary = (
        [{"title": f"base {base.name}", "digest": d.digest, "size": d.size, "reused": True} for d in base_layers]
        if base
        else []
    )
    summary += [{"title": t, "digest": d.digest, "size": d.size, "reused": r} for t, d, r in layers]
    return Built(descriptor, manifest, summary, layout.bytes_written - start)
