"""The gateway's one request pipeline, for prompt runs and the OpenAI API alike.

    authorize -> parse -> guard input -> admit -> upstream -> score (and re-ask) -> guard output -> journal

(parse also refuses, with a 503 and Retry-After, a request for a model whose server is down: health.py).

Each step is one method here and is timed into
`ai_platform_gateway_step_duration_seconds{step}` on /metrics. A route family
(`PromptRun`: `POST /v1/prompts/{name}:run`; `OpenAI`: `/v1/chat/completions` and
`/v1/completions`) only parses its body into a `Call` and shapes the answer; the
steps between are the same for both. A streamed reply is the same steps, with
score, guard output and journal run when the upstream's `[DONE]` arrives, before
it is relayed. A refusal at any step is a `GatewayRefusal`, answered in the
OpenAI error shape. A reply goes out only once its generation row is journaled
(on disk). Blocking work stays off the event loop: the journal's writes and fsyncs
run in its writer thread, and the detectors and the masking of stored inputs run in a
worker thread on texts longer than `OFF_LOOP_CHARS` (shorter ones take microseconds,
less than a thread hop).

A caller that leaves cancels its work: while a request waits on the model server,
one task (`Watch`) waits for the caller's `http.disconnect` and cancels the wait; a
streamed reply is cancelled by Starlette's own disconnect listener. Either way the
model server's connection is closed (vLLM aborts a request when its connection
closes), one log line says so, and the access log has the request as 499
(`ai_platform_gateway_cancelled_total`). A stream that loses its model server after
it started ends with an SSE error event (`data: {"error": {...}}`), then the end.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from ai_platform.detectors.injection import injection_score
from ai_platform.errors import CallerGone, GatewayRefusal, PlatformError, RequestBodyError, UpstreamError
from ai_platform.prompts.compiler import version_of
from ai_platform.prompts.render import check_reply, input_text, request_body
from ai_platform.serving.gateway import bodies
from ai_platform.serving.gateway.admission import Windows, too_large
from ai_platform.serving.gateway.generations import GenerationLog
from ai_platform.serving.gateway.guards import Action, check_input, check_leak, check_output, stored_input
from ai_platform.serving.gateway.health import Health
from ai_platform.serving.gateway.keys import KeyRing
from ai_platform.serving.gateway.metrics import Metrics
from ai_platform.serving.gateway.responses import error, error_event, refused
from ai_platform.serving.gateway.routing import Live, Rules
from ai_platform.serving.gateway.scoring import Answer, answer_of, score_reply
from ai_platform.serving.state import Color, ModelState
from ai_platform.serving.upstream import Upstream
from ai_platform.trust.rag import with_context
from ai_platform.warehouse import generation_row

LOG = logging.getLogger("ai_platform.gateway")
OFF_LOOP_CHARS = 4096  # a detector on a longer text (~ms of CPU) runs in a worker thread (a hop: ~0.1-0.2 ms)
T = TypeVar("T")
_TEXT_JSON = json.JSONEncoder(ensure_ascii=False).encode  # json.dumps(..., ensure_ascii=False), its encoder built once


@dataclass
class Call:
    """One request on its way through the pipeline, as its family parsed it."""

    request: Request
    state: ModelState
    color: Color  # the upstream the request started on: a switch meanwhile does not move it
    rules: Rules  # the model's admission and guards, validated when its state was loaded
    body: dict[str, Any]  # what goes to the model server
    path: str  # where on it
    user_text: str  # what the input guard and the trust model read
    input_bytes: int  # what admission weighs
    label: str  # generations.prompt_name and the reply metrics' prompt: the prompt, or `openai:<route>`
    variables: dict[str, Any]  # what generations.input keeps (through the spec's store_inputs)
    received: datetime
    started: float
    prompt: str | None = None  # guard_actions.prompt_name
    document: dict[str, Any] | None = None  # the prompt's document
    version: str = ""
    stream: bool = False
    injection: float = 0.0  # the input's score, once the input guard has it


@dataclass
class Outcome:
    """A scored, guarded and journaled reply."""

    scored: dict[str, Any]
    shown: str  # what the caller may see of it (masked where the PII guard masked or withheld it)
    pii: Action | None
    generation_id: str
    latency: float
    retrieved: list[str] = field(default_factory=list)
    leak: Action | None = None  # the prompt-leak guard's action

    @property
    def withheld(self) -> Action | None:
        """The guard action that withholds the reply (a block), if any."""
        return next((a for a in (self.pii, self.leak) if a is not None and a.action == "block"), None)

    @property
    def blocked(self) -> bool:
        return self.withheld is not None


class Family(Protocol):
    route: str  # guard_actions.route
    param: str  # the request field a refused input (or an input the model server refused) names
    reask: bool  # whether a low-trust reply is asked again with retrieved context

    def parse(self, live: Live, request: Request, raw: bytes, received: datetime, started: float) -> Call: ...

    def respond(self, call: Call, outcome: Outcome, data: dict[str, Any]) -> Response: ...


class Pipeline:
    def __init__(
        self,
        live: Live,
        metrics: Metrics,
        log: GenerationLog,
        upstream: Upstream,
        keys: KeyRing,
        windows: Windows,
        health: Health,
    ) -> None:
        self.live, self.metrics, self.log, self.upstream = live, metrics, log, upstream
        self.keys, self.windows, self.health = keys, windows, health

    def authorize(self, request: Request, scope: str) -> None:
        """The bearer key of `request`, if it has `scope`, as `request.state.key`; else KeyRefused."""
        with self.metrics.timed("authorize"):
            request.state.key = self.keys.authorize(request.headers.get("authorization"), scope)

    async def run(self, request: Request, family: Family) -> Response:
        received, started = datetime.now(UTC), time.perf_counter()
        call: Call | None = None
        try:
            with self.metrics.timed("parse"):
                if self.log.full:
                    raise GatewayRefusal(
                        503, "the gateway cannot log more replies until the warehouse takes its backlog; retry later"
                    )
                call = family.parse(self.live, request, await request.body(), received, started)
                self.health.require(call.state.model, call.color)  # a model whose server is down: 503 at once
                self.weigh(call, family)  # a request no window could ever admit: 413 at once, before the guards
            with self.metrics.timed("guard_input"):
                await self.guard_input(call, family)
            with self.metrics.timed("admit"):
                self.admit(call)
            if call.stream:
                return await self.stream(call, family)
            with self.metrics.timed("upstream"):
                data = await self.ask(call, call.body)
            with self.metrics.timed("score"):
                scored, retrieved = await self.score(call, family, answer_of(data))
            outcome = await self.finish(call, family, scored, retrieved)
            return family.respond(call, outcome, data)
        except GatewayRefusal as exc:
            return refused(exc)
        except UpstreamError as exc:
            return error(exc.status, str(exc), param=family.param if exc.status == 400 else None, headers=exc.headers)
        except CallerGone:
            assert call is not None
            self.caller_gone(call)
            return Response(status_code=CALLER_GONE)  # to no one: the access log's status

    def caller_gone(self, call: Call) -> None:
        """The caller left before its answer ended: the model server's call was cancelled (its connection closed);
        one log line, and the access log has the request as 499 (and counts it)."""
        call.request.state.cancelled = True
        LOG.info(
            "caller left: %s request for %s cancelled after %.3f s, its model server connection closed",
            "streamed" if call.stream else "a",
            call.state.model,
            time.perf_counter() - call.started,
        )

    async def guard_input(self, call: Call, family: Family) -> None:
        """The injection guard on the input; a refusal (block) is raised before admission: it costs no budget."""
        call.injection = await _cpu(injection_score, call.user_text, size=len(call.user_text))
        action = check_input(call.rules.guards, call.injection)
        if action is None:
            return
        await self.audit(call, family, action)
        if action.action == "block":
            message = f"the input was refused: {action.reason}"
            raise GatewayRefusal(400, message, param=family.param, code="prompt_injection")

    @staticmethod
    def asked(call: Call) -> int:
        """The max_tokens admission weighs: vLLM takes max_completion_tokens over max_tokens, so the one it will
        use (both are admitted at the same), else the spec's `serving.admission.max_tokens`."""
        body = call.body
        return int(body.get("max_completion_tokens") or body.get("max_tokens") or call.rules.admission.max_tokens)

    def weigh(self, call: Call, family: Family) -> None:
        """Refuse a request that no admission window could ever hold (admission.too_large): a 413 naming the
        limit and its weight; a 400 naming `max_tokens` (or `max_completion_tokens`) instead where an OpenAI
        caller asked for an output limit and its input alone would fit. Never a 429: retrying cannot help.
        Counted as `too_large`, not `rejected`: it says nothing of the model's load."""
        rules, body = call.rules.admission, call.body
        decision = too_large(rules, call.input_bytes, self.asked(call))
        if decision is None:
            return
        self.metrics.admission(call.state.model, decision.kind, decision.weight)
        LOG.info("admission: too large for %s: %s", call.state.model, decision.reason)
        param = "max_completion_tokens" if body.get("max_completion_tokens") else "max_tokens"
        # a prompt run's max_tokens is its prompt's or the spec's, not the caller's: only its input can shrink
        if family.route != "openai" or not body.get(param) or too_large(rules, call.input_bytes, 0) is not None:
            raise GatewayRefusal(413, decision.reason, param=family.param, code="request_too_large")
        raise GatewayRefusal(400, f"{decision.reason}; ask for fewer {param}", param=param, code="request_too_large")

    def admit(self, call: Call) -> None:
        """Weighted admission for the call's model and key: its max_tokens set (maybe lowered), or a 429 with
        Retry-After raised."""
        state, body, key = call.state, call.body, call.request.state.key.name
        rules = call.rules.admission
        asked = self.asked(call)
        decision = self.windows.admit(state.model, key, rules, call.input_bytes, asked)
        self.metrics.admission(state.model, decision.kind, decision.weight)
        if decision.kind == "rejected":
            LOG.info("admission: rejected %s for %s: %s", state.model, key, decision.reason)
            raise GatewayRefusal(
                429,
                f"{decision.reason}; retry in {decision.retry_after_s} s",
                code="rate_limit_exceeded",
                headers={"Retry-After": str(decision.retry_after_s)},
            )
        body["max_tokens"] = decision.max_tokens
        if body.get("max_completion_tokens") is not None:
            body["max_completion_tokens"] = decision.max_tokens
        call.request.state.admission = decision.kind

    async def ask(self, call: Call, body: dict[str, Any]) -> dict[str, Any]:
        """The upstream step: the model server's answer (counted in flight, which is what a rollout drains);
        CallerGone, its connection closed, when the caller leaves meanwhile."""
        self.metrics.enter(call.color.base_url)
        watch = Watch(call.request.receive)
        try:
            return await self.upstream.post(call.color, call.path, body)
        except asyncio.CancelledError:
            if watch.gone and watch.task.uncancel() == 0:  # cancelled by the watch alone, not by a shutdown
                raise CallerGone("the caller left") from None
            raise
        finally:
            watch.stop()
            self.metrics.leave(call.color.base_url)

    async def score(self, call: Call, family: Family, answer: Answer) -> tuple[dict[str, Any], list[str]]:
        """The reply checked and scored; a low-trust one asked again with the clauses the retrieval corpus finds
        relevant (the article's review-and-retrieve step): the better-trusted reply stands, and the clauses
        travel with it for the reviewer."""
        scored = await self._scored(call, answer)
        retriever = self.live.retrievers.get(call.state.retrieval_corpus) if family.reask else None
        if not scored["needs_review"] or retriever is None or not (retrieved := retriever.retrieve(call.user_text)):
            return scored, []
        retry = {**call.body, "messages": with_context(call.body["messages"], retrieved)}
        first = scored["trust_score"]
        try:
            rescored = await self._scored(call, answer_of(await self.ask(call, retry)))
            if (rescored["trust_score"] or 0) > (first or 0):
                scored = rescored
            outcome = "improved" if scored is rescored else "not_improved"
        except UpstreamError as exc:
            outcome = f"re-ask failed: {exc}"  # the first reply stands, marked needs_review
        retrieval = {"clauses": retrieved, "outcome": outcome, "first_trust_score": first}
        scored["metrics"] = {**scored["metrics"], "retrieval": retrieval}
        return scored, retrieved

    async def _scored(self, call: Call, answer: Answer) -> dict[str, Any]:
        schema = call.document["output_schema"] if call.document else None
        latency, trust = time.perf_counter() - call.started, self.live.trust.get(call.state.model)
        retriever = self.live.retrievers.get(call.state.retrieval_corpus)  # its clause kinds: trust features
        return await _cpu(
            lambda: score_reply(
                call.state,
                schema,
                answer,
                call.user_text,
                call.injection,
                latency,
                trust,
                call.rules.guards.phone_regions,
                retriever.index if retriever and trust else None,
            ),
            size=len(answer.content) + (len(call.user_text) if retriever and trust else 0),
        )

    async def finish(
        self, call: Call, family: Family, scored: dict[str, Any], retrieved: list[str] | None = None
    ) -> Outcome:
        """Guard the output and journal the generation: the row is on disk before the reply goes out."""
        with self.metrics.timed("guard_output"):
            shown, pii = check_output(call.rules.guards, scored["content"], scored["found"])
            if pii:
                await self.audit(call, family, pii)
            leak = await _cpu(
                check_leak, call.rules.guards, call.document, call.version, scored["content"], size=len(shown)
            )
            if leak:
                self.metrics.leaks.labels(call.state.model, call.label).inc()
                await self.audit(call, family, leak)
        self.metrics.reply(call.state.model, call.label, scored)
        with self.metrics.timed("journal"):
            generation_id = call.request.state.generation_id = f"gen-{uuid.uuid4().hex}"
            latency = time.perf_counter() - call.started
            row = await _cpu(self._row, call, generation_id, shown, scored, latency, size=len(call.user_text))
            await self.log.add_async(call.state.warehouse, row)  # returns once the fsync that covers it is done
        return Outcome(scored, shown, pii, generation_id, latency, retrieved or [], leak)

    def _row(self, call: Call, generation_id: str, shown: str, scored: dict[str, Any], latency: float) -> list[Any]:
        return generation_row(
            generation_id=generation_id,
            model=call.state.model,
            prompt_name=call.label,
            prompt_version=call.version,
            image_digest=call.color.image,
            source="gateway",
            input=stored_input(call.rules.guards, call.variables),
            output=shown,
            metrics=_TEXT_JSON(scored["metrics"]),
            finish_reason=scored["finish_reason"],
            latency_s=latency,
            trust_score=scored["trust_score"],
            needs_review=scored["needs_review"],
            created_at=call.received,
        )

    async def audit(self, call: Call, family: Family, action: Action) -> None:
        """One guard_actions row (naming the caller's key) and one count on /metrics for an action a guard took."""
        model = call.state.model
        self.metrics.guard(model, action.guard, action.action)
        LOG.info("guard %s %s on %s: %s", action.guard, action.action, model, action.reason)
        key = call.request.state.key.name
        row = action.row(at=call.received, key=key, model=model, prompt=call.prompt, route=family.route)
        await self.log.add_async(call.state.warehouse, row, "guard_actions")

    async def stream(self, call: Call, family: Family) -> Response:
        """The upstream step, streamed: each line relayed as it comes and its text collected; at `[DONE]` the
        reply is scored, guarded and journaled before `[DONE]` goes out. The PII guard can only record a
        streamed reply (its text has reached the caller already); so could the prompt-leak guard, but only prompt
        runs have a compiled system prompt, and they are not streamed."""
        base, started = call.color.base_url, time.perf_counter()
        self.metrics.enter(base)
        try:
            reply = await self.upstream.open_stream(call.color, call.path, call.body)
        except UpstreamError:
            self.metrics.leave(base)
            raise

        async def relay() -> AsyncIterator[bytes]:
            parts: list[str] = []
            finish: str | None = None
            usage: dict[str, Any] = {}
            try:
                async for line in reply.aiter_lines():
                    if line.strip() == "data: [DONE]":
                        self.metrics.steps["upstream"].observe(time.perf_counter() - started)
                        with self.metrics.timed("score"):
                            scored, _ = await self.score(call, family, Answer("".join(parts), finish, usage))
                        await self.finish(call, family, scored)
                    elif line.startswith("data: "):
                        try:
                            event = json.loads(line[6:])
                            choice = event["choices"][0] if event.get("choices") else {}
                            usage = event.get("usage") or usage
                        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
                            choice = {}
                        parts.append((choice.get("delta") or {}).get("content") or choice.get("text") or "")
                        finish = choice.get("finish_reason") or finish
                    yield (line + "\n").encode("utf-8")
            except UpstreamError as exc:  # lost after the stream started: an error event, then the end
                yield error_event(exc.status, str(exc))
            except (asyncio.CancelledError, GeneratorExit):  # the caller left (Starlette cancels, or closes, us)
                self.caller_gone(call)
                raise
            finally:
                await reply.aclose()  # cut short: its connection is closed, and vLLM aborts the generation
                self.metrics.leave(base)

        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        return Relay(relay(), status_code=200, headers=headers)


