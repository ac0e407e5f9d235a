"""The live gateway every gateway test uses (registered in conftest.py): a stand-in model server
(tests/fake_upstream.py, a real HTTP server), what a rollout leaves for the gateway (a prompt bundle and the
model's state), an API key, and the app, in process (Starlette's TestClient) or on a port (uvicorn)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fake_upstream import FakeUpstream, serving
from gateway_process import answering
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ai_platform.oci.layout import OciLayout
from ai_platform.prompts import bundle
from ai_platform.prompts.compiler import compile_bytes
from ai_platform.serving.gateway import create_app, keys
from ai_platform.serving.state import Color, ModelState, save

MODEL = "contract-reviewer"
PROMPT = b'user: "Review: {{text}}"\n'  # the prompt `review`
IMAGE = "sha256:" + "a" * 64
NOWHERE = "http://127.0.0.1:9"  # a model server that is not running


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    """A stand-in model server; queue its replies with `upstream.reply(...)`."""
    with serving(FakeUpstream()) as running:
        yield running


def key_file(home: Path) -> Path:
    return home / "gateway" / "keys.json"


def roll_out(
    home: Path,
    upstream: FakeUpstream | str = NOWHERE,
    *,
    model: str = MODEL,
    prompt: bytes = PROMPT,
    prompt_name: str = "review",
    color: str = "blue",
    warehouse: str | Path | None = None,
    **state: Any,
) -> str:
    """What a rollout leaves for the gateway: the prompt bundle, and the model's state naming its live colour
    on `upstream` (`state`: more ModelState fields). The prompt's version."""
    layout = OciLayout(home / "registry" / "prompts")
    compiled = compile_bytes(prompt, f"prompts/{prompt_name}.prompt")
    digest = bundle.build(layout, model, [compiled]).digest
    url = upstream.url if isinstance(upstream, FakeUpstream) else upstream
    live = Color(color, url, 1, IMAGE, digest, str(layout.root), "d")
    save(home, ModelState(model, str(warehouse or home / "wh.duckdb"), live=live, **state))
    return compiled.version


def api_key(home: Path, name: str = "tester", scopes: tuple[str, ...] = ("invoke",)) -> str:
    """A new key in the gateway's default key file."""
    return keys.create(key_file(home), name, list(scopes))


def client(home: Path, key: str | None = None, **app: Any) -> TestClient:
    """The gateway over `home`, in process; every request sends `key` unless it names another."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return TestClient(create_app(home, **app), headers=headers)


@contextmanager
def served(home: Path, **app: Any) -> Iterator[tuple[str, Starlette]]:
    """The gateway over `home` on a free port of 127.0.0.1 (a real server, for real HTTP clients); its URL and app.
    Its generation log is flushed before it stops."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    application = create_app(home, **app)
    server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    assert answering(f"{url}/metrics", 30)
    try:
        yield url, application
    finally:
        application.state.gateway.log.flush()
        server.should_exit = True
        thread.join(timeout=10)
