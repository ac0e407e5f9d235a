"""An OpenAI-compatible chat server on 127.0.0.1 that answers what a test tells it to (a stand-in for vLLM).

It speaks the part of vLLM's API the gateway uses: POST /v1/chat/completions answers
one choice with the queued content (or an error status and vLLM's error body), GET
/health answers 200 (503 while `healthy` is False). Every request body is kept, so a test can tell whether one
reached the model at all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from threaded import in_thread


@dataclass
class FakeUpstream:
    replies: list[tuple[int, str]] = field(default_factory=list)  # (status, content or error message), in order
    requests: list[dict[str, Any]] = field(default_factory=list)
    default: str = ""  # the content once `replies` runs out
    url: str = ""
    healthy: bool = True  # False: GET /health answers 503, as vLLM's does when its engine is dead
    health_delay_s: float = 0.0  # how long GET /health takes to answer (an overloaded server)

    def reply(self, content: str, status: int = 200) -> None:
        self.replies.append((status, content))


@contextmanager
def serving(upstream: FakeUpstream) -> Iterator[FakeUpstream]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                time.sleep(upstream.health_delay_s)
                self._send(200 if upstream.healthy else 503, {})
            else:
                self._send(404, {"error": {"message": "no route"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            upstream.requests.append(body)
            status, content = upstream.replies.pop(0) if upstream.replies else (200, upstream.default)
            if status != 200:
                self._send(status, {"error": {"message": content, "type": "BadRequestError", "code": status}})
                return
            chat = self.path.endswith("/chat/completions")
            if body.get("stream"):
                self._stream(content, chat)
                return
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            reply = {"message": {"role": "assistant", "content": content}} if chat else {"text": content}
            body = {
                "id": "chatcmpl-1" if chat else "cmpl-1",
                "object": "chat.completion" if chat else "text_completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [{"index": 0, **reply, "finish_reason": "stop", "logprobs": None}],
                "usage": usage,
            }
            self._send(200, body)

        def _stream(self, content: str, chat: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            words = content.split(" ")
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                last = i == len(words) - 1
                choice: dict[str, Any] = {"index": 0, "finish_reason": "stop" if last else None}
                choice.update({"delta": {"content": piece}} if chat else {"text": piece})
                kind = "chat.completion.chunk" if chat else "text_completion"
                event = {"id": "chunk-1", "object": kind, "created": 0, "model": "m", "choices": [choice]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    upstream.url = f"http://127.0.0.1:{server.server_address[1]}"
    with in_thread(server):
        yield upstream
