"""What a registry may not make the client do: accept bytes that are not the digest asked for, or send the
registry credentials to a token realm elsewhere. Against registries we control that lie: tiny distribution-API
servers (stdlib http.server) on 127.0.0.1, and a second one on 127.0.0.2 as the foreign token realm."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from threaded import in_thread

from ai_platform.config import parse_platform_config
from ai_platform.errors import ConfigError, DigestMismatchError, RegistryAuthError
from ai_platform.oci.layout import MANIFEST, OciLayout
from ai_platform.oci.registry import Reference, pull

CONFIG = b"{}"
LAYER = b"the model's weights\n"
TOKEN = "a-token-for-this-registry"


def sha(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def manifest(layer: bytes = LAYER) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(CONFIG), "size": 2},
            "layers": [{"mediaType": "application/octet-stream", "digest": sha(layer), "size": len(layer)}],
        }
    ).encode()


class Server(ThreadingHTTPServer):
    """GET /v2/, manifests/<ref> and blobs/<digest> answer what the test put in `answers`; GET /token answers a
    token. With `challenge` set, a request without that token gets 401 and the challenge."""

    def __init__(self, host: str) -> None:
        super().__init__((host, 0), _Handler)
        self.answers: dict[str, tuple[bytes, dict[str, str]]] = {}  # path -> body, headers
        self.challenge: str | None = None
        self.seen: list[tuple[str, str | None]] = []  # path, Authorization

    @property
    def host(self) -> str:
        return f"{self.server_address[0]}:{self.server_address[1]}"

    def serve(self, path: str, body: bytes, **headers: str) -> None:
        self.answers[path] = (body, {k.replace("_", "-"): v for k, v in headers.items()})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        if self.path.startswith("/token"):
            self._send(200, json.dumps({"token": TOKEN}).encode(), {"Content-Type": "application/json"})
        elif self.server.challenge and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, b"{}", {"WWW-Authenticate": self.server.challenge})
        elif self.path == "/v2/":
            self._send(200, b"{}", {})
        elif self.path in self.server.answers:
            body, headers = self.server.answers[self.path]
            self._send(200, body, headers)
        else:
            self._send(404, b'{"errors": [{"code": "NOT_FOUND", "message": "no such thing"}]}', {})


@contextmanager
def running(host: str = "127.0.0.1") -> Iterator[Server]:
    with in_thread(Server(host)) as server:
        yield server


@pytest.fixture
def lying() -> Iterator[Server]:
    with running() as server:
        yield server


@pytest.fixture
def foreign() -> Iterator[Server]:
    """Another host: a token realm the registry names but nobody configured."""
    with running("127.0.0.2") as server:
        yield server


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AI_PLATFORM_REGISTRY_USERNAME", "deployer")
    monkeypatch.setenv("AI_PLATFORM_REGISTRY_PASSWORD", "s3cret")
    monkeypatch.delenv("AI_PLATFORM_REGISTRY_TOKEN", raising=False)


def honest(lying: Server) -> str:
    """An image the registry holds as it should; its manifest digest."""
    body = manifest()
    lying.serve(f"/v2/m/manifests/{sha(body)}", body, Content_Type=MANIFEST, Docker_Content_Digest=sha(body))
    lying.serve("/v2/m/manifests/v1", body, Content_Type=MANIFEST, Docker_Content_Digest=sha(body))
    lying.serve(f"/v2/m/blobs/{sha(CONFIG)}", CONFIG, Docker_Content_Digest=sha(CONFIG))
    lying.serve(f"/v2/m/blobs/{sha(LAYER)}", LAYER, Docker_Content_Digest=sha(LAYER))
    return sha(body)


def nothing_kept(layout: OciLayout) -> None:
    assert (
        not (layout.root / "index.json").exists()
        or not json.loads((layout.root / "index.json").read_text())["manifests"]
    )


# ---------------------------------------------------------------- digests


def test_an_honest_registry_is_pulled(lying: Server, tmp_path: Path) -> None:
    digest = honest(lying)
    layout = OciLayout(tmp_path / "layout")
    assert pull(Reference(lying.host, "m", digest=digest), layout).digest == digest
    assert layout.read_blob(sha(LAYER)) == LAYER


def test_a_manifest_that_is_not_the_digest_asked_for_is_refused(lying: Server, tmp_path: Path) -> None:
    digest = honest(lying)
    other = manifest(b"other weights\n")
    lying.serve(f"/v2/m/manifests/{digest}", other, Content_Type=MANIFEST)  # wrong bytes for that digest
    layout = OciLayout(tmp_path / "layout")
    with pytest.raises(DigestMismatchError, match=f"hashes to {sha(other)}, not {digest}"):
        pull(Reference(lying.host, "m", digest=digest), layout)
    nothing_kept(layout)


def test_a_blob_that_is_not_the_digest_asked_for_is_refused(lying: Server, tmp_path: Path) -> None:
    digest = honest(lying)
    poison = b"poisoned weights\n"
    lying.serve(f"/v2/m/blobs/{sha(LAYER)}", poison)
    layout = OciLayout(tmp_path / "layout")
    with pytest.raises(DigestMismatchError, match=f"hashes to {sha(poison)}, expected {sha(LAYER)}"):
        pull(Reference(lying.host, "m", digest=digest), layout)
    assert not layout.has_blob(sha(LAYER))
    nothing_kept(layout)


def test_a_lying_docker_content_digest_is_refused(lying: Server, tmp_path: Path) -> None:
    """The bytes are right but the registry names another digest for them: a registry that says one thing and
    serves another is not trusted for either."""
    digest = honest(lying)
    liar = sha(b"something else")
    layout = OciLayout(tmp_path / "layout")

    lying.serve(f"/v2/m/manifests/{digest}", manifest(), Content_Type=MANIFEST, Docker_Content_Digest=liar)
    with pytest.raises(DigestMismatchError, match=f"Docker-Content-Digest {liar}"):
        pull(Reference(lying.host, "m", digest=digest), layout)

    lying.serve("/v2/m/manifests/v1", manifest(), Content_Type=MANIFEST, Docker_Content_Digest=liar)
    with pytest.raises(DigestMismatchError, match=f"Docker-Content-Digest {liar}"):
        pull(Reference(lying.host, "m", tag="v1"), layout)

    honest(lying)
    lying.serve(f"/v2/m/blobs/{sha(LAYER)}", LAYER, Docker_Content_Digest=liar)
    with pytest.raises(DigestMismatchError, match=f"Docker-Content-Digest {liar}"):
        pull(Reference(lying.host, "m", digest=digest), layout)
    assert not layout.has_blob(sha(LAYER))
    nothing_kept(layout)


# ---------------------------------------------------------------- where credentials go


def test_credentials_never_reach_a_token_realm_on_another_host(
    lying: Server, foreign: Server, credentials: None, tmp_path: Path
) -> None:
    digest = honest(lying)
    lying.challenge = f'Bearer realm="http://{foreign.host}/token",service="registry",scope="repository:m:pull"'
    with pytest.raises(RegistryAuthError) as info:
        pull(Reference(lying.host, "m", digest=digest), OciLayout(tmp_path / "layout"))
    assert foreign.seen == []  # never asked, so nothing of the credentials reached it
    assert "127.0.0.2" in str(info.value) and "registry.token_realms" in str(info.value)
    print(info.value)


def test_a_token_realm_the_platform_config_names_gets_them(
    lying: Server, foreign: Server, credentials: None, tmp_path: Path
) -> None:
    digest = honest(lying)
    lying.challenge = f'Bearer realm="http://{foreign.host}/token",service="registry",scope="repository:m:pull"'
    pull(Reference(lying.host, "m", digest=digest), OciLayout(tmp_path / "layout"), token_realms=("127.0.0.2",))
    ((path, authorization),) = foreign.seen
    assert path.startswith("/token?") and authorization is not None and authorization.startswith("Basic ")
    assert all(seen == f"Bearer {TOKEN}" for _, seen in lying.seen[1:])


def test_the_registry_s_own_host_is_a_realm_without_configuration(
    lying: Server, credentials: None, tmp_path: Path
) -> None:
    digest = honest(lying)
    lying.challenge = f'Bearer realm="http://{lying.host}/token",service="registry"'
    assert pull(Reference(lying.host, "m", digest=digest), OciLayout(tmp_path / "layout")).digest == digest


def test_credentials_never_go_over_plain_http_to_a_host_that_is_not_loopback(
    lying: Server, credentials: None, tmp_path: Path
) -> None:
    """Even a configured realm: http is for loopback only (the refusal comes before any connection)."""
    digest = honest(lying)
    lying.challenge = 'Bearer realm="http://auth.example.invalid/token",service="registry"'
    with pytest.raises(RegistryAuthError) as info:
        pull(
            Reference(lying.host, "m", digest=digest),
            OciLayout(tmp_path / "layout"),
            token_realms=("auth.example.invalid",),
        )
    assert "plain HTTP" in str(info.value)
    print(info.value)


def test_anonymous_token_requests_may_go_anywhere(
    lying: Server, foreign: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without credentials there is nothing to leak: public images behind a token service still pull."""
    for name in ("AI_PLATFORM_REGISTRY_USERNAME", "AI_PLATFORM_REGISTRY_PASSWORD", "AI_PLATFORM_REGISTRY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    digest = honest(lying)
    lying.challenge = f'Bearer realm="http://{foreign.host}/token",service="registry"'
    assert pull(Reference(lying.host, "m", digest=digest), OciLayout(tmp_path / "layout")).digest == digest
    assert [authorization for _, authorization in foreign.seen] == [None]


# ---------------------------------------------------------------- platform.yaml


@pytest.mark.parametrize("url", ["http://registry.example.com", "http://10.0.0.5:5000/prefix", "http://127.example"])
def test_plain_http_registry_url_is_for_loopback_only(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_platform_config(f"name: p\nregistry:\n  url: {url}\n", "platform.yaml")
    assert "registry.url" in str(info.value) and "loopback" in str(info.value)
    print(info.value)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:5000", "http://localhost:5000/x", "http://[::1]:5000", "http://127.3.2.1"]
)
def test_plain_http_on_loopback_is_fine(url: str) -> None:
    assert parse_platform_config(f"name: p\nregistry:\n  url: {url}\n", "platform.yaml").registry.url == url


def test_insecure_is_for_loopback_only_too() -> None:
    with pytest.raises(ConfigError) as info:
        parse_platform_config("name: p\nregistry: {url: 'https://r.example.com', insecure: true}\n", "platform.yaml")
    assert "registry.insecure" in str(info.value)
    print(info.value)


def test_token_realms_are_host_names() -> None:
    config = parse_platform_config(
        "name: p\nregistry: {url: 'https://registry.gitlab.com', token_realms: [gitlab.com]}\n", "platform.yaml"
    )
    assert config.registry.token_realms == ["gitlab.com"]
    with pytest.raises(ConfigError, match=r"registry\.token_realms"):
        parse_platform_config(
            "name: p\nregistry: {url: 'https://r.example.com', token_realms: ['https://x/token']}\n", "platform.yaml"
        )
