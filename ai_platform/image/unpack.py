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
import json
import os
import shutil
import tarfile
import uuid
from pathlib import Path
from typing import BinaryIO

from ai_platform.errors import ImageError
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
    manifest = json.loads(layout.read_blob(digest))
    final = Path(dest_root) / digest.removeprefix("sha256:")
    if not final.is_dir():
        tmp = Path(dest_root) / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        try:
            # A base image's layers (a shell for KServe) are not the model: vLLM needs /models only.
            skip = int((manifest.get("annotations") or {}).get(BASE_LAYERS, "0"))
            for layer in manifest["layers"][skip:]:
                with layout.blob_path(layer["digest"]).open("rb") as raw:
                    stream = _Hashing(raw)
                    with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                        extract(tar, tmp, f"layer {layer['digest']}")
                    if stream.drain() != layer["digest"]:
                        raise ImageError(f"{layout.root}: layer {layer['digest']} does not match its digest")
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    models = [p for p in (final / "models").iterdir() if p.is_dir()] if (final / "models").is_dir() else []
    if len(models) != 1:
        raise ImageError(f"image {digest}: expected one folder under /models, found {len(models)}")
    return models[0]
