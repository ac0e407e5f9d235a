"""A model server that answers every OpenAI chat completion at once (a fixed, valid reply with usage), for
measuring what the gateway itself costs per request without a model server's CPU beside it
(`benchmarks/gateway_overhead.py --stub`). Raw asyncio HTTP/1.1 with keep-alive: it costs next to nothing.

    python -m benchmarks.support.stub --port PORT
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODEL = "contract-reviewer"
REPLY = json.dumps(
    {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "The notice period is thirty days from the written notice.",
                },
                "logprobs": None,
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 16, "total_tokens": 28},
    }
).encode()
MODELS = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
ROOT = Path(__file__).resolve().parents[2]


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            path = head[0].split(" ")[1]
            length = next((int(h.split(":", 1)[1]) for h in head[1:] if h.lower().startswith("content-length:")), 0)
            if length:
                await reader.readexactly(length)
            body = REPLY if path.startswith("/v1/chat/") else MODELS if path == "/v1/models" else b"{}"
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(port: int) -> None:
    server = await asyncio.start_server(answer, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


@contextmanager
def stub_server() -> Iterator[str]:
    """The base URL of a stub started here (on a free port) for the block."""
    from benchmarks.support.gateway import answering

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.support.stub", "--port", str(port)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        if not answering(f"{url}/health", 20):
            raise SystemExit("the stub model server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
