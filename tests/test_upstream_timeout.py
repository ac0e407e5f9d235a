"""The gateway's client waits on a model server's silence, not on the length of its answer: a stream that
keeps sending outlives the read timeout, one that goes quiet past it is cut."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from threaded import in_thread

from ai_platform.errors import UpstreamError
from ai_platform.serving.state import Color
from ai_platform.serving.upstream import Upstream


@contextmanager
def slow_stream(lines: int, every_s: float) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 whose one answer is `lines` SSE lines, one each `every_s` seconds."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(lines):
                time.sleep(every_s)
                self.wfile.write(f"data: {i}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with in_thread(server):
        yield f"http://127.0.0.1:{server.server_address[1]}"


async def read_all(url: str, read_timeout_s: float) -> list[str]:
    upstream = Upstream(read_timeout_s=read_timeout_s)
    color = Color("blue", url, 1, "sha256:" + "a" * 64, "sha256:" + "b" * 64, "", "test")
    try:
        stream = await upstream.open_stream(color, "/v1/chat/completions", {"stream": True})
        try:
            return [line async for line in stream.aiter_lines() if line]
        finally:
            await stream.aclose()
    finally:
        await upstream.aclose()


def test_a_stream_longer_than_the_read_timeout_that_keeps_sending_arrives_whole() -> None:
    with slow_stream(lines=6, every_s=0.25) as url:  # 1.5 s in all, never silent for 1 s
        lines = asyncio.run(read_all(url, read_timeout_s=1.0))
    assert lines == [f"data: {i}" for i in range(6)] + ["data: [DONE]"]


def test_a_stream_silent_past_the_read_timeout_is_cut() -> None:
    with slow_stream(lines=2, every_s=1.5) as url, pytest.raises((TimeoutError, UpstreamError)):
        asyncio.run(read_all(url, read_timeout_s=0.5))
