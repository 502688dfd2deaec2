"""TLS for the HTTPS listener, with the costly step of each handshake off the event loop.

A client that connects, is refused and connects again (a byte-budget squatter answered 408 once a second,
issue 28) makes the event loop do a TLS handshake each time. Its costly step is OpenSSL answering the
ClientHello: key exchange, the certificate's signature, the key schedule (about 0.2 ms of CPU here, the
largest single block of loop time such a connection costs). `HandshakeThread` runs that step on a thread of
its own: CPython releases the GIL around `SSL_do_handshake`, so the loop goes on answering reviews meanwhile.
The other steps (the client's Finished, a few microseconds of work) stay on the loop, where a hand-off would
cost more than they do.

`OffloadedHandshake` is asyncio's own TLS protocol (`asyncio.sslproto.SSLProtocol`, what
`create_server(ssl=...)` builds for each connection) with that one change. While its step runs, nothing else
touches the connection's OpenSSL object or its memory buffers (they are not thread-safe): bytes, EOF and
connection loss arriving meanwhile are held and replayed, in order, once the step is back on the loop. When
the protocol's internals are not the ones this relies on (another Python), `tls_protocol` builds asyncio's
own, unchanged.

The serving contexts send no TLS 1.3 session tickets either (`num_tickets = 0`,
webhook/server/tlsreload.py): kube-apiserver's webhook client (Go's `crypto/tls` without a
`ClientSessionCache`) never resumes a session, so each ticket was work and a write for nothing.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto as sslproto
import contextlib
import queue
import ssl
import threading
from collections.abc import Callable
from typing import Any

_STATE: Any = getattr(sslproto, "SSLProtocolState", None)
_AGAIN = (ssl.SSLWantReadError, ssl.SSLSyscallError)
# What OffloadedHandshake overrides or reads of asyncio's SSLProtocol (CPython 3.11 to 3.13).
_NEEDED = ("_do_handshake", "_on_handshake_complete", "_process_outgoing", "buffer_updated", "eof_received")
# Typed as Any: typeshed describes few of the private members this class works with.
_SSLProtocol: Any = sslproto.SSLProtocol


def offload_supported() -> bool:
    """Whether this Python's asyncio TLS protocol is the one OffloadedHandshake extends."""
    protocol = getattr(sslproto, "SSLProtocol", None)
    return _STATE is not None and protocol is not None and all(hasattr(protocol, n) for n in _NEEDED)


class HandshakeThread:
    """One daemon thread running handshake steps, one at a time, in arrival order; each result goes back to
    its loop with `call_soon_threadsafe`. One thread is enough: a step is a fraction of a millisecond, and
    handshakes that queue here wait without holding the loop."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[
            tuple[ssl.SSLObject, asyncio.AbstractEventLoop, Callable[[BaseException | None], None]] | None
        ] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.steps = 0

    def submit(
        self,
        sslobj: ssl.SSLObject,
        loop: asyncio.AbstractEventLoop,
        done: Callable[[BaseException | None], None],
    ) -> None:
        """Run `sslobj.do_handshake()` on the thread; then `done(None)` or `done(the exception)` on `loop`."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="tls-handshakes", daemon=True)
                self._thread.start()
        self._jobs.put((sslobj, loop, done))

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            sslobj, loop, done = job
            outcome: BaseException | None = None
            try:
                sslobj.do_handshake()
            except BaseException as exc:  # every outcome goes back to the loop
                outcome = exc
            self.steps += 1
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for this connection
                loop.call_soon_threadsafe(done, outcome)

    def stop(self) -> None:
        """End the thread once the steps queued so far are done."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            self._jobs.put(None)
            thread.join(timeout=5)


class OffloadedHandshake(_SSLProtocol):  # type: ignore[misc]
    """asyncio's TLS protocol, its ClientHello step run by a `HandshakeThread` (module docstring)."""

    def __init__(self, *args: Any, handshakes: HandshakeThread, **kwargs: Any) -> None:
        self._handshakes = handshakes
        self._stepping = False  # a step runs on the thread: the OpenSSL object and its buffers are its own
        self._offloaded = False  # the ClientHello step went to the thread (the only one that does)
        self._held: list[tuple[str, Any]] = []  # events that arrived during the step, replayed after it
        super().__init__(*args, **kwargs)

    def _do_handshake(self) -> None:
        if self._stepping:
            return
        if self._offloaded or self._incoming.pending == 0:
            super()._do_handshake()  # nothing to read yet, or a cheap later step
            return
        self._offloaded = True
        self._stepping = True
        self._handshakes.submit(self._sslobj, self._loop, self._stepped)

    def _stepped(self, outcome: BaseException | None) -> None:
        self._stepping = False
        held, self._held = self._held, []
        if self._state == _STATE.DO_HANDSHAKE and self._transport is not None:
            if outcome is None:
                self._on_handshake_complete(None)
            elif isinstance(outcome, _AGAIN):
                self._process_outgoing()
            elif isinstance(outcome, ssl.SSLError):
                self._on_handshake_complete(outcome)
            else:
                self._fatal_error(outcome, "TLS handshake failed")
        for kind, value in held:
            if self._stepping:  # a replayed event started another step: hold the rest again
                self._held.append((kind, value))
            elif kind == "data":
                self._incoming_bytes(value)
            elif kind == "eof":
                if self._transport is not None and not super().eof_received():
                    self._transport.close()
            else:
                super().connection_lost(value)

    def _incoming_bytes(self, data: bytes) -> None:
        """What `buffer_updated` does with bytes read, for bytes held during a step."""
        if self._transport is None:
            return
        self._incoming.write(data)
        if self._state == _STATE.DO_HANDSHAKE:
            self._do_handshake()
        elif self._state == _STATE.WRAPPED:
            self._do_read()
        elif self._state == _STATE.FLUSHING:
            self._do_flush()
        elif self._state == _STATE.SHUTDOWN:
            self._do_shutdown()

    def buffer_updated(self, nbytes: int) -> None:
        if self._stepping or self._held:
            self._held.append(("data", bytes(self._ssl_buffer_view[:nbytes])))
            return
        super().buffer_updated(nbytes)

    def eof_received(self) -> bool | None:
        if self._stepping or self._held:
            self._held.append(("eof", None))
            return True  # keep the socket: the replay decides
        keep: bool | None = super().eof_received()
        return keep

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._stepping or self._held:
            self._held.append(("lost", exc))
            return
        super().connection_lost(exc)


def tls_protocol(
    app_protocol: asyncio.Protocol,
    context: ssl.SSLContext,
    handshake_timeout: float,
    handshakes: HandshakeThread | None,
) -> asyncio.BaseProtocol:
    """The protocol of one accepted TCP connection: TLS (handshake timeout `handshake_timeout`) around
    `app_protocol`, its ClientHello step on `handshakes` when given and supported."""
    loop = asyncio.get_running_loop()
    if handshakes is not None and offload_supported():
        offloaded: asyncio.BaseProtocol = OffloadedHandshake(
            loop,
            app_protocol,
            context,
            None,
            server_side=True,
            ssl_handshake_timeout=handshake_timeout,
            handshakes=handshakes,
        )
        return offloaded
    protocol: asyncio.BaseProtocol = _SSLProtocol(
        loop, app_protocol, context, None, server_side=True, ssl_handshake_timeout=handshake_timeout
    )
    return protocol
