"""The push receiver: an HTTP service of its own, next to the Dagster daemon, never on the caller-facing gateway.

Why its own service: a forge's webhook secret and the pipeline's home belong to the pipeline, not to the gateway
its callers reach (the gateway runs N replicas without the Dagster instance or the pipeline's home, and holds
only a read-only registry login). The receiver holds the secret, verifies each delivery (`forges.parse`), and
leaves a marker in the pipeline's home (`marker.mark`). The git sensor stays the one planner and keeps its
cursor: it ticks every few seconds, and a tick fetches a remote only when the marker is newer than its last
fetch or the poll interval has passed (`changes.fetch_due`). So a webhook only shortens the wait: a lost one
costs one poll interval, never a commit, and a burst of pushes is planned commit by commit from the cursor.

  POST /hooks/github | /hooks/gitlab | /hooks/gitea   a push (Forgejo: /hooks/gitea, it sends Gitea's headers)
  GET  /metrics                                       ai_platform_webhook_deliveries_total{forge,outcome}
  GET  /healthz

Answers: 202 a push to the branch, marked; 200 a verified delivery with nothing to do (another branch, a ping,
another event); 4xx refused (`errors.WebhookRefused`: 401 unsigned or wrongly signed, 409 a replayed delivery
id, 413 over `max_bytes`, 400 unreadable), each counted by outcome.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client import Counter as PromCounter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ai_platform.artifacts import atomic_write
from ai_platform.errors import ReplayedWebhookError, WebhookRefused, WebhookTooLargeError
from ai_platform.webhooks import marker
from ai_platform.webhooks.forges import FORGES, ZERO, Forge, parse

LOG = logging.getLogger(__name__)
MAX_BYTES = 5 * 1024 * 1024  # a push of many commits is large; GitHub caps its payloads at 25 MB
KEEP_DELIVERIES = 10_000  # ids remembered against replays; forges retry for hours, not for 10,000 pushes


class Deliveries:
    """The delivery ids taken, oldest first, kept in the home so a restart does not forget them."""

    def __init__(self, path: Path, keep: int = KEEP_DELIVERIES) -> None:
        self.path, self.keep = path, keep
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, float] = OrderedDict()
        if path.is_file():
            try:
                self._seen.update(json.loads(path.read_text(encoding="utf-8")))
            except (ValueError, UnicodeDecodeError, TypeError):
                LOG.warning("%s is unreadable: starting with no delivery remembered", path)

    def take(self, key: str) -> None:
        """Remember `key`, or raise if it was taken before."""
        with self._lock:
            if key in self._seen:
                raise ReplayedWebhookError(f"delivery {key} was taken before")
            self._seen[key] = time.time()
            while len(self._seen) > self.keep:
                self._seen.popitem(last=False)
            atomic_write(self.path, json.dumps(self._seen).encode())


class Receiver:
    def __init__(self, home: Path, branch: str, secret: bytes, max_bytes: int = MAX_BYTES) -> None:
        if not secret:
            raise ValueError("the webhook secret is empty")
        self.home, self.branch, self.secret, self.max_bytes = Path(home), branch, secret, max_bytes
        self.deliveries = Deliveries(marker.folder(self.home) / "deliveries.json")
        self.registry = CollectorRegistry()
        self.counted = PromCounter(
            "ai_platform_webhook_deliveries",
            "Forge webhook deliveries by forge and outcome (accepted, other_branch, not_a_push, unsigned,"
            " bad_signature, replayed, too_large, malformed).",
            ["forge", "outcome"],
            registry=self.registry,
        )

    async def body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise WebhookTooLargeError(f"the body is {declared} bytes; the limit is {self.max_bytes}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_bytes:
                raise WebhookTooLargeError(f"the body is over the limit of {self.max_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def hook(self, request: Request) -> Response:
        forge = request.path_params["forge"]
        if forge not in FORGES:
            return JSONResponse({"error": f"no such forge {forge!r}; one of {', '.join(FORGES)}"}, status_code=404)
        try:
            answer = await self._take(forge, request)
        except WebhookRefused as exc:
            self.counted.labels(forge, exc.reason).inc()
            LOG.warning("webhook from %s refused (%s): %s", forge, exc.reason, exc)
            return JSONResponse({"error": str(exc), "reason": exc.reason}, status_code=exc.status)
        return answer

    async def _take(self, forge: Forge, request: Request) -> Response:
        body = await self.body(request)
        push = parse(forge, {k.lower(): v for k, v in request.headers.items()}, body, self.secret)
        self.deliveries.take(f"{forge}:{push.delivery}")
        if push.ref is None:
            self.counted.labels(forge, "not_a_push").inc()
            return JSONResponse({"status": "ignored", "reason": f"{push.event} is not a push"})
        if push.branch() != self.branch:
            self.counted.labels(forge, "other_branch").inc()
            return JSONResponse({"status": "ignored", "reason": f"{push.ref} is not refs/heads/{self.branch}"})
        marker.mark(self.home, push)
        self.counted.labels(forge, "accepted").inc()
        deleted = push.after == ZERO
        LOG.info("push to %s from %s (%s): %s", self.branch, forge, push.delivery, push.after)
        return JSONResponse(
            {"status": "accepted", "branch": self.branch, "after": push.after, "deleted": deleted}, status_code=202
        )

    async def metrics(self, request: Request) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok\n")


def create_app(home: Path, branch: str, secret: bytes, max_bytes: int = MAX_BYTES) -> Starlette:
    receiver = Receiver(home, branch, secret, max_bytes)
    app = Starlette(
        routes=[
            Route("/hooks/{forge}", receiver.hook, methods=["POST"]),
            Route("/metrics", receiver.metrics),
            Route("/healthz", receiver.healthz),
        ]
    )
    app.state.receiver = receiver
    return app


def serve(home: Path, branch: str, secret: bytes, host: str, port: int, max_bytes: int = MAX_BYTES) -> None:
    import uvicorn

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(home, branch, secret, max_bytes), host=host, port=port, log_level="warning")
