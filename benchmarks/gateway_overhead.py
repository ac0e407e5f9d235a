"""What the gateway costs: the same closed loop of short chat requests straight at vLLM and through the gateway.

Real pieces: the demo model on the vLLM CPU build (or `--upstream URL`, a vLLM already
running, e.g. the test suite's shared server), and the real gateway process
(`ai-platform serve`) in front of it, with a rollout state whose live color is that
vLLM. The load: `--clients` (8) concurrent clients, each sending its next request as
soon as its last reply arrives, `--requests` per side per round; each request a one-line
question, 16 tokens out (`ignore_eos`, so every reply costs the same), on the
OpenAI route `/v1/chat/completions`. A third side, the baseline for the gateway's own
cost: `benchmarks/support/passthrough.py`, an HTTP hop on the gateway's stack (uvicorn,
Starlette, aiohttp) that forwards the bytes and does nothing else.

Every side is warmed up first. Then `--rounds` (10) rounds of `--requests` (200) per side,
each running every side once, their order rotating from round to round, each side
with a fresh client connection pool. Short rounds, many of them: on a shared 2-core
machine the model server's own speed drifts by a third within a minute, and a ratio
taken within one round (then the median over rounds) cancels the drift. Printed per round and as medians across rounds:
throughput (requests/s), median and p90 latency, and gateway over direct (the
throughput ratio, the milliseconds added to the median). The target (issue 29): a
throughput ratio of at least 0.95, at most 10 ms added to the median, at 8 clients on
2 cores. Each with its 95% percentile-bootstrap interval over the rounds
(`ai_platform.stats.bootstrap`), and what the interval says: the target shown met,
shown missed, or cannot tell from these rounds (the interval straddles it).

Then the time per pipeline step, from the gateway's own
`ai_platform_gateway_step_duration_seconds{step=...}` histogram on /metrics (the
delta of its sums and counts over the measured rounds), and the gateway's CPU time
per request (on a CPU-bound machine, time the model server does not get).

Ours is the gateway side, the baseline the direct side.

`--smoke`: two rounds of 16 requests, seconds long; exits non-zero when a request fails.

`--stub`: the gateway's own CPU per request, without vLLM: every side in front of a stub that answers each
chat completion at once (`benchmarks/support/stub.py`). Only the CPU lines (gateway and pass-through) mean
anything then; the throughput ratios compare against a server that does no work. A minute on 2 cores
(e.g. `--stub --rounds 5 --requests 2000`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ai_platform.oci.layout import OciLayout  # noqa: E402
from ai_platform.prompts import bundle  # noqa: E402
from ai_platform.prompts.compiler import compile_bytes  # noqa: E402
from ai_platform.serving.gateway import keys  # noqa: E402
from ai_platform.serving.state import Color, ModelState, save  # noqa: E402
from ai_platform.stats import Side as GateSide  # noqa: E402
from ai_platform.stats import bootstrap  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402
from benchmarks.support.gateway import answering, start  # noqa: E402
from benchmarks.support.stub import stub_server  # noqa: E402
from benchmarks.support.vllm import UPSTREAM_HELP, demo_server  # noqa: E402

MAX_TOKENS = 16
QUESTIONS = ["What is the notice period?", "Who pays the deposit?", "Is there a penalty clause?", "When does it end?"]
STEP_METRIC = "ai_platform_gateway_step_duration_seconds"
REQUEST_METRIC = "ai_platform_gateway_request_duration_seconds"
PENDING_METRIC = "ai_platform_generation_log_pending"
STEPS = ("authorize", "parse", "guard_input", "admit", "upstream", "score", "guard_output", "journal")
MIN_ROUNDS = 5  # the fewest rounds an interval is drawn from (issue 29 asks for at least 5 alternating rounds)
ADMISSION = {"budget": 1_000_000, "key_share": 1.0, "window_s": 10}  # wide open: admission is timed, never refuses


@dataclass
class Side:
    """One side's closed loop in one round."""

    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds

    def quantile(self, q: float) -> float:
        values = sorted(self.latencies)
        return values[min(len(values) - 1, int(q * len(values)))]


