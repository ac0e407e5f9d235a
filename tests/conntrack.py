"""A Kubernetes Service address under kube-proxy, in miniature: a TCP proxy on a free port of 127.0.0.1 in front of
named backends (the pods of two colours), its own event loop in a thread.

It models exactly three things, the ones that decide where a kept-alive connection's requests go:

- a new connection goes to the backend selected when it is opened (`select`: the Service's selector);
- an established connection stays on the backend it was opened to, whatever is selected later (conntrack: NAT
  is decided once per connection);
- stopping a backend (`stop`) resets its established connections (the pod is gone) and refuses new ones to it.

Nothing else: no load balancing among pods of one colour, no readiness, no delay in the selector's spread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from slow_upstream import LoopThread, SlowUpstream


@dataclass
class Conntrack:
    backends: dict[str, SlowUpstream]
    selected: str
    url: str = ""
    opened: dict[str, int] = field(default_factory=dict)  # connections opened to each backend, in all
    established: dict[str, set[asyncio.Transport]] = field(default_factory=dict)
    server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        name = self.selected  # decided once, when the connection is opened
        backend = self.backends[name]
        try:
            port = int(backend.url.rsplit(":", 1)[1])
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            writer.transport.abort()  # a pod that is gone: the connection is reset
            return
        self.opened[name] = self.opened.get(name, 0) + 1
        pair = {writer.transport, up_writer.transport}
        self.established.setdefault(name, set()).update(pair)  # type: ignore[arg-type]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()  # one side gone: so is the other

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self.established[name].difference_update(pair)  # type: ignore[arg-type]
            writer.transport.abort()
            up_writer.transport.abort()

    def select(self, name: str) -> None:
        self.selected = name

    async def stop(self, name: str) -> None:
        """The backend's pods are gone: the backend stops, and every connection through to it is reset."""
        for transport in list(self.established.get(name, ())):
            transport.abort()
        await self.backends[name].stop()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for transports in self.established.values():
            for transport in list(transports):
                transport.abort()
        await self.server.wait_closed()


@contextmanager
def conntrack(backends: dict[str, SlowUpstream], selected: str, loop: LoopThread) -> Iterator[Conntrack]:
    """A Conntrack over `backends` (already started on `loop`), selecting `selected` first."""
    proxy = Conntrack(backends, selected)
    loop.run(proxy.start())
    try:
        yield proxy
    finally:
        loop.run(proxy.close())
