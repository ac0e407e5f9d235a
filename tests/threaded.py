"""A test's HTTP server on a thread, stopped at once when the test ends.

`socketserver`'s `serve_forever` looks for a shutdown request every `poll_interval`, 0.5 s unless told:
`shutdown()` then waits about that long, and every fixture that stopped a server this way added ~0.45 s to
its test's teardown (the rollout tests stop two: the Kubernetes stand-in and the model server's).
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

POLL_S = 0.01
S = TypeVar("S", bound=socketserver.BaseServer)


@contextmanager
def in_thread(server: S, name: str | None = None) -> Iterator[S]:
    """Serve `server` on a daemon thread for the block; then shut it down, close its socket and join."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