CALLER_GONE = 499  # nginx's status for a request whose caller closed the connection first


class Watch:
    """While the current task waits on the model server, one task waits for the caller's `http.disconnect` and
    cancels it (`gone` says why it was cancelled). One task, and only while the model server is asked."""

    __slots__ = ("gone", "task", "watcher")

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.task, self.gone = task, False
        self.watcher = asyncio.get_running_loop().create_task(self._watch(receive))

    async def _watch(self, receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":  # the body was read: nothing else comes but that
            pass
        self.gone = True
        self.task.cancel()

    def stop(self) -> None:
        self.watcher.cancel()


class Relay(StreamingResponse):
    """A streamed reply whose relay is closed however the response ends: a caller that leaves while a line is
    being sent leaves the relay waiting at a `yield`, where Starlette's cancellation does not reach it."""

    def __init__(self, relay: AsyncIterator[bytes], status_code: int, headers: dict[str, str]) -> None:
        super().__init__(relay, status_code=status_code, headers=headers)
        self.relay = relay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self.relay, "aclose", None)
            if aclose is not None:
                await aclose()


async def _cpu(work: Callable[..., T], *args: Any, size: int) -> T:
    """`work(*args)`, in a worker thread when its text is long (`size` characters), else right here."""
    return await asyncio.to_thread(work, *args) if size > OFF_LOOP_CHARS else work(*args)


