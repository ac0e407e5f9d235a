"""The reference article's surge experiment (§4.3), scaled to this machine: weighted admission vs a plain RPS limit.

Real pieces: the demo model on the vLLM CPU build, and the real gateway process
(`ai-platform serve`) in front of it, called through its OpenAI API. Traffic is a
mix of short questions (a one-line input, 16 tokens out) and long contracts (twelve
corpus contracts, ~540 tokens in, 192 out; `ignore_eos`, so every reply costs what it asks).

1. calibrate: a closed loop at the server's batch size, steady mix (80% short),
   no admission limit: what the server sustains, in requests/s, weight/s and
   completion tokens/s.
2. surge: open-loop Poisson arrivals for --surge-s seconds whose offered weight is
   --surge (3) x the sustained weight/s: a batch job (its own key) sends contracts
   on top of a chat app (another key) asking questions, half the requests each.
   Both policies get the same average capacity, --headroom (0.8) of what the
   server sustains:
   (a) ours: the gateway's weighted admission, budget = headroom x sustained
       weight/s x window, each key at most half of it (the spec's default
       key_share); over it, a contract is degraded to 48 tokens, then refused (429).
   (b) baseline: a plain global requests-per-second limit at headroom x sustained
       requests/s, a `limits` moving window of cost 1 in front of the same gateway,
       whose own admission is opened wide.
   A request that gets no reply within --timeout-s counts as an error, as does a 429.

Printed per policy: error rate of short requests (429 + timeouts + 5xx), p50/p99
latency of admitted requests that finished, the share of capacity used (completion
tokens served per second over the calibrated tokens/s), and the gateway's own 5xx.
The article reports 0.02% vs 18.7% short-request errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ai_platform.config import Admission  # noqa: E402
from ai_platform.demo import corpus  # noqa: E402
from ai_platform.oci.layout import OciLayout  # noqa: E402
from ai_platform.prompts import bundle  # noqa: E402
from ai_platform.prompts.compiler import compile_bytes  # noqa: E402
from ai_platform.serving.gateway import keys  # noqa: E402
from ai_platform.serving.gateway.admission import weight  # noqa: E402
from ai_platform.serving.state import Color, ModelState, save  # noqa: E402
from benchmarks.support import SMOKE_HELP  # noqa: E402
from benchmarks.support.gateway import start  # noqa: E402
from benchmarks.support.vllm import MODEL, UPSTREAM_HELP, demo_server  # noqa: E402

# "Opened wide" is the largest budget a rollout state may carry (a larger one is refused on every request).
WIDE_OPEN_BUDGET = next(c.le for c in Admission.model_fields["budget"].metadata if getattr(c, "le", None))
SHORT_TOKENS, LONG_TOKENS, DEGRADED_TOKENS = 16, 192, 48
QUESTIONS = ["What is the notice period?", "Who pays the deposit?", "Is there a penalty clause?", "When does it end?"]


@dataclass
class Outcome:
    short: bool
    status: int  # 0: no reply within the timeout
    seconds: float
    tokens: int = 0


@dataclass
class Result:
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def figures(self, tokens_per_s: float) -> dict[str, float]:
        short = [o for o in self.outcomes if o.short]
        done = sorted(o.seconds for o in self.outcomes if o.status == 200)
        return {
            "requests": len(self.outcomes),
            "short_error_rate": sum(o.status != 200 for o in short) / max(1, len(short)),
            "long_refused": sum(o.status == 429 for o in self.outcomes if not o.short),
            "timeouts": sum(o.status == 0 for o in self.outcomes),
            "p50_s": _quantile(done, 0.5),
            "p99_s": _quantile(done, 0.99),
            "capacity_used": sum(o.tokens for o in self.outcomes) / self.seconds / tokens_per_s,
            "gateway_5xx": sum(o.status >= 500 for o in self.outcomes),
        }


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


class Traffic:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        texts = [e.text for e in corpus.examples(seed, 96, "surge")]
        self.contracts = ["\n\n".join(texts[i : i + 12]) for i in range(0, 96, 12)]  # ~540 tokens each

    def request(self, long_share: float) -> dict[str, Any]:
        """A contract from the batch job (`long_share` of them), else a question from the chat app."""
        if self.rng.random() < long_share:
            text, tokens = self.rng.choice(self.contracts), LONG_TOKENS
        else:
            text, tokens = self.rng.choice(QUESTIONS), SHORT_TOKENS
        messages = [{"role": "user", "content": text}]
        return {"model": MODEL, "messages": messages, "max_tokens": tokens, "ignore_eos": True, "temperature": 0}


def key_of(body: dict[str, Any]) -> str:
    return "chat" if body["max_tokens"] == SHORT_TOKENS else "batch"


def weigh(body: dict[str, Any]) -> int:
    """The gateway's weight of a request (the same input measure as its OpenAI route)."""
    return weight(len(json.dumps(body["messages"], ensure_ascii=False).encode()), body["max_tokens"])