def body(model: str, i: int) -> dict[str, Any]:
    question = QUESTIONS[i % len(QUESTIONS)]
    return {
        "model": model,
        "messages": [{"role": "user", "content": question}],
        "max_tokens": MAX_TOKENS,
        "ignore_eos": True,
        "temperature": 0,
    }


async def closed_loop(url: str, headers: dict[str, str], model: str, clients: int, requests: int) -> Side:
    """`requests` requests from `clients` clients, each sending its next one when its reply is in; a fresh pool."""
    side, sent = Side(), iter(range(requests))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as client:

        async def one_client() -> None:
            for i in sent:
                started = time.perf_counter()
                try:
                    reply = await client.post("/v1/chat/completions", json=body(model, i))
                except httpx.HTTPError as exc:
                    side.failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                if reply.status_code != 200:
                    side.failures.append(f"HTTP {reply.status_code}: {reply.text[:300]}")
                    continue
                side.latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        side.seconds = time.perf_counter() - started
    return side


def served_model(upstream: str) -> str:
    """The model name a vLLM serves (the first it lists)."""
    models = httpx.get(f"{upstream}/v1/models", timeout=10).json()["data"]
    return str(models[0]["id"])


def configure(home: Path, upstream: str, model: str) -> str:
    """A rollout state whose live color is `upstream`, and an invoke key; returns the key."""
    layout = OciLayout(home / "registry" / "prompts")
    digest = bundle.build(layout, model, [compile_bytes(b'user: "{{text}}"\n', "prompts/ask.prompt")]).digest
    live = Color("blue", upstream, 1, "sha256:" + "a" * 64, digest, str(layout.root), "bench")
    save(home, ModelState(model, str(home / "wh.duckdb"), live=live, admission=ADMISSION))
    return keys.create(home / "gateway" / "keys.json", "bench", ["invoke"])


@contextmanager
def gateway_process(home: Path) -> Iterator[tuple[str, int]]:
    """`ai-platform serve` over `home` on a free port; its URL and PID once it answers (log: home/gateway-PORT.log)."""
    process, url = start(home)
    try:
        yield url, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def histogram_totals(url: str, name: str, label: str | None) -> dict[str, tuple[float, float]]:
    """(sum, count) of histogram `name` on a /metrics page, per value of `label` (None: one total under '')."""
    totals: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=10).text):
        if family.name != name:
            continue
        for sample in family.samples:
            kind = sample.name.removeprefix(name)
            if kind not in ("_sum", "_count"):
                continue
            key = sample.labels.get(label, "") if label else ""
            entry = totals.setdefault(key, [0.0, 0.0])
            entry[0 if kind == "_sum" else 1] += sample.value
    return {k: (s, c) for k, (s, c) in totals.items()}


