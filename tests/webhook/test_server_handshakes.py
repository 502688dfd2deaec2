"""TLS handshakes off the event loop (webhook/server/handshakes.py): a client that reconnects over and over (a
squatter answered 408 once a second) costs the loop as little as it can.

* the costly step of each handshake (the answer to the ClientHello) runs on the server's handshake thread:
  while that thread is held up, the loop goes on answering reviews, and the held handshake completes after;
* bytes and EOF that arrive during that step are replayed after it, in order, and the connection is cleaned
  up (it leaves the connection count);
* the serving certificate's hot reload still applies (the SNI callback runs on that thread);
* no TLS 1.3 session tickets are sent (kube-apiserver never resumes a session);
* the protocol falls back to asyncio's own where its internals are not the expected ones.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

import pytest
from support.server_harness import client_context, make_tls_dir, review, running_server, session

from webhook.server import handshakes
from webhook.server.handshakes import HandshakeThread, OffloadedHandshake, offload_supported, tls_protocol


class _Gate:
    """Stands for a connection's OpenSSL object: its handshake step holds the handshake thread until
    `release()` (so whatever is queued behind it waits)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self._open = threading.Event()

    def do_handshake(self) -> None:
        self.entered.set()
        self._open.wait(10)

    def release(self) -> None:
        self._open.set()


async def _hold(thread: HandshakeThread) -> _Gate:
    gate = _Gate()
    thread.submit(gate, asyncio.get_running_loop(), lambda _: None)  # type: ignore[arg-type]
    assert await asyncio.to_thread(gate.entered.wait, 5)
    return gate


async def _wait_for(condition: Any, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def test_this_python_gets_the_offloaded_handshake() -> None:
    """CPython 3.11 to 3.13's asyncio TLS protocol: the one the listener extends (else it would quietly fall
    back to asyncio's own, and the loop would do every handshake again)."""
    assert offload_supported()


async def test_a_held_handshake_thread_delays_new_handshakes_but_not_the_loop(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate", json=review("warm"))  # a keep-alive connection, open
        assert resp.status == 200
        await resp.read()
        steps = srv.server.handshakes.steps
        gate = await _hold(srv.server.handshakes)
        try:
            fresh = asyncio.create_task(
                asyncio.open_connection(
                    "127.0.0.1", srv.server.port, ssl=client_context(tls_dir), server_hostname="localhost"
                )
            )
            await asyncio.sleep(0.3)
            assert not fresh.done()  # its ClientHello waits for the handshake thread...
            for i in range(3):  # ...while the loop answers the open connection's reviews
                resp = await http.post(srv.url + "/validate", json=review(f"during-{i}"))
                assert resp.status == 200 and (await resp.json())["response"]["uid"] == f"during-{i}"
        finally:
            gate.release()
        reader, writer = await asyncio.wait_for(fresh, 5)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200")
        assert srv.server.handshakes.steps >= steps + 2  # the gate, and the fresh connection's ClientHello


def _client_hello() -> bytes:
    client = ssl.create_default_context().wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO())
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    return outgoing.read()


async def test_bytes_and_eof_arriving_during_the_step_are_replayed_after_it(tls_dir: Path) -> None:
    """The ClientHello, then more bytes and the client's EOF, all while the step waits for the thread: the
    server still answers the ClientHello first (its handshake flight), then sees the rest and closes, and the
    connection leaves the count."""
    async with running_server(tls_dir) as srv:
        gate = await _hold(srv.server.handshakes)
        raw = socket.create_connection(("127.0.0.1", srv.server.port))
        try:
            raw.sendall(_client_hello())
            await _wait_for(lambda: len(srv.server.guard) == 1)
            await asyncio.sleep(0.1)
            raw.sendall(b"\x15\x03\x03\x00\x02\x01\x00")  # a stray alert record: held, then replayed
            raw.shutdown(socket.SHUT_WR)
            await asyncio.sleep(0.2)
            gate.release()
            raw.settimeout(5)
            received = b""
            while chunk := await asyncio.to_thread(raw.recv, 65536):
                received += chunk
        finally:
            gate.release()
            raw.close()
        assert received[:1] == b"\x16"  # a handshake record: the ServerHello flight came before the close
        await _wait_for(lambda: len(srv.server.guard) == 0)


async def test_a_connection_lost_during_the_step_is_cleaned_up(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        gate = await _hold(srv.server.handshakes)
        raw = socket.create_connection(("127.0.0.1", srv.server.port))
        raw.sendall(_client_hello())
        await _wait_for(lambda: len(srv.server.guard) == 1)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        raw.close()  # an RST while its ClientHello step is queued
        await asyncio.sleep(0.2)
        gate.release()
        await _wait_for(lambda: len(srv.server.guard) == 0)
        resp = await http.post(srv.url + "/validate", json=review("after"))
        assert resp.status == 200


async def test_no_session_tickets_are_sent(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", srv.server.port, ssl=client_context(tls_dir), server_hostname="localhost"
        )
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 5)  # tickets, if any, come before the answer
        tls = writer.get_extra_info("ssl_object")
        version, session_ = tls.version(), tls.session
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200") and version == "TLSv1.3"
    assert session_ is None or not session_.has_ticket


async def test_a_rotated_certificate_is_served_by_offloaded_handshakes(tmp_path: Path) -> None:
    """The reloader's SNI callback picks the newest pair; with the handshake on its thread it still does."""
    tls_dir = tmp_path / "tls"
    make_tls_dir(tls_dir)
    async with running_server(tls_dir) as srv:
        first = await _peer_serial(srv.server.port, tls_dir)
        make_tls_dir(tls_dir)  # a new CA and serving pair, picked up by the reloader's polling
        await _wait_for(lambda: srv.reloader.pair.cert_pem == (tls_dir / "tls.crt").read_bytes())
        second = await _peer_serial(srv.server.port, tls_dir)  # verified against the new CA
    assert first != second


async def _peer_serial(port: int, tls_dir: Path) -> bytes:
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client_context(tls_dir), server_hostname="localhost"
    )
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    return bytes(der)


async def test_without_the_expected_internals_the_protocol_is_asyncios_own(
    monkeypatch: pytest.MonkeyPatch, tls_dir: Path
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    thread = HandshakeThread()
    assert isinstance(tls_protocol(asyncio.Protocol(), context, 5.0, thread), OffloadedHandshake)
    monkeypatch.setattr(handshakes, "_STATE", None)
    fallback = tls_protocol(asyncio.Protocol(), context, 5.0, thread)
    assert type(fallback) is asyncio.sslproto.SSLProtocol
    assert type(tls_protocol(asyncio.Protocol(), context, 5.0, None)) is asyncio.sslproto.SSLProtocol
