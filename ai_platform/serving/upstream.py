"""The model servers (vLLM) behind the gateway: the HTTP client, the headers every client of ours sends them,
and what a failure tells the gateway's caller.

A failure is logged with where the server runs and told to the caller without it:
a 4xx is the request's fault (for example an input over the context length) and
its message is passed on as a 400; a 5xx or a server that cannot be reached is a
502 that says nothing of the server. The canary's eval client (evaluation/client)
sends the same headers.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import httpx

from ai_platform.errors import UpstreamError
from ai_platform.serving.state import Color

LOG = logging.getLogger("ai_platform.gateway")

VLLM_API_KEY_ENV = "AI_PLATFORM_VLLM_API_KEY"  # the key vLLM requires in a cluster (a Secret), sent by our clients


def upstream_headers() -> dict[str, str]:
    """Headers for requests to a vLLM server (the canary's, the gateway's): its API key, where one is set (a
    cluster's vLLM runs with `--api-key` from the same Secret); none here, where vLLM listens on loopback."""
    key = os.environ.get(VLLM_API_KEY_ENV)
    return {"Authorization": f"Bearer {key}"} if key else {}


class Upstream:
    """The gateway's one HTTP client to its model servers (a pool of kept-alive connections)."""

    def __init__(self) -> None:
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=5.0), headers=upstream_headers())

    async def post(self, color: Color, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer of the model server `color` to `body` at `path`; else UpstreamError."""
        try:
            reply = await self.http.post(f"{color.base_url}{path}", json=body)
        except httpx.HTTPError as exc:
            raise unreachable(color, exc) from None
        if reply.status_code != 200:
            raise failed(color, reply)
        data: dict[str, Any] = reply.json()
        return data

    async def open_stream(self, color: Color, path: str, body: dict[str, Any]) -> httpx.Response:
        """The model server's streamed answer, its status checked (the caller reads and closes it)."""
        try:
            outgoing = self.http.build_request("POST", f"{color.base_url}{path}", json=body)
            reply = await self.http.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            raise unreachable(color, exc) from None
        if reply.status_code != 200:
            await reply.aread()
            await reply.aclose()
            raise failed(color, reply)
        return reply

    async def healthy(self, color: Color) -> bool:
        try:
            return (await self.http.get(f"{color.base_url}/health", timeout=2)).status_code == 200
        except httpx.HTTPError:
            return False

    async def aclose(self) -> None:
        await self.http.aclose()


def unreachable(color: Color, exc: Exception) -> UpstreamError:
    """The model server could not be reached: logged with where it runs, told to the caller without."""
    LOG.warning("upstream %s (%s) unreachable: %s", color.color, color.base_url, type(exc).__name__)
    return UpstreamError(502, "the model server is unreachable; try again")


def failed(color: Color, reply: httpx.Response) -> UpstreamError:
    """The model server refused (a 4xx: the request's fault, e.g. an input over the context length, its
    message passed on) or failed (a 5xx: a 502 that says nothing of the server)."""
    LOG.warning("upstream %s answered HTTP %d: %s", color.color, reply.status_code, reply.text[:500])
    if 400 <= reply.status_code < 500:
        return UpstreamError(400, upstream_message(reply))
    return UpstreamError(502, f"the model server failed (HTTP {reply.status_code}); try again")


def upstream_message(reply: httpx.Response) -> str:
    """The upstream's own explanation of a refused request (vLLM's error shape), without where it runs."""
    try:
        error = reply.json().get("error") or {}
        message = error.get("message") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        message = None
    return str(message or f"the model server refused the request (HTTP {reply.status_code})")
