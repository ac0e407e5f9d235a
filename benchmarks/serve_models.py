"""Quantized against unquantized on the vLLM CPU build: output tokens per second at 8 clients and time to first token.

Two models, each served three ways (below), side by side in one run:
- the demo model, `contract-reviewer` (the tiny trained Qwen2, a float32 checkpoint);
- the published model, SmolLM2-135M-Instruct (`clause-classifier`), CUT TO ITS FIRST `--published-layers` DECODER
  LAYERS (default 6 of its 30, `ai_platform.demo.cache.build_published(layers=N)`): AWQ of all 30 layers is too
  long for one run on 2 shared cores (tried: still at layer 29 after 18 minutes, with the machine's load average
  between 8 and 28, and stopped; 6 layers took 146 s). The cut keeps the 49152 x 576 embedding, which is also
  the lm_head (tied, left unquantized, `ignore: [lm_head]`), so a cut has a larger unquantized share than the
  whole model: the ratio measured on a cut is not the whole model's. `--published-layers 30` runs the whole model.

Ours: the weights the platform's own quantize workload makes in the scheme each spec asks for (AWQ W4A16, groups
of 128, for the demo model; SmoothQuant W8A8 for the published one, whose AWQ W4A16 failed its gates), by
`python -m ai_platform.quantize JOB` in the quantize environment (what `quantized_weights` runs), calibrated on the
data the demo repo ships with them (the contract chats; Newton's Opticks) but on `--calibration-samples` (16)
samples of at most 128 tokens, not the spec's 64 of 256, to stay quick: calibration changes the weights' values,
not their shapes or kernels.
The baseline: the same model unquantized, as the platform serves it. Every server is started by
`ai_platform.serving.vllm.launch` with the model's spec `serving` section (dtype auto: float32 for the demo
checkpoint, float16 for the published one, and bfloat16 for W4A16, which vLLM's CPU WNA16 kernel needs); the demo
model's baseline by the benchmarks' shared helper (`support/vllm.py`; `--upstream URL` reuses a running one).
A second baseline, `bf16`, serves the unquantized folder as bfloat16: W4A16 computes in bfloat16 and the
float16 baseline does not (the CPU build runs bfloat16 about twice as fast as float16), so ours against it is what
the quantized weights themselves change, ours against the baseline what shipping the quantized model changes.
W4A16 on vLLM's CPU build needs its `cpu_gemm_wna16` kernel (AVX-512 CPUs; W8A8's int8 kernel is in both
families'): where the runtime probe says one is missing, that quantized side is skipped by name and the output
says why.

The servers of a model run at once (idle while another is measured) and `--rounds` (4) rounds rotate
their order, the ratio taken within each round and then its median: on a shared 2-core machine the speed drifts
from minute to minute. Per round and side: time to first token, streamed, one request at a time (`--ttft-requests`,
median), then `--clients` (8) concurrent clients each streaming chats of exactly `--max-tokens` (64) tokens
(`ignore_eos`), greedy, on the OpenAI route `/v1/chat/completions`, one after another for `--seconds` (8; the last
ones finish): output tokens per second over the round's wall time, and the median time to first token under that
load.

`--smoke`: the demo model's unquantized side only (the given `--upstream`, or one started here), one short round;
quantizing and starting servers take minutes, so the quantized side is not run and says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ai_platform.artifacts import canonical_json  # noqa: E402
from ai_platform.config import Quantization, Serving  # noqa: E402
from ai_platform.demo import classifier, corpus  # noqa: E402
from ai_platform.demo.cache import build, build_published  # noqa: E402
from ai_platform.demo.model import SYSTEM_PROMPT, Recipe  # noqa: E402
from ai_platform.demo.repo import CALIBRATION_TEXTS, CLASSIFIER_YAML, MODEL_YAML, calibration_row  # noqa: E402
from ai_platform.quantize import recipe  # noqa: E402
from ai_platform.serving.runtime import checkpoint_scheme, probe  # noqa: E402
from ai_platform.serving.vllm import SERVE_PYTHON, checkpoint_dtype, launch  # noqa: E402
from ai_platform.weights import manifest as wm  # noqa: E402
from benchmarks.support import SKIP, SMOKE_HELP  # noqa: E402
from benchmarks.support.vllm import MODEL as DEMO_NAME  # noqa: E402
from benchmarks.support.vllm import UPSTREAM_HELP, demo_server  # noqa: E402

QUANTIZE_PYTHON = ROOT / ".venvs" / "quantize" / "bin" / "python"
PUBLISHED_LAYERS = 6
KINDS = {
    "W4A16": "AWQ W4A16 (int4 weights in groups, 16-bit activations; the CPU WNA16 kernel computes in bfloat16)",
    "W8A8": "SmoothQuant W8A8 (int8 weights per channel, dynamic per-token int8 activations; oneDNN's int8 kernel)",
}


@dataclass
class Model:
    name: str  # the served name
    title: str
    folder: Path
    spec: dict[str, Any]  # the demo repo's model spec
    calibration: Sequence[Mapping[str, object]]  # rows of calibration data, as the demo repo ships them
    messages: list[dict[str, str]]  # the chat every request sends

    @property
    def serving(self) -> Serving:
        return Serving(**self.spec["serving"])

    @property
    def scheme(self) -> str:
        """The scheme its spec asks for: W4A16 for the demo model, W8A8 for the published one."""
        return Quantization(**self.spec["quantization"]).scheme


def demo_model() -> Model:
    example = corpus.examples(7, 1, "bench")[0]
    rows = [calibration_row(ex) for ex in corpus.examples(2_000_003, CALIBRATION_TEXTS, "cal")]
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": example.text}]
    return Model(DEMO_NAME, "the demo model", build(Recipe()), yaml.safe_load(MODEL_YAML), rows, messages)


def published_model(layers: int) -> Model:
    (_kind, clause), *_ = classifier.clauses(7, 1)
    rows = classifier.prose_rows(classifier.opticks_path().read_text(encoding="utf-8"))
    cut = "the whole model" if layers == 30 else f"CUT TO {layers} OF ITS 30 LAYERS"
    messages = [{"role": "user", "content": f"What kind of contract clause is this? {clause}"}]
    title = f"the published model (SmolLM2-135M-Instruct, {cut})"
    folder = build_published(None if layers == 30 else layers)
    return Model(classifier.NAME, title, folder, yaml.safe_load(CLASSIFIER_YAML), rows, messages)


def quantize(model: Model, work: Path, samples: int) -> tuple[Path, float]:
    """The model's quantized folder (its spec's scheme), made by the platform's quantize workload in the quantize
    environment; seconds."""
    q = Quantization(**model.spec["quantization"])
    q = q.model_copy(update={"calibration": q.calibration.model_copy(update={"samples": samples, "max_seq_len": 128})})
    work.mkdir(parents=True)
    (work / "calibration.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in model.calibration)
    )
    (work / "manifest.json").write_bytes(canonical_json(wm.build_manifest(model.folder)))
    job = {
        "input_dir": str(model.folder),
        "input_manifest": str(work / "manifest.json"),
        "output_root": str(work / "out"),
        "calibration_files": [str(work / "calibration.jsonl")],
        "recipe": recipe.from_spec(q, model.scheme),
        "seed": 0,
    }
    (work / "job.json").write_text(json.dumps(job))
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(QUANTIZE_PYTHON), "-m", "ai_platform.quantize", str(work / "job.json")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"quantizing {model.title} failed:\n{done.stderr[-3000:]}")
    folder = Path(json.loads(done.stdout)["folder"])
    if checkpoint_scheme(folder) != model.scheme:
        raise SystemExit(f"{folder}: the workload wrote {checkpoint_scheme(folder)}, not {model.scheme}")
    return folder, time.monotonic() - started


@dataclass
class Figures:
    ttft_idle_s: float  # median time to first token, one request at a time
    tokens_per_s: float  # output tokens over the loaded round's wall time
    ttft_loaded_s: float  # median time to first token under the clients' load
    tokens: int
    chats: int


async def stream_one(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> tuple[float, int]:
    """One streamed chat: seconds to its first token, and its output tokens (the server's usage)."""
    started = time.perf_counter()
    first: float | None = None
    tokens = 0
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as reply:
        if reply.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {reply.status_code}: {(await reply.aread())[:300]!r}")
        async for line in reply.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if first is None and any(c.get("delta", {}).get("content") for c in chunk.get("choices", [])):
                first = time.perf_counter() - started
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    if first is None:
        raise RuntimeError(f"{url}: a streamed reply with no token")
    return first, tokens


async def measure(url: str, body: dict[str, Any], args: argparse.Namespace) -> Figures:
    limits = httpx.Limits(max_connections=args.clients)
    async with httpx.AsyncClient(timeout=300, limits=limits) as client:
        idle = [(await stream_one(client, url, body))[0] for _ in range(args.ttft_requests)]

        started = time.perf_counter()
        deadline = started + args.seconds

        async def one_client() -> list[tuple[float, int]]:  # its next chat as soon as one ends, until the deadline
            done = [await stream_one(client, url, body)]
            while time.perf_counter() < deadline:
                done.append(await stream_one(client, url, body))
            return done

        results = await asyncio.gather(*(one_client() for _ in range(args.clients)))
        wall = time.perf_counter() - started
    done = [r for per_client in results for r in per_client]
    short = [n for _, n in done if n != args.max_tokens]
    if short:
        raise RuntimeError(f"{url}: replies of {short[:5]} tokens, not the {args.max_tokens} asked for (ignore_eos)")
    tokens = sum(n for _, n in done)
    return Figures(statistics.median(idle), tokens / wall, statistics.median(t for t, _ in done), tokens, len(done))


def request(model: Model, max_tokens: int) -> dict[str, Any]:
    return {
        "model": model.name,
        "messages": model.messages,
        "temperature": 0,
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@contextmanager
def served(model: Model, folder: Path, log: Path, dtype: str | None = None) -> Iterator[str]:
    serving = model.serving if dtype is None else model.serving.model_copy(update={"dtype": dtype})
    with launch(folder, model.name, serving, python=SERVE_PYTHON, log_path=log) as server:
        yield server.base_url


def ratios(rounds: list[dict[str, Figures]], ours: str, other: str) -> str:
    med = statistics.median
    return (
        f"throughput {med(r[ours].tokens_per_s / r[other].tokens_per_s for r in rounds):.2f}x, time to first token"
        f" {med(r[ours].ttft_idle_s / r[other].ttft_idle_s for r in rounds):.2f}x alone,"
        f" {med(r[ours].ttft_loaded_s / r[other].ttft_loaded_s for r in rounds):.2f}x loaded"
    )


def compare(model: Model, sides: dict[str, str], args: argparse.Namespace, note: str) -> None:
    """Rounds over the running servers (`sides`: ours/baseline -> URL), alternating their order; the figures."""
    body = request(model, args.max_tokens)
    for url in sides.values():  # warm-up: every request shape once
        asyncio.run(_warm(url, body, args.clients))
    rounds: list[dict[str, Figures]] = []
    names = list(sides)
    print(f"\n== {model.title}, served as {model.name!r}")
    print(note)
    print(
        f"{args.clients} clients, each streaming chats of {args.max_tokens} tokens (ignore_eos), greedy, one after"
        f" another for {args.seconds:g} s per side per round (the last ones finish); time to first token alone: median"
        f" of {args.ttft_requests}"
    )
    print(f"{'round':>5} {'side':>8} {'chats':>6} {'tok/s':>9} {'TTFT alone ms':>14} {'TTFT loaded ms':>15}")
    for i in range(args.rounds):
        order = names[i % len(names) :] + names[: i % len(names)]
        figures = {name: asyncio.run(measure(sides[name], body, args)) for name in order}
        rounds.append(figures)
        for name in names:
            f = figures[name]
            row = f"{f.chats:6d} {f.tokens_per_s:9.1f} {f.ttft_idle_s * 1000:14.1f} {f.ttft_loaded_s * 1000:15.1f}"
            print(f"{i:5d} {name:>8} {row}")
    for name in names:
        med = statistics.median
        print(
            f"{name}: {med(r[name].tokens_per_s for r in rounds):.1f} output tokens/s at {args.clients} clients;"
            f" time to first token {med(r[name].ttft_idle_s for r in rounds) * 1000:.1f} ms alone,"
            f" {med(r[name].ttft_loaded_s for r in rounds) * 1000:.1f} ms loaded (medians over {len(rounds)} rounds)"
        )
    if "ours" in sides and "baseline" in sides:
        print(f"ratio (ours / baseline, median of the per-round ratios): {ratios(rounds, 'ours', 'baseline')}")
    else:
        print("ratio: none (one side only)")
    if "ours" in sides and "bf16" in sides:
        print(f"ratio (ours / bf16: the weights' share of it, same activations): {ratios(rounds, 'ours', 'bf16')}")


async def _warm(url: str, body: dict[str, Any], clients: int) -> None:
    async with httpx.AsyncClient(timeout=300) as client:
        await asyncio.gather(*(stream_one(client, url, body) for _ in range(clients)))


def run_model(
    model: Model, args: argparse.Namespace, work: Path, why_not: str | None, baseline_upstream: str | None
) -> None:
    """Quantize (unless `why_not`), start both servers, compare."""
    q = Quantization(**model.spec["quantization"])
    with ExitStack() as stack:
        sides: dict[str, str] = {}
        if why_not:
            note = f"ours ({model.scheme}): skipped, {why_not}"
        else:
            folder, seconds = quantize(model, work / f"quantize-{model.name}", args.calibration_samples)
            groups = f", groups of {q.group_size}" if model.scheme != "W8A8" else ""
            note = (
                f"ours: {KINDS.get(model.scheme, model.scheme)}{groups}, lm_head unquantized, by the platform's"
                f" quantize workload in {seconds:.0f} s ({args.calibration_samples} calibration samples of <= 128"
                f" tokens). baseline: the unquantized folder as the platform serves it (dtype {model.serving.dtype}:"
                f" the checkpoint's {checkpoint_dtype(model.folder)}). bf16: the unquantized folder served as"
                " bfloat16 (a second baseline: on the CPU build bfloat16 runs about twice float16's speed, so it"
                " tells the dtype's share from the quantized weights')"
            )
            started = time.monotonic()
            sides["ours"] = stack.enter_context(served(model, folder, work / f"vllm-{model.name}-ours.log"))
            note += f"; ours started in {time.monotonic() - started:.0f} s"
            started = time.monotonic()
            log = work / f"vllm-{model.name}-bf16.log"
            sides["bf16"] = stack.enter_context(served(model, model.folder, log, "bfloat16"))
            note += f"; bf16 {time.monotonic() - started:.0f} s"
        started = time.monotonic()
        if model.name == DEMO_NAME:  # the benchmarks' shared helper, or the running server it is given
            log = work / "vllm-demo-baseline.log"
            sides["baseline"] = stack.enter_context(demo_server(baseline_upstream, model.serving.max_num_seqs, log))
        else:
            sides["baseline"] = stack.enter_context(served(model, model.folder, work / f"vllm-{model.name}-base.log"))
        if baseline_upstream is None:
            note += f"; baseline started in {time.monotonic() - started:.0f} s"
        compare(model, sides, args, note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", help=UPSTREAM_HELP + " (the demo model's baseline)")
    parser.add_argument("--published-layers", type=int, default=PUBLISHED_LAYERS, help="1 to 30 (30: the whole)")
    parser.add_argument("--models", nargs="+", choices=("demo", "published"), default=["demo", "published"])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0, help="each client's chats per side per round: until then")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--ttft-requests", type=int, default=8)
    parser.add_argument("--calibration-samples", type=int, default=16)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_HELP}: the demo model's baseline, one round")
    args = parser.parse_args()
    if not SERVE_PYTHON.is_file():
        print(f"the serve environment is missing ({SERVE_PYTHON}); `make envs` creates it", file=sys.stderr)
        sys.exit(SKIP)
    if args.smoke:
        args.rounds, args.clients, args.seconds, args.max_tokens, args.ttft_requests = 1, 2, 0.0, 8, 2
    with tempfile.TemporaryDirectory(prefix="serve-models-") as tmp:
        work = Path(tmp)
        if args.smoke:
            note = (
                "ours (the spec's scheme): not run in --smoke (quantizing and starting servers take minutes; the"
                " full run does both models, both sides)"
            )
            with demo_server(args.upstream, 8, work / "vllm-demo.log") as url:
                compare(demo_model(), {"baseline": url}, args, note)
            return
        runtime = probe(SERVE_PYTHON)

        def why_not(model: Model) -> str | None:
            if not QUANTIZE_PYTHON.is_file():
                return f"the quantize environment is missing ({QUANTIZE_PYTHON}); `make envs` creates it"
            missing = runtime.missing(model.scheme)
            return f"this CPU's vLLM cannot serve {model.scheme}: {missing}" if missing else None

        if "demo" in args.models:
            demo = demo_model()
            run_model(demo, args, work, why_not(demo), args.upstream)
        if "published" in args.models:
            published = published_model(args.published_layers)
            run_model(published, args, work, why_not(published), None)


if __name__ == "__main__":
    main()
