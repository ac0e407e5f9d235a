"""The gateway: the one front door to every live model, and where blue/green switches happen.

    POST /v1/prompts/{name}:run   variables in; validated JSON out, with a generation_id and a trust score
    POST /v1/feedback             a reviewer's label, into the inbox the feedback sensor watches
    /v1/chat/completions, /v1/completions, /v1/models    OpenAI-compatible passthrough
    GET  /healthz                 the gateway and each live upstream
    GET  /metrics                 Prometheus text format
    (every request: one JSON line in the access log, its count and latency on /metrics)
    POST /admin/reload            re-read the rollout state now (admin key)
    GET  /admin/status            upstreams and their in-flight requests (admin key)

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
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ai_platform.artifacts import atomic_write
from ai_platform.config import Admission
from ai_platform.errors import PlatformError, RequestBodyError
from ai_platform.evaluation.client import upstream_headers
from ai_platform.evaluation.injection import injection_score
from ai_platform.oci.layout import OciLayout
from ai_platform.oci.store import RegistryStore
from ai_platform.prompts import bundle
from ai_platform.prompts.compiler import version_of
from ai_platform.prompts.render import check_reply, request_body
from ai_platform.serving.gateway import bodies
from ai_platform.serving.gateway.access import ACCESS, AccessLog
from ai_platform.serving.gateway.admission import Windows
from ai_platform.serving.gateway.generations import GenerationLog
from ai_platform.serving.gateway.guards import Action, check_input, check_output, policy, stored_input
from ai_platform.serving.gateway.journal import Journal
from ai_platform.serving.gateway.keys import KeyRing, Refused, new_key
from ai_platform.serving.gateway.labels import accept_label, append_label
from ai_platform.serving.gateway.metrics import CONTENT_TYPE, Metrics
from ai_platform.serving.gateway.scoring import TrustChampions, score_reply
from ai_platform.serving.state import (
    ADMIN_KEY_FILE,
    GATEWAY_URL_FILE,
    Color,
    ModelState,
    load_all,
    load_from,
    state_dir,
)
from ai_platform.trust.model import TrustModel
from ai_platform.trust.rag import KeywordRetriever, with_context

LOG = logging.getLogger("ai_platform.gateway")
Handler = Callable[[Request], Awaitable[Response]]


class Gateway:
    def __init__(
        self,
        home: Path,
        keys_file: Path | None = None,
        local_admin: str | None = None,
        states_from: RegistryStore | None = None,
    ) -> None:
        self.home = Path(home)
        # Where the rollout states are: files under the home (this machine's rollouts), or, in a cluster, the
        # artifact store in the registry, with each prompt bundle pulled from it by digest
        self.states_from = states_from
        self.states: dict[str, ModelState] = {}
        self.bundles: dict[str, dict[str, dict[str, Any]]] = {}  # digest -> prompt name -> document
        self.metrics = Metrics()
        self.trust: dict[str, TrustModel | None] = {}  # model -> champion trust model
        self.champions = TrustChampions()
        self.retrievers: dict[str, KeywordRetriever] = {}
        self.log = GenerationLog(self.metrics, Journal(self.home / "gateway" / "journal"))
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(300.0, connect=5.0), headers=upstream_headers())
        self.keys_file = keys_file  # given to `ai-platform serve`; else what the rollout states name
        self.keys = KeyRing(keys_file or default_keys_file(self.home), local_admin)
        self.windows = Windows()
        self.reload()

    def _configure(self, states: dict[str, ModelState]) -> None:
        """Follow platform.yaml's gateway settings as the latest rollout states carry them: a gateway that
        started before the first rollout picks up the key file and the window storage then."""
        named = next((Path(s.keys_file) for s in states.values() if s.keys_file), None)
        self.keys.path = self.keys_file or named or default_keys_file(self.home)
        storage = next((s.window_storage for s in states.values() if s.window_storage), "memory://")
        if storage != self.windows.storage_uri:
            self.windows = Windows(storage)

    def admit(self, request: Request, state: ModelState, body: dict[str, Any], input_bytes: int) -> Response | None:
        """Weighted admission for one request to `state`'s model: None when admitted (its max_tokens set, maybe
        lowered); else the 429 to answer, with Retry-After."""
        policy = Admission.model_validate(state.admission)
        # vLLM takes max_completion_tokens over max_tokens: weigh the one it will use, and admit both at the same
        asked = body.get("max_completion_tokens") or body.get("max_tokens") or policy.max_tokens
        decision = self.windows.admit(state.model, request.state.key.name, policy, input_bytes, asked)
        self.metrics.admission(state.model, decision.kind, decision.weight)
        if decision.kind == "rejected":
            LOG.info("admission: rejected %s for %s: %s", state.model, request.state.key.name, decision.reason)
            headers = {"Retry-After": str(decision.retry_after_s)}
            return _error(
                429,
                f"{decision.reason}; retry in {decision.retry_after_s} s",
                code="rate_limit_exceeded",
                headers=headers,
            )
        body["max_tokens"] = decision.max_tokens
        if body.get("max_completion_tokens") is not None:
            body["max_completion_tokens"] = decision.max_tokens
        request.state.admission = decision.kind
        return None

    def requires(self, scope: str, handler: Handler) -> Handler:
        """`handler`, for requests whose bearer key has `scope`; the key is `request.state.key`."""

        async def endpoint(request: Request) -> Response:
            try:
                request.state.key = self.keys.authorize(request.headers.get("authorization"), scope)
            except Refused as exc:
                code = "invalid_api_key" if exc.status == 401 else "insufficient_scope"
                challenge = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
                return _error(exc.status, str(exc), code=code, headers=challenge)
            return await handler(request)

        return endpoint

    def reload(self) -> dict[str, str]:
        states = load_from(self.states_from) if self.states_from else load_all(self.home)
        before = {m: s.live.base_url for m, s in self.states.items() if s.live}
        after = {m: s.live.base_url for m, s in states.items() if s.live}
        for state in states.values():
            if state.live and state.live.bundle not in self.bundles:
                where = state.live.bundle_layout  # a folder here; `HOST/REPO@sha256:…` in a cluster
                layout = self.states_from.fetch(where) if self.states_from else OciLayout(where)
                self.bundles[state.live.bundle] = bundle.load(layout, state.live.bundle)
        self.metrics.switched(sum(before.get(m) != url for m, url in after.items()))
        for state in states.values():
            self.trust[state.model] = self.champions.champion(state.warehouse, state.model)
            if state.retrieval_corpus and state.retrieval_corpus not in self.retrievers:
                self.retrievers[state.retrieval_corpus] = KeywordRetriever(Path(state.retrieval_corpus))
        self.states = states
        self._configure(states)
        self.metrics.track(states)
        return after

    def prompt(self, name: str, model: str | None) -> tuple[ModelState, dict[str, Any]]:
        hits = [
            (s, self.bundles[s.live.bundle][name])
            for m, s in self.states.items()
            if s.live and name in self.bundles.get(s.live.bundle, {}) and model in (None, m)
        ]
        if not hits:
            raise LookupError(f"no live model serves prompt {name!r}")
        if len(hits) > 1:
            raise LookupError(f'prompt {name!r} is served by several models; name one with "model"')
        return hits[0]

    async def run_prompt(self, request: Request) -> Response:
        started, received = time.perf_counter(), datetime.now(UTC)
        name = request.path_params["name"]
        if self.log.full:
            return _error(503, "the gateway cannot log more replies until the warehouse takes its backlog; retry later")
        try:
            payload = bodies.json_body(await request.body(), '{"variables": {...}}')
        except RequestBodyError as exc:
            return _error(400, str(exc))
        if not isinstance(payload, dict) or not isinstance(payload.get("variables", {}), dict):
            return _error(400, 'the body must be an object with "variables" as an object')
        if not isinstance(payload.get("model"), str | None):
            return _error(400, f"model: must be a string (got {payload['model']!r:.60})", param="model")
        try:
            state, document = self.prompt(name, payload.get("model"))
        except LookupError as exc:
            return _error(404, str(exc))
        request.state.model = state.model
        try:
            body = request_body(document, payload.get("variables", {}), model=state.model)
        except PlatformError as exc:
            return _error(422, str(exc))
        upstream = state.live
        assert upstream is not None
        guards = policy(state.guards)
        user_text = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        if refusal := await self._guard_input(request, state, name, "prompt", user_text, received):
            return refusal
        input_bytes = sum(len(m["content"].encode("utf-8")) for m in body["messages"])
        if refusal := self.admit(request, state, body, input_bytes):
            return refusal
        body["logprobs"] = True  # the mean token log-probability is a trust-model feature
        try:
            choice, usage = await self._complete(upstream, body)
        except _UpstreamError as exc:
            return _error(exc.status, str(exc), param="variables" if exc.status == 400 else None)
        scored = score_reply(
            state, document, choice, usage, user_text, time.perf_counter() - started, self.trust.get(state.model)
        )
        retrieved: list[str] = []
        retriever = self.retrievers.get(state.retrieval_corpus)
        if scored["needs_review"] and retriever is not None and (retrieved := retriever.retrieve(user_text)):
            # The article's review-and-retrieve step: ask again with the clauses the corpus finds relevant;
            # the better-trusted reply stands, and the clauses travel with it for the reviewer.
            retry = {**body, "messages": with_context(body["messages"], retrieved)}
            first = scored["trust_score"]
            try:
                again = await self._complete(upstream, retry)
                rescored = score_reply(
                    state, document, *again, user_text, time.perf_counter() - started, self.trust.get(state.model)
                )
                if (rescored["trust_score"] or 0) > (first or 0):
                    scored = rescored
                outcome = "improved" if scored is rescored else "not_improved"
            except _UpstreamError as exc:
                outcome = f"re-ask failed: {exc}"  # the first reply stands, marked needs_review
            scored["metrics"] = {
                **scored["metrics"],
                "retrieval": {"clauses": retrieved, "outcome": outcome, "first_trust_score": first},
            }
        shown, pii = check_output(guards, scored["content"])
        if pii:
            await self._audit(request, state, name, "prompt", pii, received)
        blocked = pii is not None and pii.action == "block"
        valid, output = (False, None) if blocked else check_reply(shown, document["output_schema"])
        latency = time.perf_counter() - started
        self.metrics.reply(state.model, name, scored)
        generation_id = request.state.generation_id = f"gen-{uuid.uuid4().hex}"
        version = version_of(document)
        variables = stored_input(guards, payload.get("variables", {}))
        row = [
            generation_id,
            state.model,
            name,
            version,
            upstream.image,
            "gateway",
            variables,
            shown,  # masked where the PII guard masked or withheld it
            json.dumps(scored["metrics"], ensure_ascii=False),
            scored["finish_reason"],
            latency,
            scored["trust_score"],
            scored["needs_review"],
            received,
        ]
        await asyncio.to_thread(self.log.add, state.warehouse, row)  # on disk before the reply goes out
        status = 200 if valid or blocked else 502
        result = {
            "generation_id": generation_id,
            "prompt": name,
            "prompt_version": version,
            "model": state.model,
            "image": upstream.image,
            "output": output,
            "schema_valid": valid,
            "trust_score": scored["trust_score"],
            "needs_review": scored["needs_review"],
            "finish_reason": "content_filter" if blocked else scored["finish_reason"],
            "latency_s": round(latency, 4),
        }
        if retrieved:  # what a reviewer needs beside a low-trust reply: the clauses it was (re-)asked with
            result["retrieval"] = scored["metrics"]["retrieval"]
        if blocked and pii:
            result["error"] = f"the reply was withheld: {pii.reason}"
        elif not valid:
            result["error"] = "the reply does not validate against the prompt's output schema"
            result["raw_output"] = shown
        return JSONResponse(result, status_code=status, headers={"X-Admission": request.state.admission})

    async def _guard_input(
        self,
        request: Request,
        state: ModelState,
        prompt: str | None,
        route: str,
        user_text: str,
        received: datetime,
    ) -> Response | None:
        """The injection guard on a request's input: None to go on, else the 400 that refuses it."""
        refused = check_input(policy(state.guards), injection_score(user_text))
        if refused is None:
            return None
        await self._audit(request, state, prompt, route, refused, received)
        if refused.action != "block":
            return None
        param = "variables" if route == "prompt" else "messages"
        return _error(400, f"the input was refused: {refused.reason}", param=param, code="prompt_injection")

    async def _audit(
        self, request: Request, state: ModelState, prompt: str | None, route: str, action: Action, at: datetime
    ) -> None:
        """One guard_actions row (naming the caller's key) and one count on /metrics for an action a guard took."""
        self.metrics.guard(state.model, action.guard, action.action)
        LOG.info("guard %s %s on %s: %s", action.guard, action.action, state.model, action.reason)
        row = action.row(at=at, key=request.state.key.name, model=state.model, prompt=prompt, route=route)
        await asyncio.to_thread(self.log.add, state.warehouse, row, "guard_actions")

    async def _complete(self, upstream: Color, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        self.metrics.enter(upstream.base_url)
        try:
            reply = await self.http.post(f"{upstream.base_url}/v1/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise _unreachable(upstream, exc) from None
        finally:
            self.metrics.leave(upstream.base_url)
        if reply.status_code != 200:
            raise _failed(upstream, reply)
        data = reply.json()
        return data["choices"][0], data.get("usage") or {}

    async def feedback(self, request: Request) -> Response:
        """A reviewer's label, dropped into the inbox the feedback sensor watches (same validation as a file)."""
        try:
            label = bodies.json_body(await request.body())
        except RequestBodyError as exc:
            return _error(400, str(exc))
        if isinstance(label, dict):
            label = {**label, "reviewer": request.state.key.name}  # the key names the reviewer, not the body
        row, problem = accept_label(label)
        if row is None:
            return _error(422, problem or "")
        known = [s for s in self.states.values() if s.inbox]
        if not known:
            return _error(503, "no inbox is configured (nothing has been rolled out yet)")
        inbox = Path(known[0].inbox)
        await asyncio.to_thread(append_label, inbox, row)
        return JSONResponse({"accepted": True, "inbox": str(inbox)}, status_code=202)

    async def passthrough(self, request: Request) -> Response:
        started = time.perf_counter()
        chat = request.url.path.endswith("/chat/completions")
        try:
            payload = bodies.json_body(await request.body())
            if not isinstance(payload, dict):
                return _error(400, f"the body must be a JSON object, not {type(payload).__name__}")
            bodies.openai_request(payload, chat)
        except RequestBodyError as exc:
            return _error(400, str(exc), param=exc.param)
        model = payload.get("model")
        serving = sorted(m for m, s in self.states.items() if s.live)
        live = [s for s in self.states.values() if s.live and model in (None, s.model)]
        if not live:
            return _error(
                404,
                f"the model {model!r} is not served here (live: {', '.join(serving) or 'none'})",
                param="model",
                code="model_not_found",
            )
        if len(live) > 1:
            return _error(400, f"several models are live; name one with 'model' ({', '.join(serving)})", param="model")
        upstream = live[0].live
        assert upstream is not None
        asked = payload.get("messages" if chat else "prompt")
        state = live[0]
        request.state.model = state.model
        received = datetime.now(UTC)
        user_text = bodies.input_text(payload, chat)
        if refusal := await self._guard_input(request, state, None, "openai", user_text, received):
            return refusal  # before admission, as for prompt runs: a refused input costs no budget
        if refusal := self.admit(request, state, payload, len(json.dumps(asked, ensure_ascii=False).encode())):
            return refusal
        route = "openai:" + request.url.path.removeprefix("/v1/")
        if payload.get("stream"):
            return await self._stream(request, state, payload, route, user_text, received, started)
        self.metrics.enter(upstream.base_url)
        try:
            reply = await self.http.post(f"{upstream.base_url}{request.url.path}", json=payload)
        except httpx.HTTPError as exc:
            return _unreachable(upstream, exc).response()
        finally:
            self.metrics.leave(upstream.base_url)
        if reply.status_code != 200:
            failure = _failed(upstream, reply)
            return failure.response()
        data = reply.json()
        choice = data["choices"][0]
        content = (choice.get("message") or {}).get("content") if "message" in choice else choice.get("text")
        shown = await self._log_passthrough(
            request, state, route, user_text, content or "", choice.get("finish_reason"), data, received, started
        )
        if shown is None:  # withheld by the PII guard
            choice["finish_reason"] = "content_filter"
            shown = ""
        if "message" in choice:
            choice["message"]["content"] = shown
        else:
            choice["text"] = shown
        return JSONResponse(data, headers={"X-Admission": request.state.admission})

    async def _log_passthrough(
        self,
        request: Request,
        state: ModelState,
        route: str,
        user_text: str,
        content: str,
        finish_reason: str | None,
        data: dict[str, Any],
        received: datetime,
        started: float,
    ) -> str | None:
        """Score, guard and journal one OpenAI-API reply; what the caller may see (None: withheld)."""
        guards = policy(state.guards)
        choice = {"message": {"content": content}, "finish_reason": finish_reason}
        latency = time.perf_counter() - started
        scored = score_reply(
            state,
            {"output_schema": None},
            choice,
            data.get("usage") or {},
            user_text,
            latency,
            self.trust.get(state.model),
        )
        shown, pii = check_output(guards, content)
        if pii:
            await self._audit(request, state, None, "openai", pii, received)
        self.metrics.reply(state.model, route, scored)
        assert state.live is not None
        request.state.generation_id = f"gen-{uuid.uuid4().hex}"
        row = [
            request.state.generation_id,
            state.model,
            route,
            "",
            state.live.image,
            "gateway",
            stored_input(guards, {"input": user_text}),
            shown,
            json.dumps(scored["metrics"], ensure_ascii=False),
            finish_reason,
            latency,
            scored["trust_score"],
            scored["needs_review"],
            received,
        ]
        await asyncio.to_thread(self.log.add, state.warehouse, row)  # on disk before the reply goes out
        return None if pii is not None and pii.action == "block" else shown

    async def _stream(
        self,
        request: Request,
        state: ModelState,
        payload: dict[str, Any],
        route: str,
        user_text: str,
        received: datetime,
        started: float,
    ) -> Response:
        """Relay a streamed reply as it comes, collecting its text; the final `[DONE]` waits until it is journaled.
        The PII guard can only record a streamed reply (its text has reached the caller already)."""
        upstream = state.live
        assert upstream is not None
        self.metrics.enter(upstream.base_url)
        outgoing = self.http.build_request("POST", f"{upstream.base_url}{request.url.path}", json=payload)
        try:
            reply = await self.http.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            self.metrics.leave(upstream.base_url)
            return _unreachable(upstream, exc).response()
        if reply.status_code != 200:
            await reply.aread()
            await reply.aclose()
            self.metrics.leave(upstream.base_url)
            return _failed(upstream, reply).response()

        async def relay() -> AsyncIterator[bytes]:
            parts: list[str] = []
            finish: str | None = None
            try:
                async for line in reply.aiter_lines():
                    if line.strip() == "data: [DONE]":
                        await self._log_passthrough(
                            request, state, route, user_text, "".join(parts), finish, {}, received, started
                        )
                    elif line.startswith("data: "):
                        try:
                            event = json.loads(line[6:])
                            choice = event["choices"][0] if event.get("choices") else {}
                        except ValueError:
                            choice = {}
                        parts.append((choice.get("delta") or {}).get("content") or choice.get("text") or "")
                        finish = choice.get("finish_reason") or finish
                    yield (line + "\n").encode("utf-8")
            finally:
                await reply.aclose()
                self.metrics.leave(upstream.base_url)

        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        return StreamingResponse(relay(), status_code=200, headers=headers)

    async def models(self, request: Request) -> Response:
        """GET /v1/models: every live model, as OpenAI lists models."""
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "ai-platform"}
            for m, s in sorted(self.states.items())
            if s.live
        ]
        return JSONResponse({"object": "list", "data": data})

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


