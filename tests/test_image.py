"""The OCI model image: reproducible, layered, reused by digest, and readable by real clients
(skopeo, umoci) through a real registry (Debian's docker-registry on 127.0.0.1)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import LocalRegistry

from ai_platform.errors import (
    ArchiveEscapeError,
    DigestMismatchError,
    ImageReferenceError,
    NotAnImageLayoutError,
    PlatformMismatchError,
    SpecialMemberError,
    ThroughSymlinkError,
    UnsafeArchiveError,
)
from ai_platform.image.base import BASE_DIGEST, BASE_LAYERS, BASE_NAME, fetch
from ai_platform.image.build import LAYER, build
from ai_platform.image.unpack import unpack
from ai_platform.oci.layout import OciLayout
from ai_platform.oci.registry import DOCKER_MANIFEST, Reference, RegistryClient, pull, push
from ai_platform.weights import manifest as wm

NAME = "contract-reviewer"
MTIME = 1767603600
CREATED = "2026-01-05T09:00:00Z"


def needs(tool: str) -> None:
    if not shutil.which(tool):
        pytest.skip(f"{tool} is not installed (apt-get install {tool}; `make test` installs it)")


@pytest.fixture
def model(demo_model_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(demo_model_dir, folder)
    return folder


def known(folder: Path) -> dict[str, str]:
    return {f["path"]: f["sha256"] for f in wm.build_manifest(folder)["files"]}


def make(layout: OciLayout, folder: Path, **kwargs: object):
    return build(layout, folder, NAME, created=CREATED, mtime=MTIME, tags=["latest"], **kwargs)  # type: ignore[arg-type]


def test_same_inputs_same_digest_and_normalized_headers(model: Path, tmp_path: Path) -> None:
    a = make(OciLayout(tmp_path / "a"), model)
    b = make(OciLayout(tmp_path / "b"), model, known_sha256=known(model))
    assert a.digest == b.digest
    layout = OciLayout(tmp_path / "a")
    titles = [layer["annotations"]["org.opencontainers.image.title"] for layer in a.manifest["layers"]]
    assert titles == ["model.safetensors", "model files (config, tokenizer, chat template)", "health check"]
    for layer in a.manifest["layers"]:
        assert layer["mediaType"] == LAYER
        with tarfile.open(layout.blob_path(layer["digest"])) as tar:
            for member in tar.getmembers():
                assert f"models/{NAME}".startswith(member.name) or member.name.startswith(f"models/{NAME}/")
                assert (member.uid, member.gid, member.uname, member.gname, member.mtime) == (0, 0, "", "", MTIME)
                assert member.mode == (0o755 if member.isdir() else 0o644)


def test_rebuild_after_a_small_change_writes_that_layer_config_and_manifest_only(model: Path, tmp_path: Path) -> None:
    layout = OciLayout(tmp_path / "layout")
    first = make(layout, model, known_sha256=known(model))
    config = json.loads((model / "generation_config.json").read_text())
    config["max_new_tokens"] = 300
    (model / "generation_config.json").write_text(json.dumps(config))

    second = make(layout, model, known_sha256=known(model))
    assert second.digest != first.digest
    weights, files, health = second.layers
    assert weights["reused"] and weights["digest"] == first.layers[0]["digest"]  # not even read
    assert health["digest"] == first.layers[2]["digest"]
    manifest_size = len(layout.read_blob(second.digest))
    assert second.bytes_written == files["size"] + second.manifest["config"]["size"] + manifest_size


def test_kernel_copy_and_plain_copy_store_the_same_bytes(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = make(OciLayout(tmp_path / "kernel"), model, known_sha256=known(model))
    monkeypatch.delattr("os.copy_file_range")  # a kernel or platform without it
    plain = make(OciLayout(tmp_path / "plain"), model, known_sha256=known(model))
    assert plain.digest == kernel.digest
    for layer in kernel.manifest["layers"]:
        stored = (tmp_path / "kernel/blobs/sha256" / layer["digest"].removeprefix("sha256:")).read_bytes()
        assert f"sha256:{hashlib.sha256(stored).hexdigest()}" == layer["digest"]
        assert stored == (tmp_path / "plain/blobs/sha256" / layer["digest"].removeprefix("sha256:")).read_bytes()


def test_weights_that_differ_from_the_verified_hash_are_refused(model: Path, tmp_path: Path) -> None:
    hashes = known(model)
    hashes["model.safetensors"] = "0" * 64
    with pytest.raises(DigestMismatchError, match=r"model\.safetensors: sha256 .* != verified"):
        make(OciLayout(tmp_path / "layout"), model, known_sha256=hashes)
    leftovers = list((tmp_path / "layout/blobs/sha256").iterdir())
    assert all(p.name.startswith(".") is False for p in leftovers)  # no half-written upload remains


def test_skopeo_and_umoci_read_what_we_wrote_and_pushed(model: Path, tmp_path: Path, registry: LocalRegistry) -> None:
    needs("skopeo")
    needs("umoci")
    layout = OciLayout(tmp_path / "layout")
    built = make(layout, model)
    ref = f"{registry.host}/models/{NAME}:v1"
    first = push(layout, "latest", Reference.parse(ref))
    assert first.blobs_sent == 4 and first.digest == built.digest

    inspect = subprocess.run(
        ["skopeo", "inspect", "--tls-verify=false", f"docker://{ref}"], capture_output=True, text=True, check=True
    )
    assert json.loads(inspect.stdout)["Digest"] == built.digest
    copied = tmp_path / "copied"
    subprocess.run(
        ["skopeo", "copy", "--src-tls-verify=false", "--preserve-digests", f"docker://{ref}", f"oci:{copied}:v1"],
        capture_output=True,
        check=True,
    )
    assert OciLayout(copied).resolve("v1").digest == built.digest

    bundle = tmp_path / "bundle"
    subprocess.run(
        ["umoci", "unpack", "--rootless", "--image", f"{tmp_path / 'layout'}:latest", str(bundle)],
        capture_output=True,
        check=True,
    )
    unpacked = bundle / "rootfs" / "models" / NAME
    for rel, sha in known(model).items():
        assert hashlib.sha256((unpacked / rel).read_bytes()).hexdigest() == sha, rel
    health = subprocess.run(["python3", str(unpacked / ".ai-platform/healthcheck.py")], capture_output=True, text=True)
    assert health.returncode == 0, health.stdout

    again = push(layout, "latest", Reference.parse(f"{registry.host}/models/{NAME}:v2"))
    assert (again.blobs_sent, again.blobs_skipped) == (0, 4)


def test_chunked_push_and_verified_pull(model: Path, tmp_path: Path, registry: LocalRegistry) -> None:
    layout = OciLayout(tmp_path / "layout")
    built = make(layout, model)
    ref = Reference.parse(f"{registry.host}/chunked/{NAME}:v1")
    assert push(layout, "latest", ref, chunk_size=256 * 1024).blobs_sent == 4
    pulled = OciLayout(tmp_path / "pulled")
    assert pull(ref, pulled).digest == built.digest
    assert pulled.resolve("v1").digest == built.digest

    # A blob corrupted at rest in the registry is caught on the way in.
    layer = built.manifest["layers"][1]["digest"].removeprefix("sha256:")
    data = registry.storage / "docker/registry/v2/blobs/sha256" / layer[:2] / layer / "data"
    good = data.read_bytes()
    data.write_bytes(good[:-1] + b"\x01")
    try:
        with pytest.raises(DigestMismatchError, match="hashes to"):
            pull(ref, OciLayout(tmp_path / "pulled-again"))
    finally:
        data.write_bytes(good)  # the registry is the session's: later tests push and pull this blob too


def test_bad_references_and_layouts_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ImageReferenceError, match="not an image reference"):
        Reference.parse("no-repository")
    with pytest.raises(NotAnImageLayoutError, match="not an OCI image layout"):
        push(OciLayout(tmp_path / "missing"), None, Reference.parse("127.0.0.1:1/x/y:z"))


def _push_base(registry: LocalRegistry, tmp_path: Path) -> tuple[str, str]:
    """A stand-in for busybox as Docker Hub serves it: an index of Docker-typed manifests whose
    one layer is gzipped and holds `bin/sh`. Returns the index's reference and the amd64 digest."""
    layout = OciLayout(tmp_path / "base")
    amd64 = ""
    for arch in ("arm64", "amd64"):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            script = f"#!/bin/true {arch}\n".encode()
            info = tarfile.TarInfo("bin/sh")
            info.size, info.mode = len(script), 0o755
            tar.addfile(info, io.BytesIO(script))
        layer = layout.put_blob(
            gzip.compress(raw.getvalue(), mtime=0), "application/vnd.docker.image.rootfs.diff.tar.gzip"
        )
        config = {
            "architecture": arch,
            "os": "linux",
            "config": {"Env": ["PATH=/bin"], "Cmd": ["sh"]},
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(raw.getvalue()).hexdigest()}"]},
            "history": [{"created_by": "ADD rootfs"}],
        }
        config_blob = layout.put_blob(json.dumps(config).encode(), "application/vnd.docker.container.image.v1+json")
        manifest = {
            "schemaVersion": 2,
            "mediaType": DOCKER_MANIFEST,
            "config": config_blob.to_json(),
            "layers": [layer.to_json()],
        }
        digest = layout.put_manifest(manifest, tags=[arch], media_type=DOCKER_MANIFEST).digest
        push(layout, arch, Reference.parse(f"{registry.host}/library/busybox:{arch}"))
        amd64 = digest if arch == "amd64" else amd64
    entries = [
        {
            "mediaType": DOCKER_MANIFEST,
            "digest": layout.resolve(a).digest,
            "size": layout.resolve(a).size,
            "platform": {"os": "linux", "architecture": a},
        }
        for a in ("arm64", "amd64")
    ]
    index = json.dumps(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries}
    ).encode()
    index_digest = f"sha256:{hashlib.sha256(index).hexdigest()}"
    client = RegistryClient(registry.host)
    try:
        client.request(
            "PUT",
            f"/v2/library/busybox/manifests/{index_digest}",
            expect=(201,),
            content=index,
            headers={"Content-Type": "application/vnd.oci.image.index.v1+json"},
        )
    finally:
        client.close()
    return f"{registry.host}/library/busybox@{index_digest}", amd64


