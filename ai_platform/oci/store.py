"""The artifact store in the platform's OCI registry: ORAS-style artifacts, so no stage needs another's disk.

One repository, `<registry>/ai-platform-artifacts`, holds everything:
- a blob is a registry blob of the same sha256;
- a ref is a tag, `<stage>.<partition>`, on a one-layer artifact manifest whose layer is the record's JSON;
- a folder is an artifact manifest with one layer per file, named by its `org.opencontainers.image.title`
  annotation (the ORAS convention, so `oras pull` unpacks it too), tagged by its digest so the registry's
  garbage collector keeps it.

Every byte fetched is held to its digest. The local folder is a cache in OCI-layout form; a fresh pod starts
with an empty one and fetches what it reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import httpx

from ai_platform.artifacts import ArtifactStore, FolderStore, atomic_write, canonical_json, sha256_hex
from ai_platform.errors import (
    ArtifactTypeError,
    ImageReferenceError,
    MissingArtifactError,
    RegistryProtocolError,
    UnpackableFolderError,
    UnsafeLayerTitleError,
)
from ai_platform.oci import documents
from ai_platform.oci.layout import EMPTY, MANIFEST, OciLayout
from ai_platform.oci.registry import Reference, RegistryClient, manifest_bytes, pull

REPOSITORY = "ai-platform-artifacts"
RECORD = "application/vnd.ai-platform.record.v1+json"
FOLDER = "application/vnd.ai-platform.folder.v1"
TITLE = "org.opencontainers.image.title"
TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
EMPTY_CONFIG = {"mediaType": EMPTY, "digest": f"sha256:{sha256_hex(b'{}')}", "size": 2, "data": "e30="}


class RegistrySettings(Protocol):
    """platform.yaml's `registry` section, as the store reads it."""

    @property
    def url(self) -> str: ...

    @property
    def insecure(self) -> bool: ...

    @property
    def token_realms(self) -> list[str]: ...


def open_store(kind: str, cache: Path, registry: RegistrySettings) -> ArtifactStore:
    """The artifact store platform.yaml's `storage.artifact_store` names, the one place that reads it: `folder`
    keeps artifacts in `cache` on this machine; `registry` keeps them in the platform's registry, `cache` being
    this machine's copy."""
    if kind == "folder":
        return FolderStore(cache)
    return registry_store(registry.url, cache, registry.insecure, tuple(registry.token_realms))


@cache
def registry_store(url: str, cache: Path, insecure: bool, token_realms: tuple[str, ...] = ()) -> RegistryStore:
    """The store of one registry and cache, one per process: its HTTP client keeps its connections and its login
    across the many reads and writes of a stage, instead of a new client for each."""
    return RegistryStore(url, cache, insecure=insecure, token_realms=token_realms)


