"""The model servers (vLLM) behind the gateway: the HTTP client, the headers every client of ours sends them,
and what a failure tells the gateway's caller.

A failure is logged with where the server runs and told to the caller without it:
a 4xx is the request's fault (for example an input over the context length) and
its message is passed on as a 400; a 5xx answer, or an answer cut off or silent past
the read timeout, is a 502 that says nothing of the server; a server that cannot be
reached is a 503 with `Retry-After` (the next try may reach a new pod). The canary's
eval client (evaluation/client) sends the same headers.

Connections are kept alive, one pool per base URL. Behind a Kubernetes Service,
kube-proxy NATs each connection once, so a kept-alive connection stays on the pod it
was opened to after the Service's selector flips: when a model's live release
changes, the gateway calls `Upstream.forget(base_url)`, new requests get a new pool
(new connections, to the pods the Service selects now) and the old pool is closed
once its requests in flight are done (none is cut). A request that fails before any
byte of its answer came back (connection refused or reset, closed before the status
line: a kept-alive connection to a pod that is gone) is sent once more, on a fresh
connection; never after bytes arrived, never after an answer (whatever its status).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

from ai_platform.errors import UpstreamError
from ai_platform.serving.state import Color

LOG = logging.getLogger("ai_platform.gateway")

VLLM_API_KEY_ENV = "AI_PLATFORM_VLLM_API_KEY"  # the key vLLM requires in a cluster (a Secret), sent by our clients
RETRY_AFTER_S = 1  # what an unreachable model server's 503 tells the caller to wait: a rollout's switch is ~1 s


def upstream_headers() -> dict[str, str]:
    """Headers for requests to a vLLM server (the canary's, the gateway's): its API key, where one is set (a
    cluster's vLLM runs with `--api-key` from the same Secret); none here, where vLLM listens on loopback."""
    key = os.environ.get(VLLM_API_KEY_ENV)
    return {"Authorization": f"Bearer {key}"} if key else {}


class Pool:
    """The kept-alive connections to one base URL (an aiohttp session of its own) and its requests in flight."""

    __slots__ = ("in_flight", "retired", "session")

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self.in_flight = 0
        self.retired = False  # forgotten: closed once its last request in flight is done


class Stream:
    """A model server's streamed answer, line by line (without the line ending, blank lines kept)."""

    def __init__(self, reply: aiohttp.ClientResponse, color: Color, done: Callable[[], None] | None = None) -> None:
        self.reply, self.color, self._done = reply, color, done
        self.ended = False  # read to its end

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The lines; UpstreamError (502) when the server's answer is cut off or goes silent past the timeout."""
        try:
            async for line in self.reply.content:
                yield line.decode("utf-8").rstrip("\r\n")
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise cut_off(self.color, exc) from None
        self.ended = True

    async def aclose(self) -> None:
        """Done with it: a reply read to its end gives its connection back to the pool; one cut short (the
        caller left, the server failed) closes it, which is what makes vLLM abort the generation."""
        if self.ended:
            self.reply.release()
        else:
            self.reply.close()
        if self._done is not None:
            done, self._done = self._done, None
            done()


class Upstream:
    """The gateway's one HTTP client to its model servers (pools of kept-alive connections, one per base URL).

    aiohttp, not httpx: on the request path its client costs a third of the CPU per request (0.45 ms against
    1.2-1.3 ms, measured as a bare forwarding hop in front of vLLM CPU), CPU the model server on the same cores
    does not get (benchmarks/gateway_overhead.py)."""

    def __init__(self, read_timeout_s: float = 300.0) -> None:
        self.read_timeout_s = read_timeout_s  # the longest silence of a model server; an answer may take longer
        self._pools: dict[str, Pool] = {}  # base URL -> its current pool
        self._fresh: aiohttp.ClientSession | None = None  # a new connection for every request: the retries'
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def _timeout(self) -> aiohttp.ClientTimeout:
        # A limit on silence, not on the whole answer: a long generation streams for longer than that.
        return aiohttp.ClientTimeout(total=None, connect=5.0, sock_read=self.read_timeout_s)

    def _pool(self, base_url: str) -> Pool:
        """The base URL's pool, opened on the event loop that serves (a session belongs to the loop it was made
        on: a new loop, in tests, starts new pools)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._pools, self._fresh, self._loop = {}, None, loop
        pool = self._pools.get(base_url)
        if pool is None or pool.session.closed:
            pool = self._pools[base_url] = Pool(
                aiohttp.ClientSession(timeout=self._timeout(), headers=upstream_headers())
            )
        return pool

    @property
    def fresh(self) -> aiohttp.ClientSession:
        """A session that opens a new connection for each request and closes it after (the one retry's)."""
        if self._fresh is None or self._fresh.closed:
            connector = aiohttp.TCPConnector(force_close=True)
            self._fresh = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout(), headers=upstream_headers()
            )
        return self._fresh

    def forget(self, base_url: str) -> None:
        """The live release behind `base_url` changed: its next requests open new connections; the kept-alive
        ones are closed once the requests in flight on them are done. Safe to call from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            here = asyncio.get_running_loop() is loop
        except RuntimeError:
            here = False
        if here:
            self._retire(base_url)
        else:
            loop.call_soon_threadsafe(self._retire, base_url)

    def _retire(self, base_url: str) -> None:
        pool = self._pools.pop(base_url, None)
        if pool is not None:
            LOG.info("upstream %s: its live release changed; new connections from now on", base_url)
            pool.retired = True
            self._close_if_idle(pool)

    def _close_if_idle(self, pool: Pool) -> None:
        if pool.retired and pool.in_flight == 0 and not pool.session.closed:
            task = asyncio.get_running_loop().create_task(pool.session.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def _leave(self, pool: Pool) -> None:
        pool.in_flight -= 1
        if pool.retired:
            self._close_if_idle(pool)

    async def _send(self, pool: Pool, color: Color, path: str, body: dict[str, Any]) -> aiohttp.ClientResponse:
        """The reply to `body` with its status line and headers read. A failure before any byte of it came back
        is tried once more on a fresh connection; else UpstreamError (503: unreachable; 502: silent)."""
        url = f"{color.base_url}{path}"
        for retry in (False, True):
            session = self.fresh if retry else pool.session
            try:
                return await session.post(url, json=body)
            except aiohttp.SocketTimeoutError as exc:  # it took the request and said nothing: not tried again
                raise cut_off(color, exc) from None
            except (aiohttp.ClientConnectionError, TimeoutError) as exc:
                if retry:
                    raise unreachable(color, exc) from None
                LOG.info(
                    "upstream %s (%s): %s before an answer; once more on a new connection",
                    color.color,
                    color.base_url,
                    type(exc).__name__,
                )
            except aiohttp.ClientError as exc:  # a malformed answer: bytes came back
                raise cut_off(color, exc) from None
        raise AssertionError("the retry either answers or raises")

    async def post(self, color: Color, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer of the model server `color` to `body` at `path`; else UpstreamError. Cancelled (the
        caller left), its connection is closed, not kept: vLLM aborts a request when its connection closes."""
        pool = self._pool(color.base_url)
        pool.in_flight += 1
        try:
            reply = await self._send(pool, color, path, body)
            try:
                raw = await reply.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                reply.close()
                raise cut_off(color, exc) from None
            except BaseException:
                reply.close()
                raise
            reply.release()
        finally:
            self._leave(pool)
        if reply.status != 200:
            raise failed(color, reply.status, raw)
        try:
            data: dict[str, Any] = json.loads(raw)
        except ValueError as exc:
            raise cut_off(color, exc) from None
        return data

    async def open_stream(self, color: Color, path: str, body: dict[str, Any]) -> Stream:
        """The model server's streamed answer, its status checked (the caller reads and closes it)."""
        pool = self._pool(color.base_url)
        pool.in_flight += 1
        try:
            reply = await self._send(pool, color, path, body)
        except BaseException:
            self._leave(pool)
            raise
        if reply.status != 200:
            try:
                raw = await reply.read()
            except (aiohttp.ClientError, TimeoutError):
                raw = b""
            finally:
                reply.close()
                self._leave(pool)
            raise failed(color, reply.status, raw)
        return Stream(reply, color, lambda: self._leave(pool))

    async def healthy(self, color: Color, timeout_s: float = 2.0) -> bool | None:
        """Whether the model server answers its health check: True (200), False (another status, or it cannot be
        reached), None (no answer within `timeout_s`: a server that busy is overloaded, not known to be down)."""
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        try:
            session = self._pool(color.base_url).session
            async with session.get(f"{color.base_url}/health", timeout=timeout) as reply:
                return reply.status == 200
        except TimeoutError:
            return None
        except aiohttp.ClientError:
            return False

    async def aclose(self) -> None:
        """Close every connection, whatever is still on it (the gateway is stopping)."""
        sessions = [pool.session for pool in self._pools.values()] + ([self._fresh] if self._fresh else [])
        self._pools, self._fresh = {}, None
        for session in sessions:
            await session.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def unreachable(color: Color, exc: Exception) -> UpstreamError:
    """The model server could not be reached (twice): logged with where it runs, told to the caller without,
    as a 503 to retry shortly."""
    LOG.warning("upstream %s (%s) unreachable: %s", color.color, color.base_url, type(exc).__name__)
    return UpstreamError(503, "the model server is unreachable; try again", headers={"Retry-After": str(RETRY_AFTER_S)})


def cut_off(color: Color, exc: Exception) -> UpstreamError:
    """The model server took the request and its answer did not come whole (cut off, malformed, silent past
    the read timeout): a 502, since sending it again may cost a whole generation again."""
    LOG.warning("upstream %s (%s) failed mid-answer: %s", color.color, color.base_url, type(exc).__name__)
    return UpstreamError(502, "the model server failed; try again")


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