def test_a_base_image_goes_under_the_model_for_a_kserve_modelcar(
    model: Path, tmp_path: Path, registry: LocalRegistry
) -> None:
    needs("skopeo")
    needs("umoci")
    base_ref, amd64 = _push_base(registry, tmp_path)
    layout = OciLayout(tmp_path / "layout")
    base = fetch(layout, base_ref)  # an index digest: its linux/amd64 image
    assert base.digest == amd64
    assert base.layers[0].media_type == "application/vnd.oci.image.layer.v1.tar+gzip"  # renamed, same bytes
    built = make(layout, model, base=base)
    assert built.manifest["annotations"][BASE_NAME] == base_ref
    assert (built.manifest["annotations"][BASE_DIGEST], built.manifest["annotations"][BASE_LAYERS]) == (amd64, "1")
    assert built.manifest["layers"][0]["digest"] == base.layers[0].digest
    config = json.loads(layout.read_blob(built.manifest["config"]["digest"]))
    assert config["config"]["Cmd"] == ["sh"] and config["config"]["WorkingDir"] == f"/models/{NAME}"
    assert config["rootfs"]["diff_ids"][0] == base.diff_ids[0] and len(config["history"]) == 4
    again = OciLayout(tmp_path / "again")  # reproducible: a second layout, the base pulled afresh
    assert make(again, model, base=fetch(again, base_ref)).digest == built.digest
    assert fetch(layout, base_ref).digest == amd64  # already in the layout: not fetched again

    ref = f"{registry.host}/modelcars/{NAME}:v1"
    push(layout, "latest", Reference.parse(ref))
    inspect = subprocess.run(
        ["skopeo", "inspect", "--tls-verify=false", f"docker://{ref}"], capture_output=True, text=True, check=True
    )
    assert json.loads(inspect.stdout)["Digest"] == built.digest
    bundle = tmp_path / "bundle"
    subprocess.run(
        ["umoci", "unpack", "--rootless", "--image", f"{tmp_path / 'layout'}:latest", str(bundle)],
        capture_output=True,
        check=True,
    )
    assert (bundle / "rootfs/bin/sh").read_bytes() == b"#!/bin/true amd64\n"
    for rel, sha in known(model).items():
        assert hashlib.sha256((bundle / "rootfs/models" / NAME / rel).read_bytes()).hexdigest() == sha, rel

    served = unpack(layout, built.digest, tmp_path / "serve")  # vLLM gets the model, not the base
    assert served.name == NAME and not (served.parent.parent / "bin").exists()