class RegistryStore:
    def __init__(self, url: str, cache: Path, *, insecure: bool = False, token_realms: Iterable[str] = ()) -> None:
        self.url, self.insecure, self.token_realms = url, insecure, tuple(token_realms)
        host_and_prefix = url.split("://", 1)[1].rstrip("/")
        self.reference = Reference.parse(f"{host_and_prefix}/{REPOSITORY}")
        http = insecure or url.startswith("http://")
        self.client = RegistryClient(self.reference.host, insecure=http, token_realms=token_realms)
        self.cache = OciLayout(cache)

    @property
    def where(self) -> str:
        return f"{self.reference.host}/{self.reference.repository}"

    @property
    def keeps_folders_in_place(self) -> bool:
        return False

    def workload_settings(self) -> dict[str, Any]:
        """What a workload's pod needs to open this store (`ai_platform.quantize.workload`)."""
        return {"url": self.url, "insecure": self.insecure, "token_realms": list(self.token_realms)}

    # -- blobs

    def put_bytes(self, data: bytes) -> str:
        digest = sha256_hex(data)
        path = self.cache.blob_path(f"sha256:{digest}")
        if not path.is_file():
            atomic_write(path, data)
        self._send(path, digest, len(data))
        return digest

    def put_json(self, value: Any) -> str:
        return self.put_bytes(canonical_json(value))

    def blob_path(self, digest: str) -> Path:
        path = self.cache.blob_path(f"sha256:{digest}")
        if not path.is_file():
            if not self.client.has_blob(self.reference.repository, f"sha256:{digest}"):
                raise MissingArtifactError(f"artifact sha256:{digest} is not in {self.where}")
            self.client.fetch_blob(self.reference.repository, f"sha256:{digest}", self.cache)  # held to its digest
        return path

    def get_json(self, digest: str) -> Any:
        return json.loads(self.blob_path(digest).read_bytes())

    def _send(self, path: Path, digest: str, size: int) -> None:
        if not self.client.has_blob(self.reference.repository, f"sha256:{digest}"):
            self.client.upload(self.reference.repository, path, f"sha256:{digest}", size)

    # -- refs

    def set_ref(self, stage: str, partition: str, record: dict[str, Any]) -> None:
        data = canonical_json(record)
        digest = self.put_bytes(data)
        layer = {"mediaType": RECORD, "digest": f"sha256:{digest}", "size": len(data)}
        self._put_manifest(_tag(stage, partition), RECORD, [layer], {"ai-platform.ref": f"{stage}/{partition}"})

    def ref(self, stage: str, partition: str) -> dict[str, Any]:
        manifest = self._manifest(_tag(stage, partition))
        if manifest is None:
            raise MissingArtifactError(f"{stage} has not been materialized for '{partition}' yet (in {self.where})")
        layers = manifest.get("layers") or []
        if manifest.get("artifactType") != RECORD or len(layers) != 1:
            raise ArtifactTypeError(f"{self.where}:{_tag(stage, partition)} is not a stage record")
        record: dict[str, Any] = self.get_json(_hex(layers[0]["digest"]))
        return record

    def refs(self, stage: str) -> dict[str, dict[str, Any]]:
        repo = self.reference.repository
        listed = self.client.retrying(
            lambda: self.client.request("GET", f"/v2/{repo}/tags/list", expect=(200, 404), params={"n": 10000}),
            f"GET tags of {self.where}",
        )
        tags = _tags(listed, self.where) if listed.status_code == 200 else []
        prefix = f"{stage}."
        return {t[len(prefix) :]: self.ref(stage, t[len(prefix) :]) for t in sorted(tags) if t.startswith(prefix)}

    def fetch(self, reference: str) -> OciLayout:
        """Any artifact of this registry (`HOST/REPO@sha256:…`, e.g. a prompt bundle), pulled into this machine's
        cache layout with every byte held to its digest; the layout to read it from."""
        ref = Reference.parse(reference)
        if ref.host != self.reference.host or ref.digest is None:
            raise ImageReferenceError(f"{reference}: not an artifact of {self.reference.host} named by digest")
        layout = OciLayout(self.cache.root / "pulled" / ref.repository)
        if not layout.has_blob(ref.digest):
            http = self.client.base.startswith("http://")
            pull(ref, layout, tag=ref.digest.replace(":", "-"), insecure=http, token_realms=self.client.token_realms)
        return layout

    # -- folders

    def keep_folder(self, folder: Path) -> str:
        """Send every file the registry lacks, then the folder's manifest; the answer names it by digest."""
        layers = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest, size = _hash_file(path)
            self._send(path, digest, size)
            title = path.relative_to(folder).as_posix()
            layers.append(
                {
                    "mediaType": "application/octet-stream",
                    "digest": f"sha256:{digest}",
                    "size": size,
                    "annotations": {TITLE: title},
                }
            )
        if not layers:
            raise UnpackableFolderError(f"{folder}: no files to keep")
        digest = self._put_manifest(None, FOLDER, layers, {})
        return f"{self.where}@{digest}"

    def folder(self, kept: str) -> Path:
        """The kept folder under this machine's cache, fetched (and held to every digest) on first use."""
        ref = Reference.parse(kept) if "@sha256:" in kept else None
        if (
            ref is None
            or ref.digest is None
            or (ref.host, ref.repository) != (self.reference.host, self.reference.repository)
        ):
            raise MissingArtifactError(f"{kept} is not a folder kept in {self.where}: materialize its stage again")
        target = self.cache.root / "folders" / _hex(ref.digest)
        if target.is_dir():
            return target
        manifest = self._manifest(ref.digest)
        if manifest is None or manifest.get("artifactType") != FOLDER:
            raise MissingArtifactError(f"{kept}: no such folder in {self.where}")
        staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        for layer in manifest["layers"]:
            relative = _safe_title(layer, kept)
            source = self.blob_path(_hex(layer["digest"]))
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, staging / relative)  # the cache holds each byte once
            except OSError:
                shutil.copyfile(source, staging / relative)
        try:
            staging.rename(target)
        except OSError:  # another process fetched it first
            shutil.rmtree(staging, ignore_errors=True)
        return target

    # -- manifests

    def _put_manifest(
        self, tag: str | None, artifact_type: str, layers: list[dict[str, Any]], annotations: dict[str, str]
    ) -> str:
        self._send_empty_config()
        manifest: dict[str, Any] = {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "artifactType": artifact_type,
            "config": EMPTY_CONFIG,
            "layers": layers,
        }
        if annotations:
            manifest["annotations"] = annotations
        body = canonical_json(manifest)
        digest = f"sha256:{sha256_hex(body)}"
        tag = tag or f"folder-{_hex(digest)[:32]}"
        repo = self.reference.repository
        self.client.retrying(
            lambda: self.client.request(
                "PUT", f"/v2/{repo}/manifests/{tag}", expect=(201,), content=body, headers={"Content-Type": MANIFEST}
            ),
            f"PUT manifest {self.where}:{tag}",
        )
        return digest

    def _send_empty_config(self) -> None:
        self.put_bytes(b"{}")

    def _manifest(self, target: str) -> dict[str, Any] | None:
        by_digest = target.startswith("sha256:")
        ref = Reference(
            self.reference.host, self.reference.repository, None if by_digest else target, target if by_digest else None
        )
        found = manifest_bytes(self.client, ref)
        if found is None:
            return None
        return documents.manifest(found[0], f"{self.where}:{target}")


def _tags(listed: httpx.Response, where: str) -> list[str]:
    """The tags of a tag list answer (distribution-spec: `{"name": ..., "tags": [...]}`)."""
    try:
        tags = listed.json().get("tags") or []
    except (ValueError, RecursionError, AttributeError):
        tags = None
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise RegistryProtocolError(f"{where}: the registry's tag list is not a JSON object with a list of tags")
    return tags


def _tag(stage: str, partition: str) -> str:
    tag = f"{stage}.{partition}"
    if not TAG.match(tag):
        raise ImageReferenceError(f"{stage}/{partition}: not usable as a registry tag")
    return tag


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def _hash_file(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        while chunk := f.read(8 * 1024 * 1024):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _safe_title(layer: dict[str, Any], kept: str) -> PurePosixPath:
    """A layer's file name, refused unless it stays inside the folder (the registry is not trusted)."""
    title = (layer.get("annotations") or {}).get(TITLE, "")
    path = PurePosixPath(title)
    if not title or path.is_absolute() or ".." in path.parts or "\\" in title:
        raise UnsafeLayerTitleError(f"{kept}: layer {layer.get('digest')} names {title!r}, outside the folder")
    return path
