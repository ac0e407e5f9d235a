"""An OCI image layout on disk (image-spec v1.1 `image-layout.md`): the embedded registry.

    <root>/oci-layout               {"imageLayoutVersion": "1.0.0"}
    <root>/index.json               the tagged manifests (`org.opencontainers.image.ref.name`)
    <root>/blobs/sha256/<digest>    content-addressed blobs

Blobs are written to a temp name and renamed, and index.json is rewritten
under a lock, so concurrent runs and a killed run never leave a torn layout.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ai_platform.artifacts import canonical_json, sha256_hex
from ai_platform.errors import PlatformError

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"


class ImageError(PlatformError):
    """An OCI layout or image is missing, malformed, or does not match its digest."""


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str  # "sha256:<hex>"
    size: int
    annotations: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.annotations:
            out["annotations"] = dict(sorted(self.annotations.items()))
        return out


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class OciLayout:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def _init(self) -> None:
        (self.root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        if not (self.root / "oci-layout").is_file():
            _atomic_write(self.root / "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')

    def blob_path(self, digest: str) -> Path:
        algorithm, _, hex_digest = digest.partition(":")
        if algorithm != "sha256" or len(hex_digest) != 64:
            raise ImageError(f"unsupported digest {digest!r}")
        return self.root / "blobs" / "sha256" / hex_digest

    def put_blob(self, data: bytes, media_type: str, annotations: dict[str, str] | None = None) -> Descriptor:
        self._init()
        digest = f"sha256:{sha256_hex(data)}"
        path = self.blob_path(digest)
        if not path.is_file():
            _atomic_write(path, data)
        return Descriptor(media_type, digest, len(data), annotations)

    def read_blob(self, descriptor: Descriptor | str) -> bytes:
        digest = descriptor if isinstance(descriptor, str) else descriptor.digest
        try:
            data = self.blob_path(digest).read_bytes()
        except FileNotFoundError:
            raise ImageError(f"{self.root}: blob {digest} is missing") from None
        if f"sha256:{sha256_hex(data)}" != digest:
            raise ImageError(f"{self.root}: blob {digest} does not match its digest")
        return data

    def put_manifest(self, manifest: dict[str, Any], tags: list[str]) -> Descriptor:
        """Store a manifest and point each tag at it (a tag that pointed elsewhere moves)."""
        blob = self.put_blob(canonical_json(manifest), MANIFEST)
        extra = {"artifactType": manifest["artifactType"]} if "artifactType" in manifest else {}
        with self._index() as index:
            index["manifests"] = [m for m in index["manifests"] if m.get("annotations", {}).get(REF_NAME) not in tags]
            for tag in tags:
                entry = Descriptor(MANIFEST, blob.digest, blob.size, {REF_NAME: tag}).to_json()
                index["manifests"].append({**entry, **extra})
        return blob

    def resolve(self, tag: str) -> Descriptor:
        index = self._read_index()
        for entry in index["manifests"]:
            if entry.get("annotations", {}).get(REF_NAME) == tag:
                return Descriptor(entry["mediaType"], entry["digest"], entry["size"], entry.get("annotations"))
        raise ImageError(f"{self.root}: no tag {tag!r}")

    def manifest(self, ref: str) -> dict[str, Any]:
        """The manifest for a tag or a `sha256:` digest."""
        digest = ref if ref.startswith("sha256:") else self.resolve(ref).digest
        return json.loads(self.read_blob(digest))

    def _read_index(self) -> dict[str, Any]:
        path = self.root / "index.json"
        if not path.is_file():
            return {"schemaVersion": 2, "mediaType": INDEX, "manifests": []}
        try:
            return json.loads(path.read_bytes())
        except ValueError as exc:
            raise ImageError(f"{path}: not JSON: {exc}") from None

    @contextmanager
    def _index(self) -> Iterator[dict[str, Any]]:
        self._init()
        with (self.root / ".index.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = self._read_index()
            yield index
            _atomic_write(self.root / "index.json", canonical_json(index))