def test_a_base_must_be_pinned_and_fit_the_platform(tmp_path: Path, registry: LocalRegistry) -> None:
    base_ref, _ = _push_base(registry, tmp_path)
    layout = OciLayout(tmp_path / "layout")
    with pytest.raises(ImageReferenceError, match="by digest"):
        fetch(layout, f"{registry.host}/library/busybox:amd64")
    arm64 = Reference.parse(f"{registry.host}/library/busybox:arm64")
    pinned = pull(arm64, OciLayout(tmp_path / "probe")).digest
    with pytest.raises(PlatformMismatchError, match="linux/arm64 image, not linux/amd64"):
        fetch(layout, f"{registry.host}/library/busybox@{pinned}")
    assert base_ref.startswith(registry.host)


# ------------------------------------------------------------------ layers that reach outside the folder


def member(
    name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b"x"
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 3
    return info, data


def tar_of(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out.getvalue()


def long_path_escape() -> bytes:
    """CVE-2025-4517's shape: links through names so long that realpath gives up before it sees them leave."""
    comp, steps, members, step_path = "d" * 247, "abcdefghijklmnop", [], ""
    for step in steps:
        members += [member(f"{step_path}{comp}", tarfile.DIRTYPE), member(f"{step_path}{step}", tarfile.SYMTYPE, comp)]
        step_path += f"{step}/"
    link = "/".join(steps) + "/" + "l" * 254
    members.append(member(link, tarfile.SYMTYPE, "../" * len(steps)))
    members.append(member("escape", tarfile.SYMTYPE, link + "/.." * 2 + "/outside"))
    members.append(member("escape/planted", data=b"written outside"))
    return tar_of(*members)


ESCAPES: dict[str, tuple[bytes, type[UnsafeArchiveError], str]] = {
    "symlink": (tar_of(member("link", tarfile.SYMTYPE, "../outside/secret")), ArchiveEscapeError, "leads outside"),
    "hardlink": (tar_of(member("hard", tarfile.LNKTYPE, "../outside/secret")), ArchiveEscapeError, "leads outside"),
    "link-chain": (  # `a` is checked while `l` does not exist yet; then l -> . makes a -> ../outside
        tar_of(member("a", tarfile.SYMTYPE, "l/../outside/secret"), member("l", tarfile.SYMTYPE, ".")),
        ArchiveEscapeError,
        "leads outside",
    ),
    "through-symlink-dir": (
        tar_of(member("sub", tarfile.DIRTYPE), member("dir", tarfile.SYMTYPE, "sub"), member("dir/file")),
        ThroughSymlinkError,
        "through the symlink 'dir'",
    ),
    "long-path": (long_path_escape(), ThroughSymlinkError, "through the symlink"),
    "device": (tar_of(member("null", tarfile.CHRTYPE)), SpecialMemberError, "a device or FIFO"),
    "fifo": (tar_of(member("pipe", tarfile.FIFOTYPE)), SpecialMemberError, "a device or FIFO"),
}


def image_of_layer(layout: OciLayout, layer: bytes) -> str:
    config = layout.put_blob(b"{}", "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "config": config.to_json(), "layers": [layout.put_blob(layer, LAYER).to_json()]}
    return layout.put_manifest(manifest, ["bad"]).digest


@pytest.mark.parametrize("case", list(ESCAPES))
def test_a_layer_that_reaches_outside_is_refused_and_nothing_is_left(tmp_path: Path, case: str) -> None:
    layer, refusal, reason = ESCAPES[case]
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret").write_text("keep")
    layout = OciLayout(tmp_path / "layout")
    digest = image_of_layer(layout, layer)
    with pytest.raises(refusal, match=reason) as refused:
        unpack(layout, digest, tmp_path / "serve")
    assert str(refused.value).startswith(f"layer {layout.manifest(digest)['layers'][0]['digest']}: ")
    assert str(refused.value).endswith("; nothing was extracted")
    assert list((tmp_path / "serve").iterdir()) == [], "no half-unpacked image may stay behind"
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["secret"]
    assert (tmp_path / "outside/secret").read_text() == "keep"