class PromptRun:
    """`POST /v1/prompts/{name}:run`: variables in; the rendered prompt to its live model; validated JSON out,
    with a generation id and a trust score."""

    route, param, reask = "prompt", "variables", True

    def parse(self, live: Live, request: Request, raw: bytes, received: datetime, started: float) -> Call:
        name = request.path_params["name"]
        try:
            payload = bodies.json_body(raw, '{"variables": {...}}')
        except RequestBodyError as exc:
            raise GatewayRefusal(400, str(exc)) from None
        if not isinstance(payload, dict) or not isinstance(payload.get("variables", {}), dict):
            raise GatewayRefusal(400, 'the body must be an object with "variables" as an object')
        if not isinstance(payload.get("model"), str | None):
            raise GatewayRefusal(400, f"model: must be a string (got {payload['model']!r:.60})", param="model")
        state, document = live.prompt(name, payload.get("model"))
        request.state.model = state.model
        variables = payload.get("variables", {})
        try:
            body = request_body(document, variables, model=state.model)
        except PlatformError as exc:
            raise GatewayRefusal(422, str(exc)) from None
        body["logprobs"] = True  # the mean token log-probability is a trust-model feature
        assert state.live is not None
        return Call(
            request,
            state,
            state.live,
            live.rules_for(state),
            body,
            "/v1/chat/completions",
            input_text(document, variables),  # unmarked: the guards read what the caller sent
            sum(len(m["content"].encode("utf-8")) for m in body["messages"]),
            name,
            variables,
            received,
            started,
            prompt=name,
            document=document,
            version=version_of(document),
        )

    def respond(self, call: Call, outcome: Outcome, data: dict[str, Any]) -> Response:
        assert call.document is not None
        scored, blocked = outcome.scored, outcome.blocked
        valid, output = (False, None) if blocked else check_reply(outcome.shown, call.document["output_schema"])
        result = {
            "generation_id": outcome.generation_id,
            "prompt": call.prompt,
            "prompt_version": call.version,
            "model": call.state.model,
            "image": call.color.image,
            "output": output,
            "schema_valid": valid,
            "trust_score": scored["trust_score"],
            "needs_review": scored["needs_review"],
            "finish_reason": "content_filter" if blocked else scored["finish_reason"],
            "latency_s": round(outcome.latency, 4),
        }
        if outcome.retrieved:  # what a reviewer needs beside a low-trust reply: the clauses it was (re-)asked with
            result["retrieval"] = scored["metrics"]["retrieval"]
        if outcome.withheld:
            result["error"] = f"the reply was withheld: {outcome.withheld.reason}"
        elif not valid:
            result["error"] = "the reply does not validate against the prompt's output schema"
            result["raw_output"] = outcome.shown
        status = 200 if valid or blocked else 502
        return JSONResponse(result, status_code=status, headers={"X-Admission": call.request.state.admission})


