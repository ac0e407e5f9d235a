"""A model server stand-in that answers slowly and notes when its callers hang up (a real HTTP/1.1 server on a
free port of 127.0.0.1, its own event loop in a thread).

Like vLLM it keeps connections alive, sends a non-streamed answer's status line only once the whole answer is
ready (after `delay_s`), streams `lines` SSE events `every_s` apart, and gives up a request whose connection
closes (vLLM aborts it): `cut` holds when each such close was seen (time.monotonic()), `served` the requests
answered to the end, `active` the requests being answered now. `drop` requests, the next ones, are dropped
before the status line (the connection closed without a byte: what a kept-alive connection to a pod that is
gone gets); `cut_after` lines into a stream the connection is closed (a server lost mid-answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop in a daemon thread, for servers a synchronous test drives."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def event(piece: str, last: bool) -> bytes:
    choice = {"index": 0, "delta": {"content": piece}, "finish_reason": "stop" if last else None}
    body = {"id": "chunk-1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [choice]}
    return f"data: {json.dumps(body)}\n\n".encode()


def completion(content: str) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    body = {"id": "c-1", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], "usage": usage}
    return json.dumps(body).encode()


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


@dataclass
class SlowUpstream:
    delay_s: float = 0.0  # before a non-streamed answer
    every_s: float = 0.05  # between the events of a streamed one
    lines: int = 5
    name: str = "upstream"  # said in each answer's content
    drop: int = 0
    cut_after: int | None = None
    url: str = ""
    cut: list[float] = field(default_factory=list)
    served: int = 0
    active: int = 0
    connections: int = 0  # opened to it, in all
    writers: set[asyncio.StreamWriter] = field(default_factory=set)
    server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        """Stop listening and reset every connection (a process that is gone)."""
        assert self.server is not None
        self.server.close()
        for writer in list(self.writers):
            writer.transport.abort()
        await self.server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        self.connections += 1
        try:
            while await self._request(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.writers.discard(writer)
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
        if lines[0].startswith("GET /health"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
            return True
        if self.drop > 0:
            self.drop -= 1
            writer.transport.abort()
            return False
        self.active += 1
        hangup = asyncio.ensure_future(reader.read(1))  # b"" once the caller closes its connection
        try:
            return await self._answer(writer, hangup, bool(body.get("stream")))
        finally:
            self.active -= 1
            hangup.cancel()  # (a caller sends its next request only once this answer is in: no byte is lost)
            with contextlib.suppress(asyncio.CancelledError):
                await hangup

    async def _answer(self, writer: asyncio.StreamWriter, hangup: asyncio.Future[bytes], stream: bool) -> bool:
        async def caller_left(wait_s: float) -> bool:
            await asyncio.wait({hangup}, timeout=wait_s)
            if hangup.done():
                self.cut.append(time.monotonic())
                return True
            return False

        if not stream:
            if await caller_left(self.delay_s):
                return False
            data = completion(f"{self.name} answered")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            writer.write(f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
            self.served += 1
            return True
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(self.lines):
            if await caller_left(self.every_s):
                return False
            if self.cut_after is not None and i == self.cut_after:
                writer.transport.abort()
                return False
            writer.write(chunk(event(self.name if i == 0 else " more", i == self.lines - 1)))
            await writer.drain()
        writer.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        self.served += 1
        return True


@contextmanager
def slow_upstream(**settings: Any) -> Iterator[SlowUpstream]:
    """A SlowUpstream (`settings`: its fields) running in a thread of its own."""
    loop = LoopThread()
    upstream = SlowUpstream(**settings)
    loop.run(upstream.start())
    try:
        yield upstream
    finally:
        loop.run(upstream.stop())
        loop.stop()
