"""The HTTPS listener's connection limits: a cap on open connections, a TLS handshake timeout, small buffers.

aiohttp's `TCPSite` offers neither a connection cap nor a handshake timeout (asyncio's default is 60 s), so
`GuardedSite` is the same site with both: each accepted connection is put to a `ConnectionGuard`, which
counts the connections alive per source (handshakes included) and, at the cap, lets the per-source policy of
webhook/server/fairness.py choose between admitting it by evicting an idle or handshaking connection of the
source holding the most, and refusing it. `ThrottleReport` says which source is being throttled.

`shrink_tls_read_buffer` brings asyncio's per-connection TLS read buffer from 256 KiB down to 17 KiB (one TLS
record), which is what an idle connection mostly cost.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import logging
import ssl
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web

from webhook.server.fairness import Action, FairShare, Network, Phase, is_protected, source_of
from webhook.server.handshakes import HandshakeThread, tls_protocol
from webhook.server.logs import log_event

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


class _Slot:
    """One live connection as the fairness policy sees it (webhook/server/fairness.py `Record`)."""

    __slots__ = ("app", "established", "protected", "since", "source", "transport")

    def __init__(self, source: str, protected: bool, transport: asyncio.BaseTransport) -> None:
        self.source = source
        self.protected = protected
        self.since = time.monotonic()
        self.transport = transport
        self.established = False
        self.app: asyncio.BaseProtocol | None = None

    @property
    def phase(self) -> Phase:
        if not self.established:
            return Phase.HANDSHAKE
        app = self.app
        if app is not None and (
            getattr(app, "_request_in_progress", False) or getattr(app, "_messages", None)
        ):
            return Phase.BUSY
        return Phase.IDLE


class _Counted(asyncio.Protocol):
    """Forwards every protocol event to aiohttp's handler, and marks its slot established once the handler
    has its connection (after the TLS handshake). (aiohttp's handler has `__slots__`.)"""

    __slots__ = ("_inner", "_slot")

    def __init__(self, inner: asyncio.Protocol, slot: _Slot) -> None:
        self._inner = inner
        self._slot = slot

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._slot.established = True
        self._slot.app = self._inner
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
        self._inner.connection_lost(exc)


class _Gate(asyncio.BufferedProtocol):
    """The protocol of each accepted TCP connection: asks the guard on arrival (the peer address is known only
    now), closes it or builds the real protocol, forwards every event to it, and frees the slot when the
    connection is lost (whether or not its TLS handshake completed)."""

    __slots__ = ("_build", "_guard", "_inner", "_scratch", "_slot")

    def __init__(self, guard: ConnectionGuard, build: Callable[[_Slot], asyncio.BaseProtocol]) -> None:
        self._guard = guard
        self._build = build
        self._inner: asyncio.BaseProtocol | None = None
        self._slot: _Slot | None = None
        self._scratch = bytearray(0)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) and peer else None
        slot = self._guard.admit(host, transport)
        if slot is None:
            if isinstance(transport, asyncio.Transport):
                transport.abort()
            else:
                transport.close()
            return
        self._slot = slot
        self._inner = self._build(slot)
        self._inner.connection_made(transport)

    def get_buffer(self, sizehint: int) -> Any:  # typeshed: a Buffer
        inner = self._inner
        if isinstance(inner, asyncio.BufferedProtocol):
            return inner.get_buffer(sizehint)
        if len(self._scratch) < max(sizehint, 1):
            self._scratch = bytearray(max(sizehint, 64 * 1024) if inner is not None else 1024)
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        inner = self._inner
        if isinstance(inner, asyncio.BufferedProtocol):
            inner.buffer_updated(nbytes)
        elif isinstance(inner, asyncio.Protocol):
            inner.data_received(bytes(self._scratch[:nbytes]))

    def eof_received(self) -> bool | None:
        inner = self._inner
        if isinstance(inner, (asyncio.Protocol, asyncio.BufferedProtocol)):
            return inner.eof_received()
        return None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._slot is not None:
            self._guard.release(self._slot)
            self._slot = None
        if self._inner is not None:
            self._inner.connection_lost(exc)


