"""The gateway: the one front door to every live model, and where blue/green switches happen.

    POST /v1/prompts/{name}:run   variables in; validated JSON out, with a generation_id and a trust score
    POST /v1/feedback             a reviewer's label, into the inbox the feedback sensor watches
    /v1/chat/completions, /v1/completions, /v1/models    OpenAI-compatible passthrough
    GET  /healthz                 the gateway and each live upstream
    GET  /metrics                 Prometheus text format
    POST /admin/reload            re-read the rollout state now (loopback clients only)
    GET  /admin/status            upstreams and their in-flight requests (loopback clients only)

Routing reads the rollout state files (one per model, replaced atomically by a
rollout); a request holds the upstream it started on, so a switch never breaks
a request in flight: the old color drains, then the rollout stops it. Prompt
bundles are loaded by digest and cached, so a prompt-only rollout is a state
change, not a vLLM restart. Every generation is logged to the warehouse by a
background writer in short batches, never on the request path.
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
import time
import uuid
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from ai_platform.errors import PlatformError
from ai_platform.evaluation.injection import injection_score
from ai_platform.evaluation.pii import find_pii
from ai_platform.evaluation.text import seq_rep_n
from ai_platform.image.layout import OciLayout
from ai_platform.prompts import bundle
from ai_platform.prompts.compiler import version_of
from ai_platform.prompts.render import request_body
from ai_platform.serving.state import GATEWAY_URL_FILE, Color, ModelState, load_all, state_dir
from ai_platform.trust.features import features
from ai_platform.trust.model import TrustModel
from ai_platform.trust.rag import KeywordRetriever, with_context
from ai_platform.warehouse import Warehouse

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
LOOPBACK = {"127.0.0.1", "::1", "localhost", "testclient"}


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.latency: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
        self.latency_sum: Counter[str] = Counter()
        self.in_flight: Counter[str] = Counter()  # by upstream base_url
        self.switches = 0

    def observe(self, route: str, model: str, status: int, seconds: float) -> None:
        self.requests[(route, model, status)] += 1
        bucket = next((i for i, b in enumerate(BUCKETS) if seconds <= b), len(BUCKETS))
        self.latency[route][bucket] += 1
        self.latency_sum[route] += seconds

    def render(self, states: dict[str, ModelState]) -> str:
        lines = ["# HELP ai_platform_gateway_requests_total Requests by route, model and status.",
                 "# TYPE ai_platform_gateway_requests_total counter"]  # fmt: skip
        lines += [f'ai_platform_gateway_requests_total{{route="{r}",model="{m}",status="{s}"}} {n}'
                  for (r, m, s), n in sorted(self.requests.items())]  # fmt: skip
        lines += ["# HELP ai_platform_gateway_request_seconds Request latency.",
                  "# TYPE ai_platform_gateway_request_seconds histogram"]  # fmt: skip
        for route, counts in sorted(self.latency.items()):
            total = 0
            for bound, count in zip([*map(str, BUCKETS), "+Inf"], counts, strict=True):
                total += count
                lines.append(f'ai_platform_gateway_request_seconds_bucket{{route="{route}",le="{bound}"}} {total}')
            lines.append(f'ai_platform_gateway_request_seconds_sum{{route="{route}"}} {self.latency_sum[route]:.6f}')
            lines.append(f'ai_platform_gateway_request_seconds_count{{route="{route}"}} {total}')
        lines += ["# TYPE ai_platform_gateway_in_flight gauge"]
        lines += [f'ai_platform_gateway_in_flight{{upstream="{u}"}} {n}' for u, n in sorted(self.in_flight.items())]
        lines += ["# TYPE ai_platform_gateway_live_color gauge"]
        lines += [f'ai_platform_gateway_live_color{{model="{m}",color="{s.live.color}",image="{s.live.image}"}} 1'
                  for m, s in sorted(states.items()) if s.live]  # fmt: skip
        lines += [
            "# TYPE ai_platform_gateway_switches_total counter",
            f"ai_platform_gateway_switches_total {self.switches}",
        ]
        return "\n".join(lines) + "\n"


# DuckDB refuses a second connection to a file in one process when the two differ in
# configuration (read-only vs read-write): every warehouse access of the gateway goes
# through this lock (seen: the trust-model reload and the generation log collided and
# generations were dropped).
WAREHOUSE_LOCK = threading.Lock()


class GenerationLog:
    """Generations go to the warehouse from one background thread, in batches (DuckDB has one writer).

    A batch that cannot be written is kept and retried, never dropped: a generation a
    reviewer may later label must exist when the label arrives.
    """

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[str, list[Any]]] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="generation-log", daemon=True)
        self.thread.start()

    def add(self, warehouse: str, row: list[Any]) -> None:
        self.queue.put((warehouse, row))

    def flush(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.05)

    def _run(self) -> None:
        pending: dict[str, list[list[Any]]] = defaultdict(list)
        taken = 0
        while True:
            try:
                db, row = self.queue.get(timeout=0.2 if not pending else 1.0)
                pending[db].append(row)
                taken += 1
                if taken < 500:
                    continue
            except queue.Empty:
                pass
            for db in list(pending):
                try:
                    with WAREHOUSE_LOCK, Warehouse(db).write() as con:
                        con.executemany(
                            "INSERT INTO generations (generation_id, model, prompt_name, prompt_version, image_digest,"
                            " source, input, output, metrics, finish_reason, latency_s, trust_score, needs_review)"
                            " VALUES (?, ?, ?, ?, ?, 'gateway', ?, ?, ?, ?, ?, ?, ?)", pending[db])  # fmt: skip
                except PlatformError as exc:  # keep serving and keep the rows: the next round retries
                    print(f"gateway: {len(pending[db])} generations wait to be logged to {db}: {exc}", flush=True)
                    continue
                for _ in pending.pop(db):
                    self.queue.task_done()
            taken = 0


class Gateway:
    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.states: dict[str, ModelState] = {}
        self.bundles: dict[str, dict[str, dict[str, Any]]] = {}  # digest -> prompt name -> document
        self.metrics = Metrics()
        self.trust: dict[str, TrustModel | None] = {}  # model -> champion trust model
        self.trust_files: dict[str, TrustModel] = {}
        self.trust_checked: dict[str, tuple[float, TrustModel | None]] = {}
        self.retrievers: dict[str, KeywordRetriever] = {}
        self.log = GenerationLog()
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=5.0))
        self.reload()

    def reload(self) -> dict[str, str]:
        states = load_all(self.home)
        before = {m: s.live.base_url for m, s in self.states.items() if s.live}
        after = {m: s.live.base_url for m, s in states.items() if s.live}
        for state in states.values():
            if state.live and state.live.bundle not in self.bundles:
                self.bundles[state.live.bundle] = bundle.load(OciLayout(state.live.bundle_layout), state.live.bundle)
        self.metrics.switches += sum(before.get(m) != url for m, url in after.items())
        for state in states.values():
            self.trust[state.model] = self._champion(state.warehouse)
            if state.retrieval_corpus and state.retrieval_corpus not in self.retrievers:
                self.retrievers[state.retrieval_corpus] = KeywordRetriever(Path(state.retrieval_corpus))
        self.states = states
        return after

    def _champion(self, warehouse: str) -> TrustModel | None:
        """The champion trust model recorded in the warehouse (cached by its file, looked up every 15 s at most:
        each look holds the file briefly, and pipeline runs write to it)."""
        if not warehouse or not Path(warehouse).is_file():
            return None
        checked, model = self.trust_checked.get(warehouse, (0.0, None))
        if time.monotonic() - checked < 15.0:
            return model
        model = self._lookup_champion(warehouse)
        self.trust_checked[warehouse] = (time.monotonic(), model)
        return model

    def _lookup_champion(self, warehouse: str) -> TrustModel | None:
        try:
            query = "SELECT artifact_path FROM trust_models WHERE champion ORDER BY trained_at DESC LIMIT 1"
            with WAREHOUSE_LOCK:
                _, rows = Warehouse(warehouse, lock_timeout_s=2).query(query)
        except PlatformError:
            return None
        if not rows:
            return None
        if rows[0][0] not in self.trust_files:
            self.trust_files[rows[0][0]] = TrustModel.load(Path(rows[0][0]))
        return self.trust_files[rows[0][0]]

    def prompt(self, name: str, model: str | None) -> tuple[ModelState, dict[str, Any]]:
        hits = [(s, self.bundles[s.live.bundle][name]) for m, s in self.states.items()
                if s.live and name in self.bundles.get(s.live.bundle, {}) and model in (None, m)]  # fmt: skip
        if not hits:
            raise LookupError(f"no live model serves prompt {name!r}")
        if len(hits) > 1:
            raise LookupError(f'prompt {name!r} is served by several models; name one with "model"')
        return hits[0]

    async def run_prompt(self, request: Request) -> Response:
        started = time.perf_counter()
        name = request.path_params["name"]
        try:
            payload = await request.json()
        except ValueError:
            return _error(400, 'the body must be JSON: {"variables": {...}}')
        if not isinstance(payload, dict) or not isinstance(payload.get("variables", {}), dict):
            return _error(400, 'the body must be an object with "variables" as an object')
        try:
            state, document = self.prompt(name, payload.get("model"))
        except LookupError as exc:
            return _error(404, str(exc))
        try:
            body = request_body(document, payload.get("variables", {}), model=state.model)
        except PlatformError as exc:
            return _error(422, str(exc))
        upstream = state.live
        assert upstream is not None
        body["logprobs"] = True  # the mean token log-probability is a trust-model feature
        try:
            choice, usage = await self._complete(upstream, body)
        except _UpstreamError as exc:
            self.metrics.observe("prompt", state.model, 502, time.perf_counter() - started)
            return _error(502, str(exc))
        user_text = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        scored = self._score(state, document, choice, usage, user_text, time.perf_counter() - started)
        retrieved: list[str] = []
        retriever = self.retrievers.get(state.retrieval_corpus)
        if scored["needs_review"] and retriever is not None and (retrieved := retriever.retrieve(user_text)):
            retry = {**body, "messages": with_context(body["messages"], retrieved)}
            try:
                again = await self._complete(upstream, retry)
                rescored = self._score(state, document, *again, user_text, time.perf_counter() - started)
                if (rescored["trust_score"] or 0) > (scored["trust_score"] or 0):
                    scored = {**rescored, "metrics": {**rescored["metrics"], "retrieved": len(retrieved)}}
            except _UpstreamError:
                pass  # the first reply stands, marked needs_review
        latency = time.perf_counter() - started
        generation_id = f"gen-{uuid.uuid4().hex}"
        version = version_of(document)
        variables = json.dumps(payload.get("variables", {}), ensure_ascii=False)
        row = [generation_id, state.model, name, version, upstream.image, variables, scored["content"],
               json.dumps(scored["metrics"], ensure_ascii=False), scored["finish_reason"], latency,
               scored["trust_score"], scored["needs_review"]]  # fmt: skip
        self.log.add(state.warehouse, row)
        status = 200 if scored["valid"] else 502
        self.metrics.observe("prompt", state.model, status, latency)
        result = {"generation_id": generation_id, "prompt": name, "prompt_version": version, "model": state.model,
                  "image": upstream.image, "output": scored["output"], "schema_valid": scored["valid"],
                  "trust_score": scored["trust_score"], "needs_review": scored["needs_review"],
                  "finish_reason": scored["finish_reason"], "latency_s": round(latency, 4)}  # fmt: skip
        if not scored["valid"]:
            result["error"] = "the reply does not validate against the prompt's output schema"
            result["raw_output"] = scored["content"]
        return JSONResponse(result, status_code=status)

    async def _complete(self, upstream: Color, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        self.metrics.in_flight[upstream.base_url] += 1
        try:
            reply = await self.http.post(f"{upstream.base_url}/v1/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise _UpstreamError(f"upstream {upstream.color} unreachable: {type(exc).__name__}") from None
        finally:
            self.metrics.in_flight[upstream.base_url] -= 1
        if reply.status_code != 200:
            raise _UpstreamError(f"upstream {upstream.color} answered HTTP {reply.status_code}: {reply.text[:200]}")
        data = reply.json()
        return data["choices"][0], data.get("usage") or {}

    def _score(self, state: ModelState, document: dict[str, Any], choice: dict[str, Any], usage: dict[str, Any],
               user_text: str, latency: float) -> dict[str, Any]:  # fmt: skip
        content = choice["message"]["content"] or ""
        output, valid = _validated(content, document["output_schema"])
        logprobs = [t["logprob"] for t in (choice.get("logprobs") or {}).get("content") or []]
        metrics = {
            "schema_valid": valid,
            "seq_rep_4": seq_rep_n(content, 4),
            "pii": [f.kind for f in find_pii(content)],
            "injection": injection_score(user_text),
            "output_tokens": usage.get("completion_tokens"),
            "mean_logprob": sum(logprobs) / len(logprobs) if logprobs else None,
            "min_logprob": min(logprobs) if logprobs else None,
            "color": state.live.color if state.live else None,
        }
        model = self.trust.get(state.model)
        row = {"input": user_text, "output": content, "metrics": metrics, "finish_reason": choice.get("finish_reason"),
               "latency_s": latency}  # fmt: skip
        trust = model.score(features(row)) if model else None
        return {"content": content, "output": output, "valid": valid, "metrics": metrics, "trust_score": trust,
                "needs_review": trust is not None and trust < state.trust_threshold,
                "finish_reason": choice.get("finish_reason")}  # fmt: skip

    async def feedback(self, request: Request) -> Response:
        """A reviewer's label, dropped into the inbox the feedback sensor watches (same validation as a file)."""
        try:
            label = await request.json()
        except ValueError:
            return _error(400, "the body must be JSON")
        problem = _label_problem(label)
        if problem:
            return _error(422, problem)
        known = [s for s in self.states.values() if s.inbox]
        if not known:
            return _error(503, "no inbox is configured (nothing has been rolled out yet)")
        row = {k: label.get(k) for k in ("generation_id", "reviewer", "label", "comment", "labeled_at")}
        row["labeled_at"] = row["labeled_at"] or datetime.now(UTC).isoformat()
        inbox = Path(known[0].inbox)
        await asyncio.to_thread(_append_label, inbox, row)
        return JSONResponse({"accepted": True, "inbox": str(inbox)}, status_code=202)

    async def passthrough(self, request: Request) -> Response:
        started = time.perf_counter()
        raw = await request.body()
        try:
            model = json.loads(raw).get("model") if raw else None
        except ValueError:
            return _error(400, "the body must be JSON")
        live = [s for s in self.states.values() if s.live and model in (None, s.model)]
        if len(live) != 1:
            return _error(
                404, f"no single live model for {model!r} (live: {', '.join(s.model for s in live) or 'none'})"
            )
        upstream = live[0].live
        assert upstream is not None
        self.metrics.in_flight[upstream.base_url] += 1
        url = f"{upstream.base_url}{request.url.path}"
        headers = {"Content-Type": "application/json"}
        upstream_request = self.http.build_request(request.method, url, content=raw, headers=headers)
        try:
            reply = await self.http.send(upstream_request, stream=True)
        except httpx.HTTPError as exc:
            self.metrics.in_flight[upstream.base_url] -= 1
            return _error(502, f"upstream unreachable: {type(exc).__name__}")

        async def relay() -> Any:
            try:
                async for chunk in reply.aiter_raw():
                    yield chunk
            finally:
                await reply.aclose()
                self.metrics.in_flight[upstream.base_url] -= 1
                self.metrics.observe("openai", live[0].model, reply.status_code, time.perf_counter() - started)

        headers = {k: v for k, v in reply.headers.items() if k.lower() in ("content-type", "cache-control")}
        return StreamingResponse(relay(), status_code=reply.status_code, headers=headers)

    async def healthz(self, request: Request) -> Response:
        upstreams = {}
        for model, state in self.states.items():
            if state.live:
                try:
                    ok = (await self.http.get(f"{state.live.base_url}/health", timeout=2)).status_code == 200
                except httpx.HTTPError:
                    ok = False
                upstreams[model] = {"color": state.live.color, "image": state.live.image, "healthy": ok}
        healthy = all(u["healthy"] for u in upstreams.values())
        return JSONResponse({"status": "ok" if healthy else "degraded", "models": upstreams}, 200 if healthy else 503)

    async def metrics_text(self, request: Request) -> Response:
        return PlainTextResponse(self.metrics.render(self.states), media_type="text/plain; version=0.0.4")

    async def admin_reload(self, request: Request) -> Response:
        if not _local(request):
            return _error(403, "admin endpoints answer loopback clients only")
        return JSONResponse({"live": await asyncio.to_thread(self.reload)})

    async def admin_status(self, request: Request) -> Response:
        if not _local(request):
            return _error(403, "admin endpoints answer loopback clients only")
        return JSONResponse({"models": {m: s.to_json() for m, s in self.states.items()},
                             "in_flight": dict(self.metrics.in_flight)})  # fmt: skip

    async def watch(self) -> None:
        """A safety net behind /admin/reload: pick up state changes within a second."""
        while True:
            await asyncio.sleep(1.0)
            try:
                await asyncio.to_thread(self.reload)
            except (OSError, ValueError, PlatformError) as exc:
                print(f"gateway: cannot read the rollout state: {exc}", flush=True)


