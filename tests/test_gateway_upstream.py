"""The gateway and its model servers' connections (issue 30): a caller that leaves cancels its work (the model
server sees its connection close), a failure before any byte of an answer is tried once more on a fresh
connection, an unreachable server is a 503 to retry, a stream that loses its server ends with an error event,
kept-alive connections follow a release switch behind one Service address, and a stopped gateway drains for a
bounded time. Real servers throughout: the gateway on a port, stand-in model servers (tests/slow_upstream.py)
behind, where it matters, a conntrack proxy (tests/conntrack.py); one test against the session's real vLLM."""

from __future__ import annotations

import json
import logging
import re
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conntrack import conntrack
from gateway_harness import MODEL, api_key, roll_out, served
from gateway_process import start
from slow_upstream import LoopThread, SlowUpstream, slow_upstream

from ai_platform.serving.state import ADMIN_KEY_FILE, state_dir

CHAT = "/v1/chat/completions"
UNLIMITED = {"budget": 1_000_000, "key_share": 1.0}  # admission out of the way of eight busy callers


def body(stream: bool = False, model: str = MODEL, **more: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "Review: x"}], "stream": stream, **more}


def wait_until(condition: Callable[[], object], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())


def post(url: str, key: str, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}{CHAT}", json=payload, headers={"Authorization": f"Bearer {key}"}, timeout=10)


def send_raw(url: str, key: str, payload: dict[str, Any]) -> socket.socket:
    """A caller on a plain socket (so the test decides when it hangs up): the request sent, nothing read."""
    host, port = url.removeprefix("http://").split(":")
    data = json.dumps(payload).encode()
    sock = socket.create_connection((host, int(port)))
    head = (
        f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    sock.sendall(head.encode() + data)
    return sock


def cancelled(app: Any) -> float:
    return (
        app.state.gateway.metrics.registry.get_sample_value(
            "ai_platform_gateway_cancelled_total", {"route": CHAT, "model": MODEL}
        )
        or 0.0
    )


def access_statuses(caplog: pytest.LogCaptureFixture) -> list[int]:
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "ai_platform.gateway.access"]
    return [line["status"] for line in lines if line["route"] == CHAT]