class ConnectionGuard:
    """Counts the listener's live connections per source and decides, with a `FairShare`, whether one more
    is admitted, admitted by evicting another source's idle or handshaking connection, or refused."""

    def __init__(
        self,
        limit: int,
        on_refused: Callable[[], None] | None = None,
        *,
        protected: Sequence[Network] = (),
        per_source: int = 0,
        on_throttled: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self.limit = limit
        self.protected = tuple(protected)
        self.share = FairShare.of(limit, per_source, protected=bool(self.protected))
        self._alive: dict[_Slot, None] = {}
        self._on_refused = on_refused
        self._on_throttled = on_throttled
        self.accepted = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._alive)

    def per_source(self) -> dict[str, int]:
        """Live connections by source (fairness key)."""
        counts: dict[str, int] = {}
        for slot in self._alive:
            counts[slot.source] = counts.get(slot.source, 0) + 1
        return counts

    def admit(self, host: str | None, transport: asyncio.BaseTransport) -> _Slot | None:
        """The slot of a new connection from `host`, or None when it is refused; may close another."""
        source = source_of(host)
        protected = is_protected(host, self.protected)
        decision = self.share.decide(source, protected, self._alive)
        if decision.action is Action.REFUSE:
            if self._on_refused is not None:
                self._on_refused()
            if self._on_throttled is not None:
                self._on_throttled(source, "refused", decision.reason)
            return None
        victim = decision.victim
        if decision.action is Action.EVICT and isinstance(victim, _Slot):
            self._alive.pop(victim, None)
            self.evicted += 1
            if self._on_throttled is not None:
                self._on_throttled(victim.source, "evicted", decision.reason)
            if isinstance(victim.transport, asyncio.Transport):
                victim.transport.abort()
            else:
                victim.transport.close()
        slot = _Slot(source, protected, transport)
        self._alive[slot] = None
        self.accepted += 1
        return slot

    def release(self, slot: _Slot) -> None:
        self._alive.pop(slot, None)

    def wrap(self, factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.BaseProtocol]:
        """A plain-TCP protocol factory under the guard: a connection counts from its accept until lost."""

        def build(slot: _Slot) -> asyncio.BaseProtocol:
            slot.established = True
            return _Counted(factory(), slot)

        return lambda: _Gate(self, build)

    def wrap_tls(
        self, factory: Callable[[], asyncio.Protocol], tls: Callable[[asyncio.Protocol], asyncio.BaseProtocol]
    ) -> Callable[[], asyncio.BaseProtocol]:
        """The same for TLS: `tls` wraps the handler; the slot counts as handshaking until TLS is done."""
        return lambda: _Gate(self, lambda slot: tls(_Counted(factory(), slot)))


class ThrottleReport:
    """Reports a throttled source: the `throttled_connections` metric (by source, bounded label set) and
    one log line per source and action at most every `interval` seconds."""

    def __init__(
        self,
        counter: Callable[[str, str], None],
        logger: logging.Logger,
        interval: float = 10.0,
        max_sources: int = 64,
    ) -> None:
        self._counter = counter
        self._logger = logger
        self._interval = interval
        self._max_sources = max_sources
        self._labelled: set[str] = set()
        self._last: dict[tuple[str, str], tuple[float, int]] = {}

    def __call__(self, source: str, action: str, reason: str) -> None:
        label = source
        if label not in self._labelled:
            if len(self._labelled) >= self._max_sources:
                label = "other"
            else:
                self._labelled.add(label)
        self._counter(label, action)
        now = time.monotonic()
        key = (source, action)
        last, suppressed = self._last.get(key, (-self._interval, 0))
        if now - last < self._interval:
            self._last[key] = (last, suppressed + 1)
            return
        if len(self._last) > 4 * self._max_sources:
            self._last.clear()
        self._last[key] = (now, 0)
        log_event(
            self._logger,
            logging.WARNING,
            "connection source throttled",
            source=source,
            action=action,
            reason=reason,
            suppressed=suppressed,
        )


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
        context = self._ssl_context
        if context is None:
            self._server = await loop.create_server(
                self._guard.wrap(factory), self._host, self._port, backlog=self._backlog, reuse_address=True
            )
            return
        timeout, handshakes = self._handshake_timeout, self._handshakes
        # What `create_server(ssl=...)` builds for each connection (webhook/server/handshakes.py), but the
        # guard decides on arrival, before any handshake work.
        accepted = self._guard.wrap_tls(factory, lambda app: tls_protocol(app, context, timeout, handshakes))
        self._server = await loop.create_server(
            accepted, self._host, self._port, backlog=self._backlog, reuse_address=True
        )
