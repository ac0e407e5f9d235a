"""The content-addressed artifact store (a local folder on the embedded default).

Blobs live at `blobs/sha256/<digest>`; a *ref* names the current output of one
stage for one partition (`refs/<stage>/<partition>.json`), the way a git ref
names a commit. Writes are atomic (write to a temp name, then rename), so a
crashed run never leaves a half-written ref behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

from ai_platform.errors import MissingArtifactError


def canonical_json(value: Any) -> bytes:
    """Sorted keys, UTF-8, no insignificant whitespace: the bytes whose sha256 is a version."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write under a temp name unique to this process and thread, then rename: readers see all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class ArtifactStore:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def put_bytes(self, data: bytes) -> str:
        digest = sha256_hex(data)
        path = self.blob_path(digest)
        if not path.exists():
            atomic_write(path, data)
        return digest

    def put_json(self, value: Any) -> str:
        return self.put_bytes(canonical_json(value))

    def blob_path(self, digest: str) -> Path:
        return self.root / "blobs" / "sha256" / digest

    def get_json(self, digest: str) -> Any:
        path = self.blob_path(digest)
        if not path.is_file():
            raise MissingArtifactError(f"artifact sha256:{digest} is not in {self.root}")
        return json.loads(path.read_bytes())

    def set_ref(self, stage: str, partition: str, record: dict[str, Any]) -> None:
        atomic_write(self.root / "refs" / stage / f"{partition}.json", canonical_json(record))

    def ref(self, stage: str, partition: str) -> dict[str, Any]:
        path = self.root / "refs" / stage / f"{partition}.json"
        if not path.is_file():
            raise MissingArtifactError(f"{stage} has not been materialized for '{partition}' yet")
        record: dict[str, Any] = json.loads(path.read_bytes())
        return record
