"""OCI layouts and registry answers from outside, fuzzed: an ImageError (a PlatformError) or a sound result, never
a KeyError/TypeError/JSONDecodeError/RecursionError traceback, never a file opened outside the layout, never half
an image left behind.

- index.json: arbitrary bytes, and near-valid indexes whose entries have hostile media types, digests
  (`sha256:../../outside/secret`, upper-case hex, other algorithms, not strings), sizes and annotations;
- manifests: arbitrary bytes and near-valid manifests behind a valid index entry, read by every reader of a
  layout (`OciLayout.manifest`, `image.base.read`, `image.unpack.unpack`, `oci.registry.push`'s reading);
- registry answers: the same manifests served by a registry (tests/test_registry_trust.py's stand-in), under
  every Content-Type, with blobs that lie about their size, pulled into a layout.

An audit hook records every file opened during a call: none may lie under the test's folder but outside the
layout and the unpack destination.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import queue
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_registry_trust import Server, _Handler, running

from ai_platform.errors import (
    DigestMismatchError,
    LayoutEntryError,
    MalformedImageError,
    PlatformError,
    RegistryProtocolError,
    RegistryRefusedError,
)
from ai_platform.image.base import read as read_base
from ai_platform.image.unpack import unpack
from ai_platform.oci.documents import MAX_DOCUMENT
from ai_platform.oci.layout import INDEX, MANIFEST, REF_NAME, OciLayout
from ai_platform.oci.registry import DOCKER_LIST, DOCKER_MANIFEST, Reference, RegistryClient, pull

pytestmark = pytest.mark.fuzz

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"


def sha(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def tar_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


GOOD_LAYER = tar_of({"models/m/config.json": b"{}"})
GOOD_CONFIG = json.dumps({"os": "linux", "architecture": "amd64", "rootfs": {"diff_ids": [sha(GOOD_LAYER)]}}).encode()
GARBAGE = b"not a tar archive, not gzip, not anything"
BLOBS = [GOOD_LAYER, GOOD_CONFIG, GARBAGE, b"{}"]

# ----------------------------------------------------------------------------- where files are opened

_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _opened.append(os.path.abspath(os.fsdecode(args[0])))


sys.addaudithook(_audit)  # stays for the process; records only inside `opening_only`


def opening_only(tmp: Path, allowed: list[Path], call: Callable[[], Any]) -> Any:
    """`call()`, checking that every file it opens under `tmp` is under one of `allowed`; PlatformErrors pass."""
    global _opened
    _opened = []
    try:
        return call()
    finally:
        opened, _opened = _opened, None
        inside = [p for p in opened if Path(p).is_relative_to(tmp)]
        strays = [p for p in inside if not any(Path(p).is_relative_to(root) for root in allowed)]
        assert not strays, f"opened outside the layout: {strays}"


# ----------------------------------------------------------------------------- strategies

DIGEST = st.one_of(
    st.sampled_from([sha(b) for b in BLOBS]),
    st.sampled_from(
        [
            "sha256:../../outside/secret",
            "sha256:" + "../" * 10 + "outside/secret",
            "sha256:/etc/passwd",
            "sha256:" + sha(GOOD_LAYER)[7:].upper(),
            "sha512:" + "a" * 128,
            "sha256:" + "a" * 63,
            "sha256:" + "a" * 64 + "\n",
            "sha256:" + "a" * 64 + "/..",
            "sha256",
            "",
            "sha256:" + "0" * 64,  # well formed, missing
        ]
    ),
    st.text(max_size=80),
    st.integers(),
    st.none(),
    st.lists(st.text(max_size=3), max_size=2),
)
MEDIA_TYPE = st.one_of(
    st.sampled_from([MANIFEST, INDEX, DOCKER_MANIFEST, DOCKER_LIST, LAYER, CONFIG_TYPE, "application/json", ""]),
    st.text(max_size=20),
    st.integers(),
    st.none(),
)
SIZE = st.one_of(
    st.sampled_from([len(b) for b in BLOBS]),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=5),
    st.none(),
    st.booleans(),
)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
JSON_VALUE = st.recursive(
    JSON_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
)
ANNOTATIONS = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from([REF_NAME, "ai-platform.base.layers", "org.opencontainers.image.title", "x"]),
        st.one_of(st.sampled_from(["t", "0", "1", "2", "-1", "x", "99999999999999999999"]), JSON_VALUE),
        max_size=3,
    ),
    JSON_VALUE,
)


@st.composite
def descriptor(draw: st.DrawFn, valid_share: int = 3) -> Any:
    """A descriptor: mostly a sound one of a blob the layout holds, else any field hostile or missing."""
    blob = draw(st.sampled_from(BLOBS))
    fields: dict[str, Any] = {"mediaType": LAYER, "digest": sha(blob), "size": len(blob)}
    if not draw(st.integers(0, valid_share)):
        return draw(JSON_VALUE)
    for key, strategy in (("mediaType", MEDIA_TYPE), ("digest", DIGEST), ("size", SIZE), ("annotations", ANNOTATIONS)):
        roll = draw(st.integers(0, 5))
        if roll == 0:
            fields.pop(key, None)
        elif roll == 1:
            fields[key] = draw(strategy)
    if draw(st.booleans()):
        fields["platform"] = draw(
            st.one_of(st.fixed_dictionaries({"os": st.just("linux"), "architecture": st.just("amd64")}), JSON_VALUE)
        )
    return fields


@st.composite
def index_document(draw: st.DrawFn) -> Any:
    entries = draw(st.lists(descriptor(), max_size=4))
    for entry in entries:
        if isinstance(entry, dict) and draw(st.integers(0, 3)):
            entry.setdefault("annotations", {REF_NAME: "t"})
    doc: dict[str, Any] = {"schemaVersion": 2, "mediaType": INDEX, "manifests": entries}
    if not draw(st.integers(0, 4)):
        doc[draw(st.sampled_from(["schemaVersion", "mediaType", "manifests"]))] = draw(JSON_VALUE)
    return doc if draw(st.integers(0, 9)) else draw(JSON_VALUE)


@st.composite
def manifest_document(draw: st.DrawFn) -> Any:
    doc: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": draw(st.sampled_from([MANIFEST, DOCKER_MANIFEST, None])),
        "config": draw(descriptor()),
        "layers": draw(st.lists(descriptor(), max_size=3)),
    }
    if doc["mediaType"] is None:
        del doc["mediaType"]
    if draw(st.booleans()):
        doc["annotations"] = draw(ANNOTATIONS)
    if not draw(st.integers(0, 4)):
        doc[draw(st.sampled_from(["schemaVersion", "mediaType", "config", "layers", "artifactType"]))] = draw(
            st.one_of(MEDIA_TYPE, JSON_VALUE)
        )
    return doc if draw(st.integers(0, 9)) else draw(JSON_VALUE)


DEEP = st.sampled_from([b"[" * 100_000, b'{"a":' * 100_000, b'{"manifests": ' + b"[" * 50_000])
DOCUMENT_BYTES = st.one_of(
    st.binary(max_size=300),
    DEEP,
    index_document().map(lambda d: json.dumps(d).encode()),
    manifest_document().map(lambda d: json.dumps(d).encode()),
)

# ----------------------------------------------------------------------------- layouts


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Path]:
    """A folder with a secret outside the layouts the examples write inside it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret").write_text("keep")
    yield tmp_path