@pytest.mark.parametrize("stream", [False, True], ids=["non-streamed", "streamed"])
def test_a_caller_that_leaves_closes_the_model_servers_connection(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    caplog.set_level(logging.INFO, logger="ai_platform.gateway")
    with slow_upstream(delay_s=30, every_s=0.1, lines=300) as upstream:  # 30 s either way, if left to finish
        roll_out(tmp_path, upstream.url)
        key = api_key(tmp_path)
        with served(tmp_path) as (url, app):
            caller = send_raw(url, key, body(stream))
            assert wait_until(lambda: upstream.active == 1, 10)
            if stream:
                assert caller.recv(4096).startswith(b"HTTP/1.1 200")  # the stream has started
            left = time.monotonic()
            caller.close()
            assert wait_until(lambda: upstream.cut, 5), "the model server never saw its connection close"
            assert upstream.cut[0] - left < 1.0
            assert wait_until(lambda: cancelled(app) == 1, 5)
    assert access_statuses(caplog) == [499]
    assert any("caller left" in r.getMessage() for r in caplog.records if r.name == "ai_platform.gateway")


def test_a_stream_that_loses_its_model_server_ends_with_an_error_event(tmp_path: Path) -> None:
    with slow_upstream(every_s=0.01, lines=10, cut_after=3) as upstream:
        roll_out(tmp_path, upstream.url)
        key = api_key(tmp_path)
        with served(tmp_path) as (url, _):
            reply = post(url, key, body(True))
    events = [line for line in reply.text.splitlines() if line.startswith("data: ")]
    assert reply.status_code == 200 and len(events) == 4
    error = json.loads(events[-1].removeprefix("data: "))["error"]
    assert error["type"] == "upstream_error" and "127.0.0.1" not in error["message"]
    assert upstream.connections == 1  # bytes had come back: not tried again


@pytest.mark.parametrize("stream", [False, True], ids=["non-streamed", "streamed"])
def test_a_connection_dropped_before_the_answer_is_tried_once_more_on_a_new_one(tmp_path: Path, stream: bool) -> None:
    with slow_upstream(drop=1) as upstream:
        roll_out(tmp_path, upstream.url)
        key = api_key(tmp_path)
        with served(tmp_path) as (url, _):
            reply = post(url, key, body(stream))
    assert reply.status_code == 200 and "upstream" in reply.text and '"error"' not in reply.text
    assert upstream.connections == 2 and upstream.served == 1


def test_a_server_that_cannot_be_reached_twice_is_a_503_with_retry_after(tmp_path: Path) -> None:
    with slow_upstream(drop=2) as upstream:
        roll_out(tmp_path, upstream.url)
        key = api_key(tmp_path)
        with served(tmp_path) as (url, _):
            reply = post(url, key, body())
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "1"
    assert reply.json()["error"]["type"] == "service_unavailable"
    assert upstream.connections == 2  # once more, not again and again


def test_an_error_answer_is_never_sent_again(tmp_path: Path, upstream: Any) -> None:
    upstream.reply("the engine failed", status=500)
    roll_out(tmp_path, upstream)
    key = api_key(tmp_path)
    with served(tmp_path) as (url, _):
        reply = post(url, key, body())
    assert reply.status_code == 502 and "Retry-After" not in reply.headers
    assert len(upstream.requests) == 1


def test_clients_across_a_selector_flip_and_a_rollback_see_no_failure(tmp_path: Path) -> None:
    """Behind one Service address, the selector flips blue -> green, blue stops after a drain; then a rollback
    green -> blue (a new blue), green stops after a drain. Eight callers, streamed and not, all along."""
    loop = LoopThread()
    colours = {c: SlowUpstream(delay_s=0.05, every_s=0.01, lines=5, name=c) for c in ("blue", "green")}
    for backend in colours.values():
        loop.run(backend.start())
    key = api_key(tmp_path)
    failures: list[str] = []
    answered: Counter[str] = Counter()
    done = threading.Event()

    def caller(i: int, url: str) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
            while not done.is_set():
                try:
                    reply = http.post(CHAT, json=body(stream=i % 2 == 0))
                except httpx.HTTPError as exc:
                    failures.append(f"caller {i}: {exc!r}")
                    continue
                if reply.status_code != 200 or '"error"' in reply.text:
                    failures.append(f"caller {i}: {reply.status_code} {reply.text[:200]}")
                    continue
                answered[next(c for c in colours if c in reply.text)] += 1

    try:
        with conntrack(dict(colours), "blue", loop) as proxy:
            roll_out(tmp_path, proxy.url, color="blue", admission=UNLIMITED)
            with served(tmp_path) as (url, _):
                admin = {"Authorization": f"Bearer {(state_dir(tmp_path) / ADMIN_KEY_FILE).read_text()}"}

                def switch(to: str, old: str) -> None:
                    """A rollout: the selector flips, the gateway hears of it, the old colour drains, then stops."""
                    proxy.select(to)
                    roll_out(tmp_path, proxy.url, color=to, admission=UNLIMITED)
                    assert httpx.post(f"{url}/admin/reload", headers=admin, timeout=10).status_code == 200
                    before = answered[to]
                    assert wait_until(lambda: answered[to] > before + 8, 10), f"no traffic reached {to}"
                    wait_until(lambda: proxy.backends[old].active == 0, 5)  # the drain, bounded
                    loop.run(proxy.stop(old))

                callers = [threading.Thread(target=caller, args=(i, url)) for i in range(8)]
                for thread in callers:
                    thread.start()
                assert wait_until(lambda: answered["blue"] > 16, 10)
                switch("green", "blue")
                time.sleep(0.5)
                proxy.backends["blue"] = SlowUpstream(delay_s=0.05, every_s=0.01, lines=5, name="blue")
                loop.run(proxy.backends["blue"].start())
                switch("blue", "green")
                time.sleep(0.5)
                done.set()
                for thread in callers:
                    thread.join(timeout=30)
    finally:
        done.set()
        loop.stop()
    assert failures == []
    assert answered["blue"] > 16 and answered["green"] > 8


def test_a_stopped_gateway_lets_short_requests_finish_and_cuts_long_ones_within_its_drain(tmp_path: Path) -> None:
    with slow_upstream(delay_s=1.0) as short, slow_upstream(delay_s=60) as long:
        roll_out(tmp_path, short.url, model="short")
        roll_out(tmp_path, long.url, model="long")
        key = api_key(tmp_path)
        process, url = start(tmp_path, "--drain-s", "3")
        replies: dict[str, Any] = {}

        def ask(model: str) -> None:
            try:
                replies[model] = httpx.post(
                    f"{url}{CHAT}", json=body(model=model), headers={"Authorization": f"Bearer {key}"}, timeout=90
                ).status_code
            except httpx.HTTPError as exc:
                replies[model] = exc

        try:
            askers = [threading.Thread(target=ask, args=(m,)) for m in ("short", "long")]
            for thread in askers:
                thread.start()
            assert wait_until(lambda: short.active == 1 and long.active == 1, 10)
            stopped = time.monotonic()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=15)
            took = time.monotonic() - stopped
            for thread in askers:
                thread.join(timeout=10)
        finally:
            process.kill()
    assert took < 3 + 4.0, f"the gateway took {took:.1f} s to stop with a 3 s drain"
    assert replies["short"] == 200  # shorter than the drain: it finished
    assert isinstance(replies["long"], httpx.HTTPError) or replies["long"] >= 500  # longer: cut
    assert long.cut and long.served == 0  # and its model server saw its connection close


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_stops_generating_for_a_caller_that_left(tmp_path: Path, demo_vllm: Any) -> None:
    """This vLLM counts no abort (its request_success_total{finished_reason="abort"} stays 0 when a client goes):
    what shows it stopped is its running gauge back at 0 and its generated tokens, both well short of the whole
    answer (1,000 tokens take this server about 4 s)."""

    def sample(name: str) -> float:
        text = httpx.get(f"{demo_vllm.base_url}/metrics", timeout=10).text
        return sum(float(v) for v in re.findall(rf"^vllm:{name}\{{[^}}]*\}} (\S+)", text, re.M))

    roll_out(tmp_path, demo_vllm.base_url)
    key = api_key(tmp_path)
    with served(tmp_path) as (url, app):
        caller = send_raw(url, key, body(max_tokens=1000, ignore_eos=True))
        assert wait_until(lambda: sample("num_requests_running") >= 1, 30), "vLLM never started the request"
        time.sleep(0.3)
        generated = sample("generation_tokens_total")
        left = time.monotonic()
        caller.close()
        assert wait_until(lambda: sample("num_requests_running") == 0, 5)
        stopped = time.monotonic() - left
        assert wait_until(lambda: cancelled(app) == 1, 5)
    assert stopped < 1.0, f"vLLM went on for {stopped:.1f} s"
    assert sample("generation_tokens_total") - generated < 300  # not the ~900 tokens left of the answer
