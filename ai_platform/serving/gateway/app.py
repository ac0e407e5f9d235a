"""The gateway: the one front door to every live model, and where blue/green switches happen.

    POST /v1/prompts/{name}:run   variables in; validated JSON out, with a generation_id and a trust score
    POST /v1/feedback             a reviewer's label, into the inbox the feedback sensor watches
    /v1/chat/completions, /v1/completions, /v1/models    OpenAI-compatible passthrough
    GET  /livez, /readyz          liveness (the process answers) and readiness (the gateway's own state)
    GET  /healthz                 readiness, and each live model server's health (health.py)
    GET  /metrics                 Prometheus text format
    (every request: one JSON line in the access log, its count and latency on /metrics)
    POST /admin/reload            re-read the rollout state now (admin key)
    GET  /admin/status            upstreams and their in-flight requests (admin key)

This module holds the routes and the app factory. A prompt run and an OpenAI
request go through the one request pipeline (pipeline.py); which model serves
what is routing.py; the model servers' client is serving/upstream.py. Every
generation is journaled before its reply goes out and written to the warehouse
by a background writer in short batches (generations.py), never on the request path.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ai_platform.artifacts import atomic_write
from ai_platform.config import DRAIN_S
from ai_platform.detectors import injection_model
from ai_platform.errors import KeyRefused, PlatformError, RequestBodyError
from ai_platform.oci.store import RegistryStore
from ai_platform.serving.gateway import access, bodies
from ai_platform.serving.gateway.admission import Windows
from ai_platform.serving.gateway.generations import GenerationLog
from ai_platform.serving.gateway.health import Health
from ai_platform.serving.gateway.journal import Journal
from ai_platform.serving.gateway.keys import KeyRing, new_key
from ai_platform.serving.gateway.labels import accept_label, append_label
from ai_platform.serving.gateway.metrics import CONTENT_TYPE, Metrics
from ai_platform.serving.gateway.pipeline import OpenAI, Pipeline, PromptRun
from ai_platform.serving.gateway.responses import error, refused
from ai_platform.serving.gateway.routing import Live
from ai_platform.serving.state import ADMIN_KEY_FILE, GATEWAY_URL_FILE, Color, ModelState, state_dir
from ai_platform.serving.upstream import Upstream

Handler = Callable[[Request], Awaitable[Response]]


class Gateway:
    def __init__(
        self,
        home: Path,
        keys_file: Path | None = None,
        local_admin: str | None = None,
        states_from: RegistryStore | None = None,
        window_storage: str | None = None,
    ) -> None:
        self.home = Path(home)
        self.metrics = Metrics()
        # Where the rollout states are: files under the home (this machine's rollouts), or, in a cluster, the
        # artifact store in the registry, with each prompt bundle pulled from it by digest
        self.live = Live(self.home, self.metrics, states_from)
        self.log = GenerationLog(self.metrics, Journal(self.home / "gateway" / "journal"))
        self.upstream = Upstream()
        self.health = Health(self.upstream, self.metrics)
        # Gateway-wide settings (platform.yaml's `gateway`), given to `ai-platform serve`; else what states name
        self.keys_file, self.window_storage = keys_file, window_storage
        keys = KeyRing(keys_file or default_keys_file(self.home), local_admin)
        self.pipeline = Pipeline(self.live, self.metrics, self.log, self.upstream, keys, Windows(), self.health)
        self.prompt_run, self.openai = PromptRun(), OpenAI()
        self.reload()

    @property
    def states(self) -> dict[str, ModelState]:
        return self.live.states

    def reload(self) -> dict[str, str]:
        before = {m: s.live for m, s in self.live.states.items() if s.live}
        after = self.live.reload()
        self._configure(self.live.states)
        self._forget_switched(before)
        return after

    def _forget_switched(self, before: dict[str, Color]) -> None:
        """Where a model's live release changed, the connections kept alive to its address are closed once idle
        (Upstream.forget): behind a Service, kube-proxy keeps each connection on the pod it was opened to."""
        for model, old in before.items():
            new = self.live.states[model].live if model in self.live.states else None
            if new is None or switched(old, new):
                for base_url in {old.base_url, new.base_url if new else old.base_url}:
                    self.upstream.forget(base_url)

    def _configure(self, states: dict[str, ModelState]) -> None:
        """The gateway-wide settings: the gateway's own where it was given them; else, for a gateway started
        without them, platform.yaml's as the latest rollout states carry them (picked up at the first rollout)."""
        named = next((Path(s.keys_file) for s in states.values() if s.keys_file), None)
        self.pipeline.keys.path = self.keys_file or named or default_keys_file(self.home)
        carried = next((s.window_storage for s in states.values() if s.window_storage), "memory://")
        storage = self.window_storage or carried
        if storage != self.pipeline.windows.storage_uri:
            self.pipeline.windows = Windows(storage, on_fallback=lambda _: self.metrics.window_fallbacks.inc())

    def requires(self, scope: str, handler: Handler) -> Handler:
        """`handler`, for requests whose bearer key has `scope`; the key is `request.state.key`."""

        async def endpoint(request: Request) -> Response:
            try:
                self.pipeline.authorize(request, scope)
            except KeyRefused as exc:
                return refused(exc)
            return await handler(request)

        return endpoint

    async def run_prompt(self, request: Request) -> Response:
        return await self.pipeline.run(request, self.prompt_run)

    async def passthrough(self, request: Request) -> Response:
        return await self.pipeline.run(request, self.openai)

    async def feedback(self, request: Request) -> Response:
        """A reviewer's label, dropped into the inbox the feedback sensor watches (same validation as a file)."""
        try:
            label = bodies.json_body(await request.body())
        except RequestBodyError as exc:
            return error(400, str(exc))
        if isinstance(label, dict):
            label = {**label, "reviewer": request.state.key.name}  # the key names the reviewer, not the body
        row, problem = accept_label(label)
        if row is None:
            return error(422, problem or "")
        known = [s for s in self.states.values() if s.inbox]
        if not known:
            return error(503, "no inbox is configured (nothing has been rolled out yet)")
        inbox = Path(known[0].inbox)
        await asyncio.to_thread(append_label, inbox, row)
        return JSONResponse({"accepted": True, "inbox": str(inbox)}, status_code=202)

    async def models(self, request: Request) -> Response:
        """GET /v1/models: every live model, as OpenAI lists models."""
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "ai-platform"}
            for m, s in sorted(self.states.items())
            if s.live
        ]
        return JSONResponse({"object": "list", "data": data})

    def not_ready(self) -> str | None:
        """Why the gateway cannot take requests now (None: it can): its own state, never a model's health."""
        if self.log.full:
            return "the generation log's journal is full: the warehouse has not taken its backlog"
        return None

    async def livez(self, request: Request) -> Response:
        """Liveness: the process answers. Nothing else, so a model's outage never restarts the gateway."""
        return JSONResponse({"status": "alive"})

    async def readyz(self, request: Request) -> Response:
        """Readiness: the gateway's own state (its journal can take rows), not its models' health."""
        problem = self.not_ready()
        body = {"status": "ready"} if problem is None else {"status": "not ready", "reason": problem}
        return JSONResponse(body, status_code=200 if problem is None else 503)

    async def healthz(self, request: Request) -> Response:
        """The gateway's readiness (its status code) and each live model server's health (the body), as the
        background checks last found it; a server not checked yet is checked now."""
        serving = self.live.serving()
        if any(color.base_url not in self.health.servers for _, color in serving):
            await self.health.check(serving)
        models = {
            model: {"color": color.color, "image": color.image, **self.health.status(model, color).to_json()}
            for model, color in serving
        }
        problem = self.not_ready()
        status = "not ready" if problem else "ok" if all(m["healthy"] for m in models.values()) else "degraded"
        body = {"status": status, "models": models, **({"reason": problem} if problem else {})}
        return JSONResponse(body, status_code=503 if problem else 200)

    async def metrics_text(self, request: Request) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def admin_reload(self, request: Request) -> Response:
        return JSONResponse({"live": await asyncio.to_thread(self.reload)})

    async def admin_status(self, request: Request) -> Response:
        return JSONResponse(
            {"models": {m: s.to_json() for m, s in self.states.items()}, "in_flight": dict(self.metrics.in_flight)}
        )

    async def watch(self) -> None:
        """A safety net behind /admin/reload: pick up state changes within a second."""
        while True:
            await asyncio.sleep(1.0)
            try:
                await asyncio.to_thread(self.reload)
            except (OSError, ValueError, PlatformError) as exc:
                print(f"gateway: cannot read the rollout state: {exc}", flush=True)