async def call(
    client: httpx.AsyncClient, url: str, keyring: dict[str, str], body: dict[str, Any], timeout_s: float
) -> Outcome:
    started = time.perf_counter()
    short = body["max_tokens"] == SHORT_TOKENS
    headers = {"Authorization": f"Bearer {keyring[key_of(body)]}"}
    try:
        reply = await client.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        return Outcome(short, 0, time.perf_counter() - started)
    tokens = reply.json().get("usage", {}).get("completion_tokens", 0) if reply.status_code == 200 else 0
    return Outcome(short, reply.status_code, time.perf_counter() - started, tokens)


async def calibrate(url: str, keyring: dict[str, str], traffic: Traffic, seconds: float, concurrency: int) -> Result:
    result, deadline = Result(), time.monotonic() + seconds
    async with httpx.AsyncClient() as client:

        async def loop() -> None:
            while time.monotonic() < deadline:
                result.outcomes.append(await call(client, url, keyring, traffic.request(0.2), 300))

        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        result.seconds = time.perf_counter() - started
    return result


async def surge(
    url: str, keyring: dict[str, str], traffic: Traffic, rate: float, seconds: float, timeout_s: float, rps: float
) -> Result:
    """Poisson arrivals at `rate`/s for `seconds`; with `rps`, a plain moving-window limit of cost 1 in front."""
    limiter = MovingWindowRateLimiter(MemoryStorage())
    window = RateLimitItemPerSecond(max(1, round(rps * 10)), 10) if rps else None
    result, tasks = Result(), []
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=1000)) as client:
        started = time.perf_counter()
        while (now := time.perf_counter() - started) < seconds:
            body = traffic.request(0.5)
            if window is not None and not limiter.hit(window, "global"):
                result.outcomes.append(Outcome(body["max_tokens"] == SHORT_TOKENS, 429, 0.0))
            else:
                tasks.append(asyncio.create_task(call(client, url, keyring, body, timeout_s)))
            await asyncio.sleep(traffic.rng.expovariate(rate))
        result.outcomes += await asyncio.gather(*tasks)
        result.seconds = max(now, time.perf_counter() - started)
    return result