_serial = iter(range(10**9))


def layout_with(place: Path, index: bytes | None = None, manifest: bytes | None = None) -> OciLayout:
    """A fresh layout holding BLOBS; `manifest` tagged `t` by a sound index entry, or `index` as index.json."""
    layout = OciLayout(place / f"layout-{next(_serial)}")
    for blob in BLOBS:
        layout.put_blob(blob, "application/octet-stream")
    if manifest is not None:
        blob = layout.put_blob(manifest, MANIFEST)
        entry = {"mediaType": MANIFEST, "digest": blob.digest, "size": blob.size, "annotations": {REF_NAME: "t"}}
        (layout.root / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    if index is not None:
        (layout.root / "index.json").write_bytes(index)
    return layout


def refused_or(layout: OciLayout, place: Path, call: Callable[[], Any], allowed: list[Path] | None = None) -> Any:
    """`call()`'s result, or None when it raised an ImageError or another PlatformError with a message."""
    try:
        return opening_only(place, [layout.root, *(allowed or [])], call)
    except PlatformError as exc:
        assert str(exc)
        return None


def _index_naming(digest: str) -> bytes:
    entry = {"mediaType": MANIFEST, "digest": digest, "size": 2, "annotations": {REF_NAME: "t"}}
    return json.dumps({"schemaVersion": 2, "manifests": [entry]}).encode()


@FUZZ
@given(DOCUMENT_BYTES)
@example(_index_naming("sha256:" + "92279B2D43188133E2350677A3E62318E58237B6D71CACA73D3E2A4505A134DD"))  # found by it
@example(_index_naming("sha512:" + "ab" * 64))  # a registered algorithm this layout stores no blob under
def test_index_json(place: Path, data: bytes) -> None:
    layout = layout_with(place, index=data)
    found = refused_or(layout, place, lambda: layout.resolve("t"))
    if found is not None:
        assert isinstance(found.media_type, str) and isinstance(found.size, int) and found.size >= 0
        assert layout.blob_path(found.digest).is_relative_to(layout.root)
    refused_or(layout, place, lambda: layout.manifest("t"))


NO_MODEL = json.dumps(  # a sound image without a /models folder: found by this test, kept as an example
    {
        "schemaVersion": 2,
        "config": {"mediaType": CONFIG_TYPE, "digest": sha(GOOD_CONFIG), "size": len(GOOD_CONFIG)},
        "layers": [],
    }
).encode()


@FUZZ
@example(NO_MODEL)
@given(DOCUMENT_BYTES)
def test_manifests_read_from_a_layout(place: Path, data: bytes) -> None:
    layout = layout_with(place, manifest=data)
    digest = sha(data)
    dest = place / f"serve-{next(_serial)}"
    dest.mkdir()
    manifest = refused_or(layout, place, lambda: layout.manifest("t"))
    assert manifest is None or isinstance(manifest, dict)
    refused_or(layout, place, lambda: read_base(layout, "base", digest))
    served = refused_or(layout, place, lambda: unpack(layout, digest, dest), [dest])
    if served is None:
        assert list(dest.iterdir()) == [], "a refused image left files behind"
    assert (place / "outside/secret").read_text() == "keep"


@FUZZ
@given(st.integers(0, len(BLOBS) - 1), st.sampled_from(["link", "fifo", "dir"]))
def test_a_blob_that_is_not_a_regular_file_in_the_layout(place: Path, which: int, kind: str) -> None:
    """A handed-over layout whose blob file is a symlink out, a FIFO (would block) or a folder."""
    blob = BLOBS[which]
    layout = layout_with(place)
    path = layout.blob_path(sha(blob))
    path.unlink()
    if kind == "link":
        path.symlink_to(place / "outside/secret")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(LayoutEntryError, match="not a regular file"):
        opening_only(place, [layout.root], lambda: layout.read_blob(sha(blob)))


# ----------------------------------------------------------------------------- registry answers


class _Realm(_Handler):
    """The stand-in registry, and a token service at /realm that answers what the test serves there."""

    def do_GET(self) -> None:
        outcome = "whole"
        try:
            if self.path.startswith("/realm"):
                body, headers = self.server.answers.get("/realm", (b"", {}))
                self._send(200, body, headers)
            else:
                super().do_GET()
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: the answer was cut off
            outcome = "cut"
        self.server.sent.put((self.path, outcome))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def registry() -> Iterator[Server]:
    with running() as server:  # the lying registry of test_registry_trust, answering as _Realm does
        server.RequestHandlerClass = _Realm
        server.sent = queue.Queue()  # type: ignore[attr-defined]  # (path, whole | cut) of each answer
        yield server


CONTENT_TYPES = st.sampled_from([MANIFEST, INDEX, DOCKER_MANIFEST, DOCKER_LIST, "application/json", "text/html", ""])


@FUZZ
@given(DOCUMENT_BYTES, CONTENT_TYPES, st.booleans(), st.sampled_from([None, ("linux", "amd64")]))
def test_manifests_a_registry_answers(
    registry: Server, place: Path, body: bytes, content_type: str, by_digest: bool, platform: tuple[str, str] | None
) -> None:
    registry.answers.clear()
    for blob in BLOBS:
        registry.serve(f"/v2/m/blobs/{sha(blob)}", blob)
    registry.serve("/v2/m/manifests/v1", body, Content_Type=content_type)
    registry.serve(f"/v2/m/manifests/{sha(body)}", body, Content_Type=content_type)
    layout = OciLayout(place / f"pulled-{next(_serial)}")
    ref = Reference(registry.host, "m", digest=sha(body)) if by_digest else Reference(registry.host, "m", tag="v1")
    done = refused_or(layout, place, lambda: pull(ref, layout, "t", platform=platform))
    if done is None:
        index = layout.root / "index.json"
        assert not index.exists() or not json.loads(index.read_bytes())["manifests"], "a refused pull tagged it"
    leftovers = list((layout.root / "blobs/sha256").glob(".upload-*")) if layout.root.exists() else []
    assert leftovers == [], "a refused download left a partial blob"


@FUZZ
@given(st.integers(0, len(BLOBS) - 1), st.binary(min_size=1, max_size=64))
def test_a_blob_longer_than_its_descriptor_says_is_refused_at_that_size(
    registry: Server, place: Path, which: int, extra: bytes
) -> None:
    blob = BLOBS[which]
    registry.answers.clear()
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": {"mediaType": CONFIG_TYPE, "digest": sha(b"{}"), "size": 2},
        "layers": [{"mediaType": LAYER, "digest": sha(blob), "size": len(blob)}],
    }
    body = json.dumps(manifest).encode()
    registry.serve(f"/v2/m/manifests/{sha(body)}", body, Content_Type=MANIFEST)
    registry.serve(f"/v2/m/blobs/{sha(b'{}')}", b"{}")
    registry.serve(f"/v2/m/blobs/{sha(blob)}", blob + extra)
    layout = OciLayout(place / f"pulled-{next(_serial)}")
    with pytest.raises(DigestMismatchError, match=f"more than the {len(blob)} bytes"):
        pull(Reference(registry.host, "m", digest=sha(body)), layout)
    assert not layout.has_blob(sha(blob))