class _UpstreamError(Exception):
    """The model server failed a request; `status` is what the caller gets (400: the request's fault)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def response(self) -> JSONResponse:
        return _error(self.status, str(self), param="messages" if self.status == 400 else None)


def _unreachable(upstream: Color, exc: Exception) -> _UpstreamError:
    """The model server could not be reached: logged with where it runs, told to the caller without."""
    LOG.warning("upstream %s (%s) unreachable: %s", upstream.color, upstream.base_url, type(exc).__name__)
    return _UpstreamError(502, "the model server is unreachable; try again")


def _failed(upstream: Color, reply: httpx.Response) -> _UpstreamError:
    """The model server refused (a 4xx: the request's fault, e.g. an input over the context length, its
    message passed on) or failed (a 5xx: a 502 that says nothing of the server)."""
    LOG.warning("upstream %s answered HTTP %d: %s", upstream.color, reply.status_code, reply.text[:500])
    if 400 <= reply.status_code < 500:
        return _UpstreamError(400, _upstream_message(reply))
    return _UpstreamError(502, f"the model server failed (HTTP {reply.status_code}); try again")


def _upstream_message(reply: httpx.Response) -> str:
    """The upstream's own explanation of a refused request (vLLM's error shape), without where it runs."""
    try:
        error = reply.json().get("error") or {}
        message = error.get("message") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        message = None
    return str(message or f"the model server refused the request (HTTP {reply.status_code})")


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable",
}


def _error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An error in the OpenAI API's shape: message, type, param, code."""
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status, headers=headers)