def idle(vllm_url: str, limit_s: float = 600) -> None:
    """Wait until the model server has nothing running or queued (a timed-out request still runs there)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        text = httpx.get(f"{vllm_url}/metrics", timeout=10).text
        busy = sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting"))
        )
        if busy == 0:
            return
        time.sleep(1)


def configure(home: Path, upstream: str, admission: dict[str, Any]) -> None:
    layout = OciLayout(home / "registry" / "prompts")
    digest = bundle.build(layout, MODEL, [compile_bytes(b'user: "{{text}}"\n', "prompts/ask.prompt")]).digest
    live = Color("blue", upstream, 1, "sha256:" + "a" * 64, digest, str(layout.root), "bench")
    save(home, ModelState(MODEL, str(home / "wh.duckdb"), live=live, admission=admission))
    time.sleep(1.5)  # the gateway re-reads the state every second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate-s", type=float, default=30)
    parser.add_argument("--surge-s", type=float, default=60)
    parser.add_argument("--surge", type=float, default=3.0, help="offered weight over the sustained weight")
    parser.add_argument("--timeout-s", type=float, default=20, help="a reply later than this is an error")
    parser.add_argument("--window-s", type=int, default=10)
    parser.add_argument("--headroom", type=float, default=0.8, help="both limits' share of the sustained capacity")
    parser.add_argument("--batch", type=int, default=8, help="the server's max_num_seqs and calibration concurrency")
    parser.add_argument("--upstream", metavar="URL", help=UPSTREAM_HELP)
    parser.add_argument("--smoke", action="store_true", help=SMOKE_HELP)
    args = parser.parse_args()
    warm_up_s = 5.0
    if args.smoke:
        warm_up_s, args.calibrate_s, args.surge_s, args.surge, args.timeout_s = 1.0, 3.0, 3.0, 1.5, 10.0
    traffic = Traffic(20261204)
    with tempfile.TemporaryDirectory() as tmp, demo_server(args.upstream, args.batch, Path(tmp) / "vllm.log") as vllm:
        home = Path(tmp)
        keyring = {name: keys.create(home / "gateway" / "keys.json", name, ["invoke"]) for name in ("chat", "batch")}
        wide_open = {"budget": WIDE_OPEN_BUDGET, "key_share": 1.0, "window_s": args.window_s}
        configure(home, vllm, wide_open)
        gateway, url = start(home)
        try:
            asyncio.run(calibrate(url, keyring, traffic, warm_up_s, args.batch))
            steady = asyncio.run(calibrate(url, keyring, traffic, args.calibrate_s, args.batch))
            tokens_s = sum(o.tokens for o in steady.outcomes) / steady.seconds
            requests_s = len(steady.outcomes) / steady.seconds
            weight_s = (
                sum(weigh(traffic.request(0.2)) for _ in range(10_000)) / 10_000 * requests_s
            )  # the steady mix's mean weight x its rate
            surge_weight = statistics.mean(weigh(traffic.request(0.5)) for _ in range(10_000))
            rate = args.surge * weight_s / surge_weight
            print(f"demo model on vLLM CPU (max_num_seqs {args.batch}), the real gateway in front, 2-core machine")
            print(
                f"sustained (closed loop, 80% short): {requests_s:.2f} req/s, {weight_s:.1f} weight/s, "
                f"{tokens_s:.0f} completion tokens/s; p50 {steady.figures(tokens_s)['p50_s']:.2f} s"
            )
            print(
                f"surge: {rate:.2f} req/s for {args.surge_s:.0f} s, 50% long, offered weight {args.surge:.1f}x "
                f"sustained; both limits at {args.headroom:.0%} of sustained; timeout {args.timeout_s:.0f} s"
            )
            runs: dict[str, Result] = {}
            weighted = {
                "budget": max(1, round(args.headroom * weight_s * args.window_s)),
                "key_share": 0.5,
                "window_s": args.window_s,
                "degrade_max_tokens": DEGRADED_TOKENS,
            }
            for name, admission, rps in (
                ("ours: weighted admission", weighted, 0.0),
                ("baseline: plain RPS limit", wide_open, args.headroom * requests_s),
            ):
                idle(vllm)
                configure(home, vllm, admission)
                runs[name] = asyncio.run(surge(url, keyring, traffic, rate, args.surge_s, args.timeout_s, rps))
        finally:
            gateway.terminate()
            gateway.wait(timeout=30)
    print(f"{'policy':28} {'short err':>9} {'p50 s':>7} {'p99 s':>7} {'capacity':>9} {'timeouts':>8} {'5xx':>4}")
    figures = {name: run.figures(tokens_s) for name, run in runs.items()}
    for name, f in figures.items():
        print(
            f"{name:28} {f['short_error_rate']:9.2%} {f['p50_s']:7.2f} {f['p99_s']:7.2f} "
            f"{f['capacity_used']:9.0%} {f['timeouts']:8.0f} {f['gateway_5xx']:4.0f}   ({f['requests']:.0f} requests)"
        )
    ours, base = figures["ours: weighted admission"], figures["baseline: plain RPS limit"]
    errors = (
        f"{base['short_error_rate'] / ours['short_error_rate']:.1f}x"
        if ours["short_error_rate"]
        else f"{base['short_error_rate']:.2%} vs none"
    )
    print(
        f"ratio, baseline / ours: short-request errors {errors}, p99 {base['p99_s'] / ours['p99_s']:.1f}x"
        "   (article: 18.7% vs 0.02%)"
    )


if __name__ == "__main__":
    main()
