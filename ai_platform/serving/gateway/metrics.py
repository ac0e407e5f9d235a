"""The gateway's Prometheus metrics (prometheus_client), the golden metrics of every reply among them.

Traffic: requests by route, model and status, their latency and time to first token, requests whose
caller left before the answer ended (cancelled), requests in flight per model and color, the live
color, switches, each live model server's health (`ai_platform_gateway_upstream_up`) and restarts, and
refused rollout states. Quality of what users get, per model and prompt: replies and schema-valid replies (a
rate in PromQL), the repetition ratio (seq-rep-4), PII entities found in replies, the injection score
of inputs, the trust score, replies marked for review, replies that leak their system prompt. The generation log:
rows waiting, rows written, failed writes. Where a request's time goes: the
duration of each pipeline step (`ai_platform_gateway_step_duration_seconds{step}`).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client import Counter as PromCounter

from ai_platform.serving.state import ModelState

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
RATIO_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0)
# A step of the request pipeline takes from microseconds (a guard on a short input) to seconds (the upstream)
STEP_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60)
# The steps of the gateway's request pipeline (serving/gateway/pipeline.py), in order
STEPS = ("authorize", "parse", "guard_input", "admit", "upstream", "score", "guard_output", "journal")
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """One registry per gateway, so two gateways in one process (tests) never share counters."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = PromCounter(
            "ai_platform_gateway_requests",
            "Requests by route, model and status.",
            ["route", "model", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "ai_platform_gateway_request_duration_seconds",
            "Request latency, whole request.",
            ["route", "model", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.first_byte = Histogram(
            "ai_platform_gateway_time_to_first_token_seconds",
            "Time until the reply's first byte: the first token of a streamed reply, the whole reply otherwise.",
            ["route", "model", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.window_fallbacks = PromCounter(
            "ai_platform_gateway_window_fallbacks",
            "Admission decisions taken on this replica's own windows because the shared store (Redis) could not"
            " be reached.",
            registry=r,
        )
        self.in_flight_gauge = Gauge(
            "ai_platform_gateway_in_flight_requests", "Requests waiting on an upstream.", ["model", "color"], registry=r
        )
        self.live = Gauge(
            "ai_platform_gateway_live_color",
            "1 for the color and image each model is served by.",
            ["model", "color", "image"],
            registry=r,
        )
        self.cancelled = PromCounter(
            "ai_platform_gateway_cancelled",
            "Requests whose caller left before their answer ended (access status 499); the model server's call was"
            " cancelled, its connection closed.",
            ["route", "model"],
            registry=r,
        )
        self.switch_count = PromCounter(
            "ai_platform_gateway_switches", "Upstream switches (rollouts) seen.", registry=r
        )
        self.upstream_up = Gauge(
            "ai_platform_gateway_upstream_up",
            "1 while a model's live model server answers its health check, 0 while it does not.",
            ["model", "color"],
            registry=r,
        )
        self.upstream_down = PromCounter(
            "ai_platform_gateway_upstream_down",
            "Times a model's live model server was found down (by its health check).",
            ["model", "color"],
            registry=r,
        )
        self.restarts = Gauge(
            "ai_platform_gateway_upstream_restarts",
            "Times the embedded supervisor started a live model server again since it went live (rollout/heal.py).",
            ["model", "color"],
            registry=r,
        )
        self.states_refused = PromCounter(
            "ai_platform_gateway_states_refused",
            "Rollout states the gateway refused to load (it kept serving the model's last good one, if any).",
            ["model"],
            registry=r,
        )
        self.replies = PromCounter("ai_platform_replies", "Replies to prompt runs.", ["model", "prompt"], registry=r)
        self.valid = PromCounter(
            "ai_platform_replies_schema_valid",
            "Replies that the prompt's schema accepts.",
            ["model", "prompt"],
            registry=r,
        )
        self.repetition = Histogram(
            "ai_platform_reply_repetition_ratio",
            "seq-rep-4 of each reply.",
            ["model"],
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.pii = PromCounter(
            "ai_platform_reply_pii_entities", "Validated PII entities found in replies.", ["model", "kind"], registry=r
        )
        self.leaks = PromCounter(
            "ai_platform_reply_prompt_leaks",
            "Prompt-run replies that repeat a run of their compiled system prompt (guards.leak), whatever its action.",
            ["model", "prompt"],
            registry=r,
        )
        self.injection = Histogram(
            "ai_platform_request_injection_score",
            "Prompt-injection score of each input.",
            ["model"],
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.trust = Histogram(
            "ai_platform_reply_trust_score",
            "The champion trust model's score of each reply.",
            ["model"],
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.review = PromCounter(
            "ai_platform_replies_needing_review", "Replies scored under the trust threshold.", ["model"], registry=r
        )
        self.guard_actions = PromCounter(
            "ai_platform_guard_actions", "Actions guards took.", ["model", "guard", "action"], registry=r
        )
        self.admissions = PromCounter(
            "ai_platform_admission_decisions", "Admission decisions.", ["model", "decision"], registry=r
        )
        self.admitted_weight = Histogram(
            "ai_platform_admission_weight",
            "Weight of each request decided (input tokens + 4 x max_tokens, in units of 256).",
            ["model", "decision"],
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
            registry=r,
        )
        self.log_pending = Gauge("ai_platform_generation_log_pending", "Generations waiting to be written.", registry=r)
        self.log_written = PromCounter(
            "ai_platform_generation_log_written", "Generations written to the warehouse.", registry=r
        )
        self.log_failures = PromCounter(
            "ai_platform_generation_log_write_failures",
            "Failed warehouse writes of the generation log (retried).",
            registry=r,
        )
        self.step_seconds = Histogram(
            "ai_platform_gateway_step_duration_seconds",
            "Time in each step of the gateway's request pipeline (upstream: the model server's answer, streamed or"
            " not; score: with a re-ask).",
            ["step"],
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.steps = {step: self.step_seconds.labels(step) for step in STEPS}  # every step on /metrics from the start
        self.in_flight: Counter[str] = Counter()  # by upstream base_url: what a rollout drains
        self.colors: dict[str, tuple[str, str]] = {}  # base_url -> (model, color), for the gauge
        self.children: dict[tuple[Any, tuple[str, ...]], Any] = {}  # (metric, labels) -> its labelled child

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, looked up once (prometheus_client's lookup takes a lock and builds its key
        each time, ~1 us, a dozen times a request). Only for metrics never cleared nor removed from: a cleared
        metric's old child would count where no one reads it (not live, restarts, upstream_up)."""
        key = (metric, labels)
        found = self.children.get(key)
        if found is None:
            found = self.children[key] = metric.labels(*labels)
        return found

    def observe(self, route: str, model: str, status: int, seconds: float, first_byte: float) -> None:
        code = str(status)
        self.child(self.requests, route, model, code).inc()
        self.child(self.latency, route, model, code).observe(seconds)
        self.child(self.first_byte, route, model, code).observe(first_byte)

    def timed(self, step: str) -> Timed:
        """`with metrics.timed("admit"): ...` observes the block's duration as that pipeline step's."""
        return Timed(self.steps[step])

    def enter(self, base_url: str) -> None:
        self.in_flight[base_url] += 1
        self._gauge(base_url, 1)

    def leave(self, base_url: str) -> None:
        self.in_flight[base_url] -= 1
        self._gauge(base_url, -1)

    def _gauge(self, base_url: str, delta: int) -> None:
        if base_url in self.colors:
            self.child(self.in_flight_gauge, *self.colors[base_url]).inc(delta)

    def switched(self, count: int) -> None:
        self.switch_count.inc(count)

    def reply(self, model: str, prompt: str, scored: dict[str, Any]) -> None:
        """The golden metrics of one scored reply (see serving.gateway.scoring.score_reply)."""
        metrics = scored["metrics"]
        self.child(self.replies, model, prompt).inc()
        if scored["valid"]:
            self.child(self.valid, model, prompt).inc()
        self.child(self.repetition, model).observe(metrics["seq_rep_4"])
        for kind in metrics["pii"]:
            self.child(self.pii, model, kind).inc()
        self.child(self.injection, model).observe(metrics["injection"])
        if scored["trust_score"] is not None:
            self.child(self.trust, model).observe(scored["trust_score"])
        if scored["needs_review"]:
            self.child(self.review, model).inc()

    def track(self, states: dict[str, ModelState]) -> None:
        """The live colors after a reload of the rollout state."""
        self.live.clear()
        self.restarts.clear()
        for model, state in states.items():
            if state.live:
                self.live.labels(model, state.live.color, state.live.image).set(1)
                self.restarts.labels(model, state.live.color).set(state.live.restarts)
                self.colors[state.live.base_url] = (model, state.live.color)

    def guard(self, model: str, guard: str, action: str) -> None:
        self.child(self.guard_actions, model, guard, action).inc()

    def admission(self, model: str, decision: str, weight: int) -> None:
        self.child(self.admissions, model, decision).inc()
        self.child(self.admitted_weight, model, decision).observe(weight)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class Timed:
    """A context manager observing its block's duration into one histogram child (cheaper than contextlib's)."""

    __slots__ = ("child", "since")

    def __init__(self, child: Any) -> None:
        self.child = child
        self.since = 0.0

    def __enter__(self) -> None:
        self.since = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.child.observe(time.perf_counter() - self.since)
