"""Each live model server's health, known before a request needs it, and kept to its own model.

A background task asks every live model server's `/health` at once (not one after
another), every `interval_s`, and every `down_interval_s` while one is down, so a
server that comes back is served again within about a second. A server is down
after `failures` checks in a row fail: it cannot be reached, or answers another
status than 200 (a dead engine's vLLM answers 503). A check that gets no answer
within `timeout_s` changes nothing: a server that slow is overloaded, and refusing
its requests would turn an overload into an outage. Up again after one check that
passes. A request for a model whose server is down gets a 503 with `Retry-After`
at once, before admission (it costs no budget); the other models are served as before. Each server's state is on
`/healthz` (its body), on /metrics (`ai_platform_gateway_upstream_up`, and
`ai_platform_gateway_upstream_down` counting outages) and in the log.

The gateway's own probes are apart from this: `/livez` answers while the process
does, and `/readyz` says whether the gateway can take requests at all (app.py), so
one model's outage never takes the gateway out of its Service or restarts it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ai_platform.errors import GatewayRefusal
from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.serving.state import Color
from ai_platform.serving.upstream import Upstream

LOG = logging.getLogger("ai_platform.gateway")


@dataclass
class Status:
    """What the health checks found of one model server."""

    model: str
    color: str
    healthy: bool = True  # until a check says otherwise: a new colour was warmed up before it went live
    failures: int = 0  # checks failed in a row
    since: float = 0.0  # when `healthy` last changed (time.time())
    checked: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"healthy": self.healthy, "since": round(self.since, 3), "checked": round(self.checked, 3)}


class Health:
    def __init__(
        self,
        upstream: Upstream,
        metrics: Metrics,
        *,
        interval_s: float = 2.0,
        down_interval_s: float = 0.5,
        failures: int = 2,
        timeout_s: float = 2.0,
        retry_after_s: int = 2,
    ) -> None:
        self.upstream, self.metrics = upstream, metrics
        self.interval_s, self.down_interval_s = interval_s, down_interval_s
        self.failures, self.timeout_s, self.retry_after_s = failures, timeout_s, retry_after_s
        self.servers: dict[str, Status] = {}  # by base URL: a switch to a new colour starts from its own record

    def status(self, model: str, color: Color) -> Status:
        return self.servers.get(color.base_url) or Status(model, color.color, since=time.time())

    def require(self, model: str, color: Color) -> None:
        """Nothing when `model`'s server `color` is up (or not checked yet); else a 503 with Retry-After."""
        found = self.servers.get(color.base_url)
        if found is not None and not found.healthy:
            raise GatewayRefusal(
                503,
                f"the model {model!r} is not available right now (its model server is down); "
                f"retry in {self.retry_after_s} s",
                code="model_unavailable",
                headers={"Retry-After": str(self.retry_after_s)},
            )

    async def check(self, live: Iterable[tuple[str, Color]]) -> None:
        """One round: every live server (model, colour) asked at once; servers no longer live are forgotten."""
        colors = {c.base_url: (model, c) for model, c in live}
        for gone in set(self.servers) - set(colors):
            status = self.servers.pop(gone)
            self.metrics.upstream_up.remove(status.model, status.color)
        answers = await asyncio.gather(*(self.upstream.healthy(c, self.timeout_s) for _, c in colors.values()))
        for (model, color), ok in zip(colors.values(), answers, strict=True):
            self.observe(model, color, ok)

    def observe(self, model: str, color: Color, ok: bool | None) -> None:
        """One check's answer: True up, False down, None no answer in time (overloaded: it changes nothing, so a
        server slow under load is never taken for a dead one and refused)."""
        now = time.time()
        status = self.servers.get(color.base_url)
        if status is None:
            status = self.servers[color.base_url] = Status(model, color.color, since=now)
        status.checked = now
        if ok is None:
            self.metrics.upstream_up.labels(model, color.color).set(1 if status.healthy else 0)
            return
        status.failures = 0 if ok else status.failures + 1
        healthy = ok or (status.healthy and status.failures < self.failures)
        if healthy != status.healthy:
            status.healthy, status.since = healthy, now
            if healthy:
                LOG.warning("%s: its model server (%s) answers again; serving it", model, color.color)
            else:
                self.metrics.upstream_down.labels(model, color.color).inc()
                LOG.error(
                    "%s: its model server (%s) failed %d health checks in a row; answering its requests with 503",
                    model,
                    color.color,
                    status.failures,
                )
        self.metrics.upstream_up.labels(model, color.color).set(1 if status.healthy else 0)

    @property
    def any_down(self) -> bool:
        return any(not s.healthy for s in self.servers.values())

    async def watch(self, live: Callable[[], Iterable[tuple[str, Color]]]) -> None:
        """Check forever (`live()`: each model and its live colour now), faster while a server is down."""
        while True:
            try:
                await self.check(live())
            except Exception:  # a bug here must not stop the checks for good; it is logged with its trace
                LOG.exception("health checks failed")
            await asyncio.sleep(self.down_interval_s if self.any_down else self.interval_s)