class OpenAI:
    """`POST /v1/chat/completions` and `/v1/completions`: OpenAI's API, passed through to the live model."""

    route, param, reask = "openai", "messages", False

    def parse(self, live: Live, request: Request, raw: bytes, received: datetime, started: float) -> Call:
        path = request.scope["path"]  # a route's own (request.url.path would build the whole URL to say so)
        chat = path.endswith("/chat/completions")
        try:
            payload = bodies.json_body(raw)
            if not isinstance(payload, dict):
                raise GatewayRefusal(400, f"the body must be a JSON object, not {type(payload).__name__}")
            bodies.openai_request(payload, chat)
        except RequestBodyError as exc:
            raise GatewayRefusal(400, str(exc), param=exc.param) from None
        state = live.model(payload.get("model"))
        request.state.model = state.model
        assert state.live is not None
        user_text = bodies.input_text(payload, chat)
        asked = payload.get("messages" if chat else "prompt")
        return Call(
            request,
            state,
            state.live,
            live.rules_for(state),
            payload,
            path,
            user_text,
            len(_TEXT_JSON(asked).encode()),
            "openai:" + path.removeprefix("/v1/"),
            {"input": user_text},
            received,
            started,
            stream=bool(payload.get("stream")),
        )

    def respond(self, call: Call, outcome: Outcome, data: dict[str, Any]) -> Response:
        choice = data["choices"][0]
        shown = outcome.shown
        if outcome.blocked:  # withheld by a guard
            choice["finish_reason"] = "content_filter"
            shown = ""
        if "message" in choice:
            choice["message"]["content"] = shown
        else:
            choice["text"] = shown
        return JSONResponse(data, headers={"X-Admission": call.request.state.admission})
