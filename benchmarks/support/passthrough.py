"""The least a gateway in front of vLLM can be, as a baseline: an HTTP hop that forwards each request's bytes to
the model server and its reply's bytes back, on the gateway's own stack (uvicorn, Starlette, one kept-alive aiohttp
client session, as serving/upstream.py) and nothing else: no keys, guards, admission, scoring or journal.

    python -m benchmarks.support.passthrough --upstream URL --port PORT
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def app(upstream: str) -> Starlette:
    sessions: list[aiohttp.ClientSession] = []  # opened on the serving loop, at the first request

    async def forward(request: Request) -> Response:
        if not sessions:
            sessions.append(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300.0, connect=5.0)))
        headers = {"content-type": request.headers.get("content-type", "application/json")}
        url = f"{upstream}{request.url.path}"
        async with sessions[0].post(url, data=await request.body(), headers=headers) as reply:
            body = await reply.read()
        return Response(body, reply.status, media_type=reply.headers.get("content-type"))

    async def health(request: Request) -> Response:
        return Response("ok")

    routes = [Route("/v1/chat/completions", forward, methods=["POST"]), Route("/healthz", health)]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for session in sessions:
            await session.close()

    return Starlette(routes=routes, lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app(args.upstream.rstrip("/")), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
