"""Unpack a model image from a layout into a folder to serve: what is served is what was imaged.

Every layer is streamed through `ai_platform.untar.extract` (tarfile's `data`
filter and the checks it lacks before CPython 3.11.13: no absolute paths, no
`..`, no links out however chained, nothing written through a symlink, no
device files) while its bytes are hashed and held to the layer digest (a base
image's layers are skipped). The result appears under `<dest>/<digest>` only when
whole, so a later start never serves a half-unpacked model.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import uuid
from pathlib import Path
from typing import BinaryIO

from ai_platform.errors import ArtifactTypeError, DigestMismatchError, MalformedImageError
from ai_platform.image.base import BASE_LAYERS
from ai_platform.oci.layout import OciLayout
from ai_platform.untar import extract


class _Hashing:
    """A read-only stream that hashes what passes through it."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.hash = raw, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.hash.update(data)
        return data

    def drain(self) -> str:
        while self.read(8 * 1024 * 1024):
            pass
        return f"sha256:{self.hash.hexdigest()}"


def unpack(layout: OciLayout, digest: str, dest_root: Path) -> Path:
    """The model folder (`.../models/<name>`) of image `digest`, unpacked under `dest_root`."""
    manifest = layout.manifest(digest)
    layers = manifest["layers"]
    # A base image's layers (a shell for KServe) are not the model: vLLM needs /models only.
    skip = (manifest.get("annotations") or {}).get(BASE_LAYERS, "0")
    if not (skip.isascii() and skip.isdigit() and int(skip) <= len(layers)):
        raise MalformedImageError(
            f"image {digest}: annotation {BASE_LAYERS}={skip!r} is not a count of its {len(layers)} layers"
        )
    final = Path(dest_root) / digest.removeprefix("sha256:")
    if not final.is_dir():
        tmp = Path(dest_root) / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        try:
            for layer in layers[int(skip) :]:
                _unpack_layer(layout, layer["digest"], tmp)
            _model_folder(tmp, digest)  # an image that is no model is refused before it is in place
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final / "models" / _model_folder(final, digest)


def _model_folder(root: Path, digest: str) -> str:
    """The name of the one folder under `root`/models."""
    models = [p.name for p in (root / "models").iterdir() if p.is_dir()] if (root / "models").is_dir() else []
    if len(models) != 1:
        raise ArtifactTypeError(f"image {digest}: expected one folder under /models, found {len(models)}")
    return models[0]


def _unpack_layer(layout: OciLayout, digest: str, dest: Path) -> None:
    """Extract one layer (an uncompressed tar, as the image build writes) into `dest`, held to its digest."""
    with layout.open_blob(digest) as raw:
        stream = _Hashing(raw)
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                extract(tar, dest, f"layer {digest}")
        except (tarfile.TarError, EOFError) as exc:
            if stream.drain() != digest:  # a corrupted blob first: that is the likelier cause
                raise DigestMismatchError(f"{layout.root}: layer {digest} does not match its digest") from None
            raise MalformedImageError(
                f"{layout.root}: layer {digest} is not a tar archive ({exc}); nothing was unpacked"
            ) from None
        if stream.drain() != digest:
            raise DigestMismatchError(f"{layout.root}: layer {digest} does not match its digest")