class _UpstreamError(Exception):
    pass


LABELS = ("correct", "missed_risk", "false_positive")


def _label_problem(label: Any) -> str | None:
    if not isinstance(label, dict):
        return "the body must be an object"
    for key in ("generation_id", "reviewer"):
        if not isinstance(label.get(key), str) or not label[key].strip():
            return f"{key!r} must be a non-empty string"
    if label.get("label") not in LABELS:
        return f"'label' must be one of {', '.join(LABELS)}"
    if label.get("labeled_at") is not None:
        try:
            if datetime.fromisoformat(str(label["labeled_at"])).tzinfo is None:
                return "'labeled_at' needs a timezone (ISO 8601, e.g. 2026-12-03T10:00:00Z)"
        except ValueError:
            return "'labeled_at' must be an ISO 8601 timestamp"
    return None


def _append_label(inbox: Path, row: dict[str, Any]) -> None:
    """One JSONL file per hour, appended under a lock; ingestion is idempotent, so re-reading it is safe."""
    import fcntl

    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / f"gateway-{datetime.now(UTC):%Y%m%d%H}.jsonl"
    with path.open("a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _validated(content: str, schema: dict[str, Any] | None) -> tuple[Any, bool]:
    from jsonschema import Draft202012Validator

    if schema is None:
        return content, True
    try:
        output = json.loads(content)
    except ValueError:
        return None, False
    return output, Draft202012Validator(schema).is_valid(output)


def _local(request: Request) -> bool:
    return request.client is not None and request.client.host in LOOPBACK


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "code": status}}, status_code=status)


