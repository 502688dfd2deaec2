"""The differential's API-server client on a dropped connection: a loopback HTTP server that closes the
connection without an answer (as an API server under load closes a pooled keep-alive) is asked again, and one
that never answers gives `ServerUnreachable`, which the script reports in one line (no traceback)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kubernetes import client as k8s

from differential.compare import DROPPED, compare
from differential.server import TRANSPORT_ATTEMPTS, Server, ServerUnreachable
from dra_capacity.apiverdict import ACCEPTED, Verdict

READY = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
ANSWER = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@contextmanager
def dropping_server(drops: int, ready: bool = False) -> Iterator[tuple[str, list[int]]]:
    """Real HTTP on loopback: the first `drops` connections are closed unanswered, the rest get a 201; with
    `ready`, `GET /readyz` is always answered (200) and not counted."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen = [0]

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                if ready and data.startswith(b"GET /readyz"):
                    conn.sendall(READY)
                    continue
                seen[0] += 1
                if seen[0] > drops:
                    conn.sendall(ANSWER)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen
    finally:
        listener.close()
        thread.join(timeout=5)


def _server(host: str) -> Server:
    config = k8s.Configuration()
    config.host = host
    return Server(config, workers=1)


@pytest.mark.parametrize("raw", [True, False], ids=["text-body", "object-body"])
def test_a_dropped_connection_is_asked_again(raw: bool) -> None:
    body = '{"kind": "Namespace"}' if raw else {"kind": "Namespace"}
    with dropping_server(drops=TRANSPORT_ATTEMPTS - 1) as (host, seen):
        status, text = _server(host).request("POST", "/api/v1/namespaces", body)
    assert (status, text, seen[0]) == (201, b"{}", TRANSPORT_ATTEMPTS)


def test_a_server_that_never_answers_is_unreachable_not_a_verdict() -> None:
    refused = pytest.raises(ServerUnreachable, match=r"POST /api/v1/namespaces: no answer after 3 attempts")
    with dropping_server(drops=10**6) as (host, seen), refused:
        _server(host).request("POST", "/api/v1/namespaces", '{"kind": "Namespace"}')
    assert seen[0] >= TRANSPORT_ATTEMPTS


SLICE = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {}}


def test_an_object_the_server_drops_while_ready_is_a_dropped_verdict() -> None:
    """A handler's panic on one object (the server still ready): a verdict of its own, keyed by ours."""
    with dropping_server(drops=10**6, ready=True) as (host, _):
        theirs = _server(host).dry_run(SLICE)
    assert (theirs.allowed, theirs.code) == (False, DROPPED)
    assert "dropped the connection" in theirs.message
    refused = Verdict(False, 422)
    [key] = [d.key for d in compare("ResourceSlice", refused, theirs).disagreements]
    assert key == "ResourceSlice|server-dropped|-|ours-refused"
    [key] = [d.key for d in compare("ResourceSlice", ACCEPTED, theirs).disagreements]
    assert key == "ResourceSlice|server-dropped|-|ours-accepted"


def test_a_server_that_stops_answering_readyz_too_ends_the_run() -> None:
    with dropping_server(drops=10**6) as (host, _), pytest.raises(ServerUnreachable):
        _server(host).dry_run(SLICE)
