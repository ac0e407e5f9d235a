"""Push and pull through a registry that fails now and then: a real docker-registry behind a
real HTTP proxy on 127.0.0.1 that answers 503 (or drops the connection) where it is told to."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from conftest import LocalRegistry
from threaded import in_thread

from ai_platform.errors import TransientRegistryError
from ai_platform.image.build import build
from ai_platform.oci.layout import OciLayout
from ai_platform.oci.registry import ATTEMPTS, Reference, pull, push

NAME = "contract-reviewer"


def _kind(path: str) -> str:
    return "upload" if "/blobs/uploads/" in path else "blob" if "/blobs/" in path else "manifest"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Flaky

    def log_message(self, *args: object) -> None:  # the test reads `seen`, not stderr
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        key = (self.command, _kind(self.path))
        with self.server.lock:
            self.server.seen.append((*key, self.path))
            failing = self.server.failures.get(key, 0) > 0
            if failing:
                self.server.failures[key] -= 1
            dropping = not failing and self.server.drops.get(key, 0) > 0
            if dropping:
                self.server.drops[key] -= 1
        if dropping:  # hang up without an answer, as a proxy or load balancer may
            self.close_connection = True
            return
        if failing:
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # The registry builds upload Locations from Host: keep ours, so the client comes back here.
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("content-length", "connection")}
        answer = httpx.request(self.command, f"http://{self.server.upstream}{self.path}", headers=headers, content=body)
        self.send_response(answer.status_code)
        for k, v in answer.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                self.send_header(k, v)
        data = b"" if self.command == "HEAD" else answer.content
        self.send_header(
            "Content-Length", answer.headers.get("Content-Length", "0") if self.command == "HEAD" else str(len(data))
        )
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = _forward


class Flaky(ThreadingHTTPServer):
    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.failures: dict[tuple[str, str], int] = {}  # answer 503 this many times
        self.drops: dict[tuple[str, str], int] = {}  # close the connection unanswered this many times
        self.seen: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def flaky(registry: LocalRegistry) -> Iterator[Flaky]:
    with in_thread(Flaky(registry.host)) as server:
        yield server


@pytest.fixture
def image(demo_model_dir: Path, tmp_path: Path) -> tuple[OciLayout, str]:
    folder = tmp_path / "model"
    shutil.copytree(demo_model_dir, folder)
    layout = OciLayout(tmp_path / "layout")
    built = build(layout, folder, NAME, created="2026-01-05T09:00:00Z", mtime=1767603600, tags=["latest"])
    return layout, built.digest


def test_each_exchange_that_fails_once_is_tried_again(
    flaky: Flaky, image: tuple[OciLayout, str], tmp_path: Path
) -> None:
    layout, digest = image
    flaky.failures = {
        ("HEAD", "blob"): 1,
        ("POST", "upload"): 1,
        ("PUT", "upload"): 2,
        ("PATCH", "upload"): 1,
        ("PUT", "manifest"): 1,
    }
    ref = Reference.parse(f"{flaky.host}/retries/{NAME}:v1")
    assert push(layout, "latest", ref, chunk_size=256 * 1024).digest == digest
    assert not any(flaky.failures.values())  # every planned failure happened, and was got over

    flaky.failures = {("GET", "manifest"): 1, ("GET", "blob"): 2}
    flaky.drops = {("GET", "blob"): 1}
    assert pull(ref, OciLayout(tmp_path / "pulled")).digest == digest
    assert not any(flaky.failures.values()) and not any(flaky.drops.values())


def test_a_registry_that_keeps_failing_is_given_up_on_and_named(flaky: Flaky, image: tuple[OciLayout, str]) -> None:
    layout, _ = image
    flaky.failures = {("HEAD", "blob"): 1000}
    with pytest.raises(TransientRegistryError, match=f"gave up after {ATTEMPTS} attempts.*HTTP 503"):
        push(layout, "latest", Reference.parse(f"{flaky.host}/retries/{NAME}:v2"), workers=1)
    first = flaky.seen[0][2]
    assert [path for *_, path in flaky.seen].count(first) == ATTEMPTS
    assert {(method, kind) for method, kind, _ in flaky.seen} == {("HEAD", "blob")}  # no upload, no manifest
