"""The artifact store's two implementations behind one interface: a folder on this machine, and ORAS-style
artifacts in a real registry (Debian's docker-registry), read back from an empty cache as a fresh pod would."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from conftest import LocalRegistry

from ai_platform.artifacts import ArtifactStore, FolderStore, canonical_json, sha256_hex
from ai_platform.errors import MissingArtifactError, UnsafeLayerTitleError
from ai_platform.oci.store import FOLDER, REPOSITORY, RegistryStore


@pytest.fixture(params=["folder", "registry"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[ArtifactStore, ArtifactStore]:
    """Two stores over the same artifacts: the writer's, and a reader's with nothing on its own disk
    (for the folder store, the same folder: one machine)."""
    if request.param == "folder":
        return FolderStore(tmp_path / "a"), FolderStore(tmp_path / "a")
    registry: LocalRegistry = request.getfixturevalue("registry")
    url = f"http://{registry.host}/{tmp_path.name.lower()}"
    return RegistryStore(url, tmp_path / "writer"), RegistryStore(url, tmp_path / "reader")


def weights(folder: Path) -> Path:
    (folder / "sub").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\x00" * 4096)
    (folder / "config.json").write_text('{"a": 1}')
    (folder / "sub" / "tokenizer.json").write_text("{}")
    return folder


def test_blobs_refs_and_folders_come_back_from_another_store(stores, tmp_path: Path) -> None:
    writer, reader = stores
    digest = writer.put_json({"b": 2, "a": "é"})
    assert digest == sha256_hex(canonical_json({"a": "é", "b": 2}))
    assert reader.get_json(digest) == {"a": "é", "b": 2}
    assert reader.blob_path(digest).read_bytes() == canonical_json({"a": "é", "b": 2})

    writer.set_ref("raw_weights", "contract-reviewer", {"folder": "x", "n": 1})
    writer.set_ref("raw_weights", "contract-reviewer", {"folder": "y", "n": 2})  # a ref moves; the last one wins
    assert reader.ref("raw_weights", "contract-reviewer") == {"folder": "y", "n": 2}
    with pytest.raises(MissingArtifactError, match="verified_weights has not been materialized for 'other'"):
        reader.ref("verified_weights", "other")

    source = weights(tmp_path / "source")
    kept = writer.keep_folder(source)
    got = reader.folder(kept)
    files = sorted(p.relative_to(got).as_posix() for p in got.rglob("*") if p.is_file())
    assert files == ["config.json", "model.safetensors", "sub/tokenizer.json"]
    assert all((got / f).read_bytes() == (source / f).read_bytes() for f in files)
    assert reader.folder(kept) == got  # fetched once
    assert writer.keep_folder(source) == kept  # the same files keep the same name


def test_a_missing_blob_is_named(stores) -> None:
    _, reader = stores
    with pytest.raises(MissingArtifactError, match=f"sha256:{'0' * 64} is not in"):
        reader.get_json("0" * 64)


def test_registry_folder_is_an_oras_artifact(registry: LocalRegistry, tmp_path: Path) -> None:
    """Any OCI tool can read what the pipeline keeps: the manifest says what it is and names every file."""
    store = RegistryStore(f"http://{registry.host}/oras", tmp_path / "cache")
    kept = store.keep_folder(weights(tmp_path / "w"))
    assert kept.startswith(f"{registry.host}/oras/{REPOSITORY}@sha256:")
    got = httpx.get(
        f"http://{registry.host}/v2/oras/{REPOSITORY}/manifests/{kept.split('@')[1]}",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    manifest = json.loads(got.content)
    assert manifest["artifactType"] == FOLDER
    titles = [layer["annotations"]["org.opencontainers.image.title"] for layer in manifest["layers"]]
    assert titles == ["config.json", "model.safetensors", "sub/tokenizer.json"]


def test_registry_folder_with_a_title_outside_it_is_refused(registry: LocalRegistry, tmp_path: Path) -> None:
    """The registry is not trusted: a manifest whose file name climbs out of the folder writes nothing."""
    store = RegistryStore(f"http://{registry.host}/hostile", tmp_path / "cache")
    blob = store.put_bytes(b"owned")
    layer = {
        "mediaType": "application/octet-stream",
        "digest": f"sha256:{blob}",
        "size": 5,
        "annotations": {"org.opencontainers.image.title": "../../escaped"},
    }
    digest = store._put_manifest(None, FOLDER, [layer], {})
    with pytest.raises(UnsafeLayerTitleError, match="outside the folder"):
        store.folder(f"{store.where}@{digest}")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "cache" / "escaped").exists()


def test_a_folder_of_another_store_is_not_read(registry: LocalRegistry, tmp_path: Path) -> None:
    store = RegistryStore(f"http://{registry.host}/one", tmp_path / "cache")
    with pytest.raises(MissingArtifactError, match="is not a folder kept in"):
        store.folder(str(tmp_path))  # a path written by a folder store
    with pytest.raises(MissingArtifactError, match="is not a folder kept in"):
        store.folder(f"{registry.host}/two/{REPOSITORY}@sha256:{'1' * 64}")
