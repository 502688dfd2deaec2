"""The HTTPS listener's connection limits: a cap on open connections, a TLS handshake timeout, small buffers.

aiohttp's `TCPSite` offers neither a connection cap nor a handshake timeout (asyncio's default is 60 s), so
`GuardedSite` is the same site with both: its protocol factory counts the connections alive (handshakes
included) and closes any beyond the cap on arrival. `shrink_tls_read_buffer` brings asyncio's per-connection
TLS read buffer from 256 KiB down to 17 KiB (one TLS record), which is what an idle connection mostly cost.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import ssl
import weakref
from collections.abc import Callable

from aiohttp import web

from webhook.server.handshakes import HandshakeThread, tls_protocol

# One TLS record's worth: a record carries at most 16 KiB of plaintext, plus its header and MAC.
TLS_READ_BUFFER = 17 * 1024


def shrink_tls_read_buffer(size: int = TLS_READ_BUFFER) -> None:
    """Make every new asyncio TLS connection of this process allocate `size` bytes for reading, not 256 KiB.

    `asyncio.sslproto.SSLProtocol.max_size` (CPython `Lib/asyncio/sslproto.py`) is both the buffer each
    connection allocates up front and the most it reads at once; a smaller one only means more, smaller reads.
    """
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    if protocol is not None and isinstance(getattr(protocol, "max_size", None), int):
        protocol.max_size = min(protocol.max_size, size)


class _Refused(asyncio.Protocol):
    """A connection over the cap: closed as soon as it is made (before any TLS)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if isinstance(transport, asyncio.Transport):
            transport.abort()
        else:
            transport.close()


class _Counted(asyncio.Protocol):
    """Forwards every protocol event to aiohttp's handler and leaves the guard's count when the connection
    ends. (aiohttp's handler has `__slots__` and no weak references, so it cannot be counted itself.)"""

    __slots__ = ("__weakref__", "_alive", "_inner")

    def __init__(self, inner: asyncio.Protocol, alive: weakref.WeakSet[_Counted]) -> None:
        self._inner = inner
        self._alive = alive

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._alive.discard(self)
        self._inner.connection_lost(exc)


class ConnectionGuard:
    """Counts the listener's live connections and says when one more is too many."""

    def __init__(self, limit: int, on_refused: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self._alive: weakref.WeakSet[_Counted] = weakref.WeakSet()
        self._on_refused = on_refused
        self.accepted = 0

    def __len__(self) -> int:
        return len(self._alive)

    def wrap(self, factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """A protocol factory that admits at most `limit` live connections. A connection counts from its
        accept (TLS handshake included) until it is lost, or dropped by asyncio after a failed handshake."""

        def protocol() -> asyncio.Protocol:
            if len(self._alive) >= self.limit:
                if self._on_refused is not None:
                    self._on_refused()
                return _Refused()
            self.accepted += 1
            counted = _Counted(factory(), self._alive)
            self._alive.add(counted)
            return counted

        return protocol


class GuardedSite(web.BaseSite):
    """aiohttp's `TCPSite` plus a connection cap and a TLS handshake timeout; `protocol` builds the
    per-connection handler factory from the runner's server (webhook/server/protocol.py), aiohttp's own
    without. With `handshakes`, each TLS handshake's costly step runs on that thread
    (webhook/server/handshakes.py)."""

    __slots__ = ("_guard", "_handshake_timeout", "_handshakes", "_host", "_port", "_protocol")

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        *,
        guard: ConnectionGuard,
        ssl_context: ssl.SSLContext | None = None,
        handshake_timeout: float = 10.0,
        backlog: int = 128,
        protocol: Callable[[web.Server], Callable[[], asyncio.Protocol]] | None = None,
        handshakes: HandshakeThread | None = None,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=backlog)
        self._host = host
        self._port = port
        self._guard = guard
        self._handshake_timeout = handshake_timeout
        self._protocol = protocol
        self._handshakes = handshakes

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        if server is None:
            raise RuntimeError("the runner has not been set up")
        loop = asyncio.get_running_loop()
        factory = self._protocol(server) if self._protocol is not None else server
        guarded = self._guard.wrap(factory)
        context = self._ssl_context
        if context is None:
            self._server = await loop.create_server(
                guarded, self._host, self._port, backlog=self._backlog, reuse_address=True
            )
            return
        timeout, handshakes = self._handshake_timeout, self._handshakes

        def accepted() -> asyncio.BaseProtocol:
            # What `create_server(ssl=...)` builds for each connection (webhook/server/handshakes.py), but a
            # connection over the cap is closed before its handshake, not after.
            app = guarded()
            return app if isinstance(app, _Refused) else tls_protocol(app, context, timeout, handshakes)

        self._server = await loop.create_server(
            accepted, self._host, self._port, backlog=self._backlog, reuse_address=True
        )
