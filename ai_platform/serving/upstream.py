"""The model servers (vLLM) behind the gateway: the HTTP client, the headers every client of ours sends them,
and what a failure tells the gateway's caller.

A failure is logged with where the server runs and told to the caller without it:
a 4xx is the request's fault (for example an input over the context length) and
its message is passed on as a 400; a 5xx or a server that cannot be reached is a
502 that says nothing of the server. The canary's eval client (evaluation/client)
sends the same headers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from ai_platform.errors import UpstreamError
from ai_platform.serving.state import Color

LOG = logging.getLogger("ai_platform.gateway")

VLLM_API_KEY_ENV = "AI_PLATFORM_VLLM_API_KEY"  # the key vLLM requires in a cluster (a Secret), sent by our clients


def upstream_headers() -> dict[str, str]:
    """Headers for requests to a vLLM server (the canary's, the gateway's): its API key, where one is set (a
    cluster's vLLM runs with `--api-key` from the same Secret); none here, where vLLM listens on loopback."""
    key = os.environ.get(VLLM_API_KEY_ENV)
    return {"Authorization": f"Bearer {key}"} if key else {}


class Stream:
    """A model server's streamed answer, line by line (without the line ending, blank lines kept)."""

    def __init__(self, reply: aiohttp.ClientResponse) -> None:
        self.reply = reply

    async def aiter_lines(self) -> AsyncIterator[str]:
        async for line in self.reply.content:
            yield line.decode("utf-8").rstrip("\r\n")

    async def aclose(self) -> None:
        """Done with it: a reply read to its end gives its connection back to the pool, one cut short closes it."""
        self.reply.release()


class Upstream:
    """The gateway's one HTTP client to its model servers (a pool of kept-alive connections).

    aiohttp, not httpx: on the request path its client costs a third of the CPU per request (0.45 ms against
    1.2-1.3 ms, measured as a bare forwarding hop in front of vLLM CPU), CPU the model server on the same cores
    does not get (benchmarks/gateway_overhead.py)."""

    def __init__(self, read_timeout_s: float = 300.0) -> None:
        self.read_timeout_s = read_timeout_s  # the longest silence of a model server; an answer may take longer
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        """The pool, opened on the event loop that serves (a session belongs to the loop it was made on)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            # A limit on silence, not on the whole answer: a long generation streams for longer than that.
            timeout = aiohttp.ClientTimeout(total=None, connect=5.0, sock_read=self.read_timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout, headers=upstream_headers())
            self._loop = loop
        return self._session

    async def post(self, color: Color, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer of the model server `color` to `body` at `path`; else UpstreamError."""
        try:
            async with self.session.post(f"{color.base_url}{path}", json=body) as reply:
                raw = await reply.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise unreachable(color, exc) from None
        if reply.status != 200:
            raise failed(color, reply.status, raw)
        try:
            data: dict[str, Any] = json.loads(raw)
        except ValueError as exc:
            raise unreachable(color, exc) from None
        return data

    async def open_stream(self, color: Color, path: str, body: dict[str, Any]) -> Stream:
        """The model server's streamed answer, its status checked (the caller reads and closes it)."""
        try:
            reply = await self.session.post(f"{color.base_url}{path}", json=body)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise unreachable(color, exc) from None
        if reply.status != 200:
            try:
                raw = await reply.read()
            except (aiohttp.ClientError, TimeoutError):
                raw = b""
            reply.release()
            raise failed(color, reply.status, raw)
        return Stream(reply)

    async def healthy(self, color: Color, timeout_s: float = 2.0) -> bool:
        """Whether the model server answers its health check within `timeout_s`."""
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            async with self.session.get(f"{color.base_url}/health", timeout=timeout) as reply:
                return reply.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def unreachable(color: Color, exc: Exception) -> UpstreamError:
    """The model server could not be reached: logged with where it runs, told to the caller without."""
    LOG.warning("upstream %s (%s) unreachable: %s", color.color, color.base_url, type(exc).__name__)
    return UpstreamError(502, "the model server is unreachable; try again")


def failed(color: Color, status: int, raw: bytes) -> UpstreamError:
    """The model server refused (a 4xx: the request's fault, e.g. an input over the context length, its
    message passed on) or failed (a 5xx: a 502 that says nothing of the server)."""
    LOG.warning("upstream %s answered HTTP %d: %s", color.color, status, raw[:500].decode("utf-8", "replace"))
    if 400 <= status < 500:
        return UpstreamError(400, upstream_message(status, raw))
    return UpstreamError(502, f"the model server failed (HTTP {status}); try again")


def upstream_message(status: int, raw: bytes) -> str:
    """The upstream's own explanation of a refused request (vLLM's error shape), without where it runs."""
    try:
        error = json.loads(raw).get("error") or {}
        message = error.get("message") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        message = None
    return str(message or f"the model server refused the request (HTTP {status})")