def settled(url: str, within_s: float = 60) -> None:
    """Wait until the gateway's generation log has written the warm-up's rows (its first warehouse write, with
    the imports that come with it, is a one-off cost, not the steady state measured)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        for family in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=10).text):
            if family.name == PENDING_METRIC and all(s.value == 0 for s in family.samples):
                return
        time.sleep(0.2)


def delta(
    after: dict[str, tuple[float, float]], before: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    return {
        k: (s - before.get(k, (0.0, 0.0))[0], c - before.get(k, (0.0, 0.0))[1])
        for k, (s, c) in after.items()
        if c - before.get(k, (0.0, 0.0))[1] > 0
    }


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SIDES = ("direct", "pass-through", "gateway")


@contextmanager
def passthrough_process(upstream: str) -> Iterator[tuple[str, int]]:
    """benchmarks/support/passthrough.py in front of `upstream` on a free port; its URL and PID once it answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "benchmarks.support.passthrough", "--upstream", upstream, "--port", str(port)]
    process = subprocess.Popen(command, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        if not answering(f"{url}/healthz", 30):
            raise SystemExit("the pass-through proxy did not start")
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def summary(name: str, sides: list[Side]) -> str:
    return (
        f"{name} {statistics.median(s.rps for s in sides):.2f} req/s,"
        f" p50 {statistics.median(s.quantile(0.5) for s in sides) * 1000:.1f} ms,"
        f" p90 {statistics.median(s.quantile(0.9) for s in sides) * 1000:.1f} ms"
    )


def versus(rounds: list[dict[str, Side]], ours: str, base: str) -> tuple[float, float, float]:
    """Median over rounds of ours/base throughput, and of the ms ours adds to base's p50 and p90."""
    ratios, added, added90 = per_round(rounds, ours, base)
    return statistics.median(ratios), statistics.median(added), statistics.median(added90)


def per_round(rounds: list[dict[str, Side]], ours: str, base: str) -> tuple[list[float], list[float], list[float]]:
    """Each round's ours/base throughput, and the ms ours adds to base's p50 and p90 in it."""
    pairs = [(m[ours], m[base]) for m in rounds if m[ours].latencies and m[base].latencies]
    return (
        [o.rps / b.rps for o, b in pairs],
        [(o.quantile(0.5) - b.quantile(0.5)) * 1000 for o, b in pairs],
        [(o.quantile(0.9) - b.quantile(0.9)) * 1000 for o, b in pairs],
    )


def interval(values: list[float], side: GateSide, bound: float) -> str:
    """The 95% bootstrap interval (over rounds) of the median over rounds, and what it says of the target:
    whether the rounds show it met, show it missed, or cannot tell (the interval straddles the bound)."""
    if len(values) < MIN_ROUNDS:  # a bootstrap over 2-4 values only restates them (the smoke mode's 2 rounds)
        return f"no interval from {len(values)} rounds (it needs {MIN_ROUNDS})"
    found = bootstrap([values], np.median, side, bound, 0.975)  # one-sided 97.5% bounds: a 95% interval
    shown = found.meets(side, bound)
    missed = found.high < bound if side == "min" else found.low > bound
    verdict = "shown met" if shown else "shown missed" if missed else "cannot tell"
    return f"95% interval {found.low:.3f} to {found.high:.3f} over {len(values)} rounds: {verdict}"


def run(args: argparse.Namespace, upstream: str, home: Path) -> int:
    model = served_model(upstream)
    key = configure(home, upstream, model)
    with gateway_process(home) as (gateway, pid), passthrough_process(upstream) as (hop, hop_pid):
        sides = {"direct": (upstream, {}), "pass-through": (hop, {})}
        sides["gateway"] = (gateway, {"Authorization": f"Bearer {key}"})
        for name, (url, headers) in sides.items():  # warm-up: connections, the gateway's imports and caches
            warm = asyncio.run(closed_loop(url, headers, model, args.clients, max(args.clients * 2, 16)))
            if warm.failures:
                print(f"{name} warm-up failed: {warm.failures[0]}")
                return 1
        settled(gateway)
        steps_before = histogram_totals(gateway, STEP_METRIC, "step")
        whole_before = histogram_totals(gateway, REQUEST_METRIC, None)
        cpu_before, hop_cpu_before = cpu_seconds(pid), cpu_seconds(hop_pid)
        rounds: list[dict[str, Side]] = []
        for r in range(args.rounds):
            order = SIDES[r % 3 :] + SIDES[: r % 3]  # each side first, second and last in turn
            measured = {}
            for name in order:
                url, headers = sides[name]
                measured[name] = asyncio.run(closed_loop(url, headers, model, args.clients, args.requests))
            rounds.append(measured)
        cpu, hop_cpu = cpu_seconds(pid) - cpu_before, cpu_seconds(hop_pid) - hop_cpu_before
        steps = delta(histogram_totals(gateway, STEP_METRIC, "step"), steps_before)
        whole = delta(histogram_totals(gateway, REQUEST_METRIC, None), whole_before)
    failures = [f for measured in rounds for side in measured.values() for f in side.failures]

    print(
        f"gateway overhead: {args.clients} concurrent clients, {args.requests} short chat requests per side per round"
        f" ({MAX_TOKENS} tokens out), {args.rounds} rounds rotating the order; {os.cpu_count()} cores;"
        f" upstream {upstream}"
    )
    print(f"{'round':>5} " + " ".join(f"{n + ' req/s':>18} {'p50 ms':>7} {'p90 ms':>7}" for n in SIDES))
    for i, m in enumerate(rounds, 1):
        cells = [f"{m[n].rps:18.2f} {m[n].quantile(0.5) * 1000:7.1f} {m[n].quantile(0.9) * 1000:7.1f}" for n in SIDES]
        print(f"{i:5d} " + " ".join(cells))
    if all(m[n].latencies for m in rounds for n in SIDES):
        print("median over rounds: " + " | ".join(summary(n, [m[n] for m in rounds]) for n in SIDES))
        ratio, added, added90 = versus(rounds, "gateway", "direct")
        verdict = "meets" if ratio >= 0.95 and added <= 10 else "misses"
        through = [m["gateway"] for m in rounds]
        print(f"ours (through the gateway): {statistics.median(s.rps for s in through):.2f} req/s")
        print(
            f"baseline (straight at vLLM): {statistics.median(s.rps for s in [m['direct'] for m in rounds]):.2f} req/s"
        )
        print(
            f"ratio (gateway / direct, median of rounds): throughput {ratio:.3f}x, median latency +{added:.1f} ms,"
            f" p90 +{added90:.1f} ms   (target: >= 0.95x, <= +10 ms: {verdict})"
        )
        ratios, added_ms, _ = per_round(rounds, "gateway", "direct")
        print(f"  throughput ratio >= 0.95: {interval(ratios, 'min', 0.95)}")
        print(f"  median latency added <= 10 ms: {interval(added_ms, 'max', 10.0)}")
        hop_ratio, hop_added, _ = versus(rounds, "pass-through", "direct")
        own_ratio, own_added, _ = versus(rounds, "gateway", "pass-through")
        print(
            f"of which the HTTP hop alone (pass-through / direct): {hop_ratio:.3f}x, +{hop_added:.1f} ms;"
            f" the pipeline over the hop (gateway / pass-through): {own_ratio:.3f}x, +{own_added:.1f} ms"
        )
    through = [m["gateway"] for m in rounds if m["gateway"].latencies]
    gateway_requests = sum(len(s.latencies) for s in through)
    if gateway_requests:
        print(
            f"the gateway's CPU time (user + system, all its threads): {cpu / gateway_requests * 1000:.1f} ms per"
            " request (on a CPU-bound machine, time the model server does not get)"
        )
    hop_requests = sum(len(m["pass-through"].latencies) for m in rounds)
    if hop_requests:
        print(f"the pass-through's CPU time: {hop_cpu / hop_requests * 1000:.1f} ms per request")
    if whole.get(""):
        total, count = whole[""]
        print(f"the gateway's own request duration (its /metrics): mean {total / count * 1000:.1f} ms over {count:.0f}")
    if steps:
        print(f"time per pipeline step (the gateway's {STEP_METRIC}, over the measured rounds):")
        for step in [*STEPS, *sorted(set(steps) - set(STEPS))]:
            if step in steps:
                total, count = steps[step]
                print(f"  {step:22} mean {total / count * 1000:8.3f} ms   ({count:.0f} observations)")
    else:
        print(f"no {STEP_METRIC} on the gateway's /metrics: the step times are missing")
        return 1
    if failures:
        print(f"{len(failures)} of {gateway_requests + len(failures)} requests failed; the first: {failures[0]}")
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", help=UPSTREAM_HELP)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200, help="requests per side per round")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_HELP}: 2 rounds of 16 requests")
    parser.add_argument(
        "--stub", action="store_true", help="a stub that answers at once instead of vLLM: the CPU per request only"
    )
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.requests = min(args.rounds, 2), min(args.requests, 16)
    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if args.stub:
            upstream = stack.enter_context(stub_server())
        else:
            upstream = stack.enter_context(demo_server(args.upstream, args.clients, home / "vllm.log"))
        code = run(args, upstream, home)
    sys.exit(code)


if __name__ == "__main__":
    main()
