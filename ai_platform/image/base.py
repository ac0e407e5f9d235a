"""A base image for the model image to stand on (a shell for a KServe modelcar).

The base is pulled once into the model's layout (every byte held to its digest,
kept by digest, so a rebuild does not fetch it again) and read back strictly: a
Linux image whose config lists one diff_id per layer. Docker media types are
renamed to their OCI equals (the same bytes, the same digests), so the model
image's manifest stays a plain OCI one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ai_platform.errors import ImageNotFoundError, ImageReferenceError, MalformedImageError, PlatformMismatchError
from ai_platform.oci import documents
from ai_platform.oci.documents import MAX_DOCUMENT
from ai_platform.oci.layout import Descriptor, OciLayout
from ai_platform.oci.registry import Reference, pull

PLATFORM = ("linux", "amd64")  # (os, architecture) of every model image: a base must match it
OCI_TYPES = {
    "application/vnd.docker.image.rootfs.diff.tar": "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
}
LAYER_TYPES = {
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.oci.image.layer.v1.tar+gzip",
    "application/vnd.oci.image.layer.v1.tar+zstd",
}
# The manifest annotations that name the base (image-spec annotations.md), and ours: how many
# of the image's layers are the base's (unpacking for vLLM skips them).
BASE_NAME = "org.opencontainers.image.base.name"
BASE_DIGEST = "org.opencontainers.image.base.digest"
BASE_LAYERS = "ai-platform.base.layers"


@dataclass(frozen=True)
class BaseImage:
    name: str  # as configured
    digest: str  # its image manifest (the platform's one, when the name is an index)
    layers: list[Descriptor]
    config: dict[str, Any]  # the image config, as the base's authors wrote it

    @property
    def diff_ids(self) -> list[str]:
        return list((self.config.get("rootfs") or {}).get("diff_ids") or [])


def fetch(layout: OciLayout, name: str, *, insecure: bool = False, token_realms: Iterable[str] = ()) -> BaseImage:
    """Pull base `name` (HOST/REPOSITORY@sha256:…) into `layout` and read it back."""
    ref = Reference.parse(name)
    if ref.digest is None:
        raise ImageReferenceError(
            f"image.base {name!r}: name the base by digest (…@sha256:…), so the build is reproducible"
        )
    tag = f"base-{ref.digest.removeprefix('sha256:')[:16]}"
    try:
        digest = layout.resolve(tag).digest
    except ImageNotFoundError:  # not pulled yet (or no layout there yet)
        digest = pull(ref, layout, tag, insecure=insecure, platform=PLATFORM, token_realms=token_realms).digest
    return read(layout, name, digest)


def read(layout: OciLayout, name: str, digest: str) -> BaseImage:
    manifest = layout.manifest(digest)
    where = f"image.base {name} ({digest[:19]})"
    config = documents.image_config(
        layout.read_blob(Descriptor.from_json(manifest["config"]), MAX_DOCUMENT), f"{where}: config"
    )
    if (config.get("os"), config.get("architecture")) != PLATFORM:
        raise PlatformMismatchError(
            f"{where}: a {config.get('os')}/{config.get('architecture')} image, not {'/'.join(PLATFORM)}"
        )
    layers = []
    for layer in manifest.get("layers", []):
        media_type = OCI_TYPES.get(layer["mediaType"], layer["mediaType"])
        if media_type not in LAYER_TYPES:
            raise MalformedImageError(f"{where}: layer {layer['digest']} is a {layer['mediaType']}, not an image layer")
        layers.append(Descriptor(media_type, layer["digest"], layer["size"], layer.get("annotations")))
    diff_ids = (config.get("rootfs") or {}).get("diff_ids") or []
    if len(diff_ids) != len(layers):
        raise MalformedImageError(f"{where}: {len(layers)} layers but {len(diff_ids)} diff_ids in its config")
    return BaseImage(name, digest, layers, config)