def switched(old: Color, new: Color) -> bool:
    """Whether the release serving a model changed: another colour, address, image, server or process."""
    return any(getattr(old, field) != getattr(new, field) for field in ("color", "base_url", "image", "release", "pid"))


def default_keys_file(home: Path) -> Path:
    """Where the keys are when no rollout state names platform.yaml's gateway.keys yet."""
    return Path(home) / "gateway" / "keys.json"


def create_app(
    home: Path,
    keys_file: Path | None = None,
    states_from: RegistryStore | None = None,
    window_storage: str | None = None,
) -> Starlette:
    """The gateway app; it writes a fresh local admin key (owner-only) for rollouts on this machine. `keys_file`
    and `window_storage`: platform.yaml's `gateway.keys` and `gateway.window_storage`, for the whole gateway."""
    injection_model.shipped()  # a broken model file stops the start (DetectorModelError), not every request
    local_admin = new_key()
    atomic_write(admin_file := state_dir(home) / ADMIN_KEY_FILE, local_admin.encode())
    os.chmod(admin_file, 0o600)
    gateway = Gateway(home, keys_file, local_admin, states_from, window_storage)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watches = gateway.watch(), gateway.health.watch(gateway.live.serving), access.flush_every()
        tasks = [asyncio.create_task(watch) for watch in watches]
        yield
        for task in tasks:
            task.cancel()
        access.flush()  # the last access lines: uvicorn re-raises SIGTERM after this, and no atexit runs
        gateway.log.flush()
        if gateway.log.journal:
            gateway.log.journal.close()  # what is still unwritten stays journaled for the next start
        await gateway.upstream.aclose()

    app = Starlette(
        routes=[
            Route("/v1/prompts/{name}:run", gateway.requires("invoke", gateway.run_prompt), methods=["POST"]),
            Route("/v1/chat/completions", gateway.requires("invoke", gateway.passthrough), methods=["POST"]),
            Route("/v1/completions", gateway.requires("invoke", gateway.passthrough), methods=["POST"]),
            Route("/v1/models", gateway.requires("invoke", gateway.models), methods=["GET"]),
            Route("/v1/feedback", gateway.requires("label", gateway.feedback), methods=["POST"]),
            Route("/healthz", gateway.healthz),
            Route("/livez", gateway.livez),
            Route("/readyz", gateway.readyz),
            Route("/metrics", gateway.metrics_text),
            Route("/admin/reload", gateway.requires("admin", gateway.admin_reload), methods=["POST"]),
            Route("/admin/status", gateway.requires("admin", gateway.admin_status)),
        ],
        middleware=[Middleware(access.AccessLog, metrics=gateway.metrics)],
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    return app


def serve(
    home: Path,
    host: str = "127.0.0.1",
    port: int = 8080,
    states_from: str | None = None,
    keys_file: Path | None = None,
    window_storage: str | None = None,
    drain_s: int = DRAIN_S,
) -> None:
    """Run the gateway until interrupted; its URL is written where rollouts look for it. `states_from`, a
    registry URL (platform.yaml's registry.url), makes it follow a cluster's rollouts kept there; `keys_file`
    and `window_storage` are platform.yaml's gateway settings (create_app). Stopped (SIGTERM, Ctrl-C), it
    takes no new connection and lets the requests in flight finish for up to `drain_s` seconds (platform.yaml's
    gateway.drain_s); then it cuts what is left, and closes its model server connections."""
    import uvicorn

    marker = state_dir(home) / GATEWAY_URL_FILE
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"http://{host}:{port}\n")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    lines = access.log_to_stderr()  # in batches (access.BufferedLines): once a second, and at the end
    try:
        store = RegistryStore(states_from, Path(home) / "artifacts") if states_from else None
        app = create_app(Path(home), keys_file, store, window_storage)
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, timeout_graceful_shutdown=drain_s)
    finally:
        marker.unlink(missing_ok=True)
        lines.close()
