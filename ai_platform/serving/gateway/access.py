"""Every request, once: its line in the access log and its count, latency and time to first byte on /metrics.

An ASGI middleware, so no route can forget either: a handler only says which
model it served (`request.state.model`) and, for a reply it logged, the
generation id. The route label is the matched route's template
(`/v1/prompts/{name}:run`), never the raw path, so the label set stays small.
An access line is one JSON object: time (UTC, ISO 8601), method, route, path,
status, duration, time to first byte, key name, model, admission decision,
generation id. A request whose caller left before its answer ended (the pipeline
sets `request.state.cancelled`) is logged and counted with status 499, as nginx
does, whatever status line went out before, and counted in
`ai_platform_gateway_cancelled_total{route,model}`.

`ai-platform serve` writes the lines to stderr in batches (`BufferedLines`), as nginx's
`access_log ... buffer= flush=` does: once a second (`flush_every`, a task of the
app's lifespan), as soon as 256 lines wait, and when the app shuts down (its
lifespan's end: uvicorn re-raises SIGTERM after it, so no atexit handler runs). One
write per batch instead of a write and a flush per request; a kill -9 can lose the
last second of lines (never a journaled generation: the journal is fsync'd before
each reply). The flushes are the app's, not a thread's of the handler: uvicorn's
logging setup (dictConfig) closes every handler there is when it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ai_platform.serving.gateway.metrics import Metrics

ACCESS = logging.getLogger("ai_platform.gateway.access")
CALLER_GONE = 499  # the status of a request whose caller left before its answer ended, as nginx logs it
FLUSH_S = 1.0  # the longest an access line waits in memory (nginx's flush=)
BUFFER_LINES = 256  # or until this many wait (nginx's buffer=)


class BufferedLines(logging.StreamHandler[Any]):
    """A StreamHandler that writes its lines in batches: as soon as `capacity` lines wait, and whenever it is
    flushed (`flush_every`, `flush`) or closed (logging.shutdown does both at a normal exit)."""

    def __init__(self, stream: Any = None, capacity: int = BUFFER_LINES) -> None:
        super().__init__(stream)
        self.capacity = capacity
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record) + self.terminator)
        except Exception:  # as StreamHandler.emit: a line that cannot be formatted is reported, never raised
            self.handleError(record)
            return
        if len(self.lines) >= self.capacity:
            self.flush()

    def flush(self) -> None:
        with self.lock or contextlib.nullcontext():
            if self.lines:
                lines, self.lines = self.lines, []
                self.stream.write("".join(lines))
            super().flush()

    def close(self) -> None:
        self.flush()
        super().close()


def flush() -> None:
    """Write the access lines that wait now."""
    for handler in ACCESS.handlers:
        with contextlib.suppress(OSError, ValueError):  # stderr gone (closed, a broken pipe): nothing to write to
            handler.flush()


async def flush_every(seconds: float = FLUSH_S) -> None:
    """Write the access lines that wait, every `seconds` (nginx's flush=), until cancelled."""
    while True:
        await asyncio.sleep(seconds)
        flush()


def log_to_stderr() -> BufferedLines:
    """The access lines on stderr, one JSON object per line with nothing around it, written in batches."""
    handler = BufferedLines(sys.stderr)
    ACCESS.addHandler(handler)
    ACCESS.propagate = False
    return handler


class AccessLog:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        at, started = datetime.now(UTC), time.perf_counter()
        seen: dict[str, Any] = {"status": 500, "first_byte": None}

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body" and seen["first_byte"] is None:
                seen["first_byte"] = time.perf_counter() - started
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._record(scope, at, seen, time.perf_counter() - started)

    def _record(self, scope: Scope, at: datetime, seen: dict[str, Any], seconds: float) -> None:
        state = scope.get("state") or {}
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        key = state.get("key")
        model = state.get("model", "")
        first_byte = seen["first_byte"] if seen["first_byte"] is not None else seconds
        status = seen["status"]
        if state.get("cancelled"):  # the caller left before the answer ended (nginx's 499)
            status = CALLER_GONE
            self.metrics.child(self.metrics.cancelled, route, model).inc()
        self.metrics.observe(route, model, status, seconds, first_byte)
        line = {
            "time": at.isoformat(timespec="milliseconds"),
            "method": scope["method"],
            "route": route,
            "path": scope["path"],
            "status": status,
            "duration_s": round(seconds, 4),
            "first_byte_s": round(first_byte, 4),
            "key": getattr(key, "name", None),
            "model": model or None,
            "admission": state.get("admission"),
            "generation_id": state.get("generation_id"),
        }
        ACCESS.info(json.dumps(line, ensure_ascii=False))
