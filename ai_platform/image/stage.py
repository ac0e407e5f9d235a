"""The model_image stage, and where images live: the embedded registry or a remote one.

`registry.url` in platform.yaml: `oci-layout://PATH` keeps one OCI layout per
repository under PATH (relative to the platform home); `https://HOST[/PREFIX]`
(or `http://` for a registry on loopback) builds into a local layout under the
artifacts and pushes from it. Either way the manifest digest is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ai_platform.artifacts import ArtifactStore, canonical_json
from ai_platform.config import HubSource, Platform
from ai_platform.image import base as image_base
from ai_platform.image import build as image_build
from ai_platform.image.layout import Descriptor, OciLayout
from ai_platform.image.registry import Reference, Transfer, push
from ai_platform.quantize import recipe
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse

PREFIX = "ai-platform."


def local_registry(platform: Platform, repository: str) -> OciLayout:
    url = platform.config.registry.url
    if url.startswith("oci-layout://"):
        return OciLayout(platform.state(url.removeprefix("oci-layout://")) / repository)
    return OciLayout(platform.artifacts_path / "oci" / repository)


def remote(platform: Platform, repository: str, tag: str) -> Reference | None:
    url = platform.config.registry.url
    if url.startswith("oci-layout://"):
        return None
    host_and_prefix = url.split("://", 1)[1].rstrip("/")
    return Reference.parse(f"{host_and_prefix}/{repository}:{tag}")


def publish(platform: Platform, layout: OciLayout, repository: str, descriptor: Descriptor) -> Transfer | None:
    """Push to the remote registry, if platform.yaml names one; tagged by digest, so pushes never clash."""
    tag = f"sha-{descriptor.digest.removeprefix('sha256:')[:16]}"
    dest = remote(platform, repository, tag)
    if dest is None:
        return None
    scheme_http = platform.config.registry.url.startswith("http://")
    return push(layout, tag, dest, insecure=platform.config.registry.insecure or scheme_http)


@dataclass(frozen=True)
class ModelImage:
    built: image_build.Built
    ref: str  # where it can be pulled from
    weights_digest: str
    pushed: Transfer | None


def annotations(snap: SpecSnapshot, quantized: dict[str, Any], raw: dict[str, Any]) -> dict[str, str]:
    """Provenance that depends only on what the image is made of (never on a prompt-only commit)."""
    weights = snap.weights_commit or snap.commit
    source = snap.spec.source
    q = snap.spec.quantization
    found = {
        "org.opencontainers.image.created": iso(weights.timestamp),
        "org.opencontainers.image.revision": weights.sha,
        "org.opencontainers.image.title": snap.spec.name,
        f"{PREFIX}model": snap.spec.name,
        f"{PREFIX}source.commit": raw["commit"] if isinstance(source, HubSource) else weights.sha,
        f"{PREFIX}weights.manifest": f"sha256:{quantized['digest']}",
        f"{PREFIX}quantization.recipe": (f"sha256:{recipe.digest(recipe.from_spec(q))}"
                                         if quantized["method"] != "none" else "none"),
    }  # fmt: skip
    if isinstance(source, HubSource):
        found["org.opencontainers.image.source"] = f"https://huggingface.co/{source.repo_id}"
    if snap.spec.description:
        found["org.opencontainers.image.description"] = snap.spec.description
    return found


def iso(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_model_image(snap: SpecSnapshot) -> ModelImage:
    store = ArtifactStore(snap.platform.artifacts_path)
    quantized = store.ref("quantized_weights", snap.spec.name)
    raw = store.ref("raw_weights", snap.spec.name)
    manifest = store.get_json(quantized["digest"])
    known = {f["path"]: f["sha256"] for f in manifest["files"]}
    layout = local_registry(snap.platform, snap.spec.name)
    weights = snap.weights_commit or snap.commit
    base = snap.spec.image.base
    built = image_build.build(
        layout,
        Path(quantized["folder"]),
        snap.spec.name,
        created=iso(weights.timestamp),
        mtime=weights.timestamp,
        annotations=annotations(snap, quantized, raw),
        known_sha256=known,
        tags=["latest"],
        base=image_base.fetch(layout, base, insecure=snap.platform.config.registry.insecure) if base else None,
    )
    pushed = publish(snap.platform, layout, snap.spec.name, built.descriptor)
    where = remote(snap.platform, snap.spec.name, f"sha-{built.digest.removeprefix('sha256:')[:16]}")
    ref = str(where) if where else f"oci:{layout.root}@{built.digest}"
    store.set_ref("model_image", snap.spec.name, {"digest": built.digest, "ref": ref, "layout": str(layout.root),
                                                  "weights_digest": quantized["digest"]})  # fmt: skip
    return ModelImage(built, ref, quantized["digest"], pushed)


def record(warehouse: Warehouse, snap: SpecSnapshot, image: ModelImage) -> None:
    size = image.built.descriptor.size + sum(layer["size"] for layer in image.built.manifest["layers"])
    row = [image.built.digest, snap.spec.name, image.ref, image.weights_digest, size,
           canonical_json(image.built.manifest.get("annotations", {})).decode()]  # fmt: skip
    with warehouse.write() as con:
        con.execute("DELETE FROM images WHERE digest = ?", [image.built.digest])
        con.execute("INSERT INTO images (digest, model, ref, weights_digest, size_bytes, annotations)"
                    " VALUES (?, ?, ?, ?, ?, ?)", row)  # fmt: skip
