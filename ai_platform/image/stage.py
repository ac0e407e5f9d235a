"""The model_image stage: the quantized weights as a reproducible OCI image, pushed where platform.yaml says."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ai_platform.artifacts import canonical_json
from ai_platform.image import base as image_base
from ai_platform.image import build as image_build
from ai_platform.image.locations import image_location, local_registry, publish
from ai_platform.oci.registry import Transfer
from ai_platform.records import ImageLocation, ModelImage, QuantizedWeights, RawWeights
from ai_platform.specs import SpecSnapshot
from ai_platform.warehouse import Warehouse

PREFIX = "ai-platform."


@dataclass(frozen=True)
class BuiltImage:
    built: image_build.Built
    location: ImageLocation  # what every later reader serves from (`image.locations.locate`)
    weights_digest: str
    pushed: Transfer | None

    @property
    def record(self) -> ModelImage:
        return ModelImage(self.built.digest, self.location, self.weights_digest)


# The layers' mtimes and the image's `created`: the Unix epoch, always (the convention reproducible image builders
# such as ko and apko keep, and SOURCE_DATE_EPOCH=0). The weights' identity is content (the source pin, the
# recipe, the quantized digest), which has no date of its own: the hub commit's date is not in the raw_weights
# record, a local source has no commit of its own, and any platform-repo commit would tie the image to whatever
# else that commit changed (a gate, a guard, a description), a new digest for the same bytes.
EPOCH = 0


def provenance(quantized: QuantizedWeights, raw: RawWeights, name: str) -> dict[str, str]:
    """Provenance that depends only on what the image is made of: the source pin, the quantization recipe and its
    result. Nothing from the spec's other fields (its description is metadata of model_spec, not of the image)."""
    source = raw.source
    found = {
        "org.opencontainers.image.created": iso(EPOCH),
        "org.opencontainers.image.title": name,
        f"{PREFIX}model": name,
        f"{PREFIX}source.digest": f"sha256:{raw.digest}",
        f"{PREFIX}weights.manifest": f"sha256:{quantized.digest}",
        f"{PREFIX}quantization.scheme": quantized.scheme,
        f"{PREFIX}quantization.recipe": f"sha256:{quantized.recipe_digest}" if quantized.recipe_digest else "none",
    }
    if source.get("kind") == "hub":  # the hub commit pins the source; a local folder is pinned by its digest alone
        found["org.opencontainers.image.revision"] = raw.commit
        found[f"{PREFIX}source.commit"] = raw.commit
        found["org.opencontainers.image.source"] = f"https://huggingface.co/{source['repo_id']}"
    return found


def iso(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_model_image(snap: SpecSnapshot, quantized: QuantizedWeights, raw: RawWeights) -> BuiltImage:
    store = snap.platform.artifacts()
    manifest = store.get_json(quantized.digest)
    known = {f["path"]: f["sha256"] for f in manifest["files"]}
    layout = local_registry(snap.platform, snap.spec.name)
    base, registry = snap.spec.image.base, snap.platform.config.registry
    built = image_build.build(
        layout,
        store.folder(quantized.folder),
        snap.spec.name,
        created=iso(EPOCH),
        mtime=EPOCH,
        annotations=provenance(quantized, raw, snap.spec.name),
        known_sha256=known,
        tags=["latest"],
        base=image_base.fetch(layout, base, insecure=registry.insecure, token_realms=registry.token_realms)
        if base
        else None,
    )
    pushed = publish(snap.platform, layout, snap.spec.name, built.descriptor)
    location = image_location(snap.platform, snap.spec.name, layout, built.digest)
    return BuiltImage(built, location, quantized.digest, pushed)


def record(warehouse: Warehouse, snap: SpecSnapshot, image: BuiltImage) -> None:
    size = image.built.descriptor.size + sum(layer["size"] for layer in image.built.manifest["layers"])
    row = [
        image.built.digest,
        snap.spec.name,
        image.record.ref,
        image.weights_digest,
        size,
        canonical_json(image.built.manifest.get("annotations", {})).decode(),
    ]
    with warehouse.write() as con:
        con.execute("DELETE FROM images WHERE digest = ?", [image.built.digest])
        con.execute(
            "INSERT INTO images (digest, model, ref, weights_digest, size_bytes, annotations)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            row,
        )