# ----------------------------------------------------------------------------- a registry's other answers

TOKEN_ANSWERS = [b"", b"not json", b"[]", b"null", b'{"token": 3}', b"[" * 100_000]
ERROR_ANSWERS = [b"[]", b'{"errors": 3}', b'{"errors": [3]}', b'{"errors": [{"code": []}]}', b"null", b"\xff"]


@pytest.mark.parametrize("answer", TOKEN_ANSWERS, ids=range(len(TOKEN_ANSWERS)))
def test_a_token_answer_that_is_not_a_token(registry: Server, place: Path, answer: bytes) -> None:
    registry.answers.clear()
    registry.challenge = f'Bearer realm="http://{registry.host}/realm",service="r"'
    registry.serve("/realm", answer)
    try:
        client = RegistryClient(registry.host)
        with pytest.raises(RegistryProtocolError, match=r"token request to .*: the answer is not"):
            client.request("GET", "/v2/", expect=(200,))
    finally:
        registry.challenge = None
        client.close()


@pytest.mark.parametrize("answer", ERROR_ANSWERS, ids=range(len(ERROR_ANSWERS)))
def test_an_error_answer_of_any_shape_is_named(registry: Server, answer: bytes) -> None:
    registry.answers.clear()
    client = RegistryClient(registry.host)
    try:
        registry.serve("/v2/m/manifests/v1", answer)
        with pytest.raises(
            RegistryRefusedError, match="HTTP 200"
        ):  # 200 where a 201 was expected: refused, body quoted
            client.request("GET", "/v2/m/manifests/v1", expect=(201,))
    finally:
        client.close()


def test_a_manifest_answer_without_end_is_cut_off(registry: Server, place: Path) -> None:
    """A registry that sends a 64 MiB "manifest" is read only up to the 4 MiB a manifest may have."""
    registry.answers.clear()
    registry.serve("/v2/m/manifests/huge", b" " * (64 * 1024 * 1024), Content_Type=MANIFEST)
    layout = OciLayout(place / "pulled")
    with pytest.raises(MalformedImageError, match=f"more than (the )?{MAX_DOCUMENT} bytes"):
        pull(Reference(registry.host, "m", tag="huge"), layout)
    while (sent := registry.sent.get(timeout=60))[0] != "/v2/m/manifests/huge":  # type: ignore[attr-defined]
        pass
    assert sent[1] == "cut", "the client read the whole answer"
