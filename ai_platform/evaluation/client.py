"""The eval client: OpenAI-compatible chat requests, streamed, with bounded concurrency.

Streaming gives time to first token; `stream_options.include_usage` gives the
token count; `logprobs` gives the mean token log-probability (a trust-model
feature). A case is retried only on transport errors (a server silent for
longer than the timeout among them) and 429/5xx, up to `retries` times, and
every attempt is counted; a case that still fails is returned as failed with its
error, never dropped, so it counts against every gate. The timeout is on
silence, not on the whole reply: a reply that keeps streaming is a working
server however busy the machine, and max_tokens bounds how long it can run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from ai_platform.errors import UpstreamStatusError
from ai_platform.serving.upstream import upstream_headers

RETRYABLE = {429, 500, 502, 503, 504}


@dataclass
class Reply:
    case_id: str
    content: str = ""
    finish_reason: str = "error"
    latency_s: float = 0.0
    ttft_s: float | None = None
    output_tokens: int = 0
    mean_logprob: float | None = None
    attempts: int = 0
    error: str | None = None
    logprobs: list[float] = field(default_factory=list, repr=False)


async def _once(client: httpx.AsyncClient, url: str, body: dict[str, Any], reply: Reply, timeout_s: float) -> None:
    """One attempt. `timeout_s` is the client's limit on each connect, write and read (httpx.Timeout): a limit on
    silence, not on the whole reply, whose length max_tokens bounds (evaluation.stage.request)."""
    started = time.perf_counter()
    parts: list[str] = []
    async with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            text = (await response.aread()).decode("utf-8", "replace")[:300]
            raise UpstreamStatusError(response.status_code, text)
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                reply.output_tokens = chunk["usage"].get("completion_tokens", 0)
            for choice in chunk.get("choices") or []:
                delta = (choice.get("delta") or {}).get("content") or ""
                if delta and reply.ttft_s is None:
                    reply.ttft_s = time.perf_counter() - started
                parts.append(delta)
                for item in (choice.get("logprobs") or {}).get("content") or []:
                    reply.logprobs.append(item["logprob"])
                if choice.get("finish_reason"):
                    reply.finish_reason = choice["finish_reason"]
    reply.content = "".join(parts)
    reply.latency_s = time.perf_counter() - started
    if reply.logprobs:
        reply.mean_logprob = sum(reply.logprobs) / len(reply.logprobs)


async def _case(
    client: httpx.AsyncClient,
    gate: asyncio.Semaphore,
    url: str,
    case_id: str,
    body: dict[str, Any],
    timeout_s: float,
    retries: int,
) -> Reply:
    async with gate:
        for attempt in range(retries + 1):
            reply = Reply(case_id, attempts=attempt + 1)
            try:
                await _once(client, url, body, reply, timeout_s)
                return reply
            except httpx.TransportError as exc:  # ReadTimeout and ConnectTimeout among them
                reply.error = f"{type(exc).__name__}: {exc}".rstrip(": ")
            except UpstreamStatusError as exc:
                reply.error = str(exc)
                if exc.status not in RETRYABLE:
                    return reply
            if attempt < retries:
                await asyncio.sleep(0.5 * 2**attempt)
        return reply


async def _run(
    base_url: str,
    cases: list[tuple[str, dict[str, Any]]],
    concurrency: int,
    timeout_s: float,
    retries: int,
    progress: Progress | None,
) -> list[Reply]:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    done: list[Reply] = []

    async def counted(cid: str, body: dict[str, Any]) -> Reply:
        reply = await _case(client, gate, url, cid, body, timeout_s, retries)
        done.append(reply)
        if progress and (len(done) % concurrency == 0 or len(done) == len(cases)):  # one line per batch
            progress(len(done), len(cases), sum(r.error is not None for r in done))
        return reply

    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), limits=limits, headers=upstream_headers()) as client:
        gate = asyncio.Semaphore(concurrency)
        url = f"{base_url.rstrip('/')}/v1/chat/completions"
        return await asyncio.gather(*(counted(cid, b) for cid, b in cases))


def streamed(body: dict[str, Any]) -> dict[str, Any]:
    """The request as the eval sends it: streamed, with usage and log-probabilities."""
    return {**body, "stream": True, "stream_options": {"include_usage": True}, "logprobs": True}


# (cases answered, cases in all, of them failed): called once per `concurrency` cases answered, and at the end
Progress = Callable[[int, int, int], None]


def run_cases(
    base_url: str,
    cases: list[tuple[str, dict[str, Any]]],
    *,
    concurrency: int,
    timeout_s: float,
    retries: int,
    progress: Progress | None = None,
) -> list[Reply]:
    """Send every (case id, request body), at most `concurrency` at a time; replies in case order."""
    bodies = [(cid, streamed(b)) for cid, b in cases]
    return asyncio.run(_run(base_url, bodies, concurrency, timeout_s, retries, progress))