def default_keys_file(home: Path) -> Path:
    """Where the keys are when no rollout state names platform.yaml's gateway.keys yet."""
    return Path(home) / "gateway" / "keys.json"


def create_app(home: Path, keys_file: Path | None = None, states_from: RegistryStore | None = None) -> Starlette:
    """The gateway app; it writes a fresh local admin key (owner-only) for rollouts on this machine."""
    local_admin = new_key()
    admin_file = state_dir(home) / ADMIN_KEY_FILE
    atomic_write(admin_file, local_admin.encode())
    os.chmod(admin_file, 0o600)
    gateway = Gateway(home, keys_file, local_admin, states_from)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(gateway.watch())
        yield
        task.cancel()
        gateway.log.flush()
        if gateway.log.journal:
            gateway.log.journal.close()  # what is still unwritten stays journaled for the next start
        await gateway.http.aclose()

    app = Starlette(
        routes=[
            Route("/v1/prompts/{name}:run", gateway.requires("invoke", gateway.run_prompt), methods=["POST"]),
            Route("/v1/chat/completions", gateway.requires("invoke", gateway.passthrough), methods=["POST"]),
            Route("/v1/completions", gateway.requires("invoke", gateway.passthrough), methods=["POST"]),
            Route("/v1/models", gateway.requires("invoke", gateway.models), methods=["GET"]),
            Route("/v1/feedback", gateway.requires("label", gateway.feedback), methods=["POST"]),
            Route("/healthz", gateway.healthz),
            Route("/metrics", gateway.metrics_text),
            Route("/admin/reload", gateway.requires("admin", gateway.admin_reload), methods=["POST"]),
            Route("/admin/status", gateway.requires("admin", gateway.admin_status)),
        ],
        middleware=[Middleware(AccessLog, metrics=gateway.metrics)],
        lifespan=lifespan,
    )
    app.state.gateway = gateway
    return app


def serve(home: Path, host: str = "127.0.0.1", port: int = 8080, states_from: str | None = None) -> None:
    """Run the gateway until interrupted; its URL is written where rollouts look for it. `states_from`, a
    registry URL (platform.yaml's registry.url), makes it follow a cluster's rollouts kept there."""
    import uvicorn

    marker = state_dir(home) / GATEWAY_URL_FILE
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"http://{host}:{port}\n")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    access = logging.StreamHandler()  # one JSON object per line, nothing around it
    ACCESS.addHandler(access)
    ACCESS.propagate = False
    try:
        store = RegistryStore(states_from, Path(home) / "artifacts") if states_from else None
        app = create_app(Path(home), states_from=store)
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        marker.unlink(missing_ok=True)
