"""The content-addressed artifact store: what one stage leaves for the next.

Three kinds of things, each behind one interface (`ArtifactStore`):
- *blobs*, named by their sha256 (manifests, compiled prompts, trust models);
- *refs*, which name the current output of one stage for one partition, the
  way a git ref names a commit;
- *folders* (weights), kept whole and handed back as a local folder.

Two implementations, chosen once from platform.yaml by the store factory (`ai_platform.oci.store.open_store`,
the only place that reads `storage.artifact_store`):
`FolderStore` here, a folder on this machine's disk (the embedded default), and
`ai_platform.oci.store.RegistryStore`, ORAS-style artifacts in the
platform's OCI registry, so a stage in a fresh pod finds every input without
the previous stage's disk. Writes are atomic (write to a temp name, then
rename), so a crashed run never leaves a half-written ref behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, Protocol

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


class ArtifactStore(Protocol):
    """Where stages keep blobs, refs and folders (digests are bare sha256 hex)."""

    @property
    def where(self) -> str:
        """The store, as a person would name it (a folder, a registry repository)."""
        ...

    def put_bytes(self, data: bytes) -> str: ...

    def put_json(self, value: Any) -> str: ...

    def blob_path(self, digest: str) -> Path:
        """A file on this machine holding the blob (fetched first, if the store is remote)."""
        ...

    def get_json(self, digest: str) -> Any: ...

    def set_ref(self, stage: str, partition: str, record: dict[str, Any]) -> None: ...

    def ref(self, stage: str, partition: str) -> dict[str, Any]: ...

    def refs(self, stage: str) -> dict[str, dict[str, Any]]:
        """Every partition's ref of `stage`, by partition."""
        ...

    def keep_folder(self, folder: Path) -> str:
        """Keep a folder's files; the answer is what a record stores and `folder` resolves."""
        ...

    @property
    def keeps_folders_in_place(self) -> bool:
        """True: a kept folder is the folder itself on this machine's disk, so a workload here reads its
        inputs and writes its output in place; False: folders travel through the store (another machine's
        workload fetches and keeps them itself, as `workload_settings` says)."""
        ...

    def workload_settings(self) -> dict[str, Any] | None:
        """How a workload on another machine opens this store (plain JSON); None where it shares this disk."""
        ...

    def folder(self, kept: str) -> Path:
        """A folder on this machine with exactly the files `keep_folder` kept."""
        ...


class FolderStore:
    """The embedded default: `blobs/sha256/<digest>` and `refs/<stage>/<partition>.json` under one folder."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    @property
    def where(self) -> str:
        return str(self.root)

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

    def refs(self, stage: str) -> dict[str, dict[str, Any]]:
        return {p.stem: json.loads(p.read_bytes()) for p in sorted((self.root / "refs" / stage).glob("*.json"))}

    def keep_folder(self, folder: Path) -> str:
        """On one machine the folder itself is kept: weights are not copied."""
        return str(folder)

    @property
    def keeps_folders_in_place(self) -> bool:
        return True

    def workload_settings(self) -> None:
        return None

    def folder(self, kept: str) -> Path:
        path = Path(kept)
        if not path.is_dir():
            raise MissingArtifactError(f"{kept} is not a folder on this machine: materialize its stage again")
        return path
