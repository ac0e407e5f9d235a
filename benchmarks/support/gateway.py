"""A real gateway process (`ai-platform serve`) on a free port of 127.0.0.1, for benchmarks and tests."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def start(home: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start a gateway over `home` (`extra`: more `serve` options); its process and URL once /healthz answers
    (its log: home/gateway-PORT.log)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = (home / f"gateway-{port}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "ai_platform.cli", "serve", "--home", str(home), "--port", str(port), *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    if answering(f"{url}/healthz", 20):
        return process, url
    process.kill()
    raise AssertionError(f"the gateway did not start: {(home / f'gateway-{port}.log').read_text()}")


def answering(url: str, within_s: float) -> bool:
    """Whether `url` answers (any HTTP status) within `within_s` seconds: a server just started is up."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.HTTPError:
            time.sleep(0.05)
    return False