def create_app(home: Path) -> Starlette:
    gateway = Gateway(home)

    async def lifespan(app: Starlette) -> Any:
        task = asyncio.create_task(gateway.watch())
        yield
        task.cancel()
        gateway.log.flush()
        await gateway.http.aclose()

    app = Starlette(
        routes=[
            Route("/v1/prompts/{name}:run", gateway.run_prompt, methods=["POST"]),
            Route("/v1/chat/completions", gateway.passthrough, methods=["POST"]),
            Route("/v1/completions", gateway.passthrough, methods=["POST"]),
            Route("/v1/models", gateway.passthrough, methods=["GET"]),
            Route("/v1/feedback", gateway.feedback, methods=["POST"]),
            Route("/healthz", gateway.healthz),
            Route("/metrics", gateway.metrics_text),
            Route("/admin/reload", gateway.admin_reload, methods=["POST"]),
            Route("/admin/status", gateway.admin_status),
        ],
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    return app


def serve(home: Path, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Run the gateway until interrupted; its URL is written where rollouts look for it."""
    import uvicorn

    marker = state_dir(home) / GATEWAY_URL_FILE
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"http://{host}:{port}\n")
    try:
        uvicorn.run(create_app(Path(home)), host=host, port=port, log_level="warning", access_log=False)
    finally:
        marker.unlink(missing_ok=True)
