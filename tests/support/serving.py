"""Real `dra-capacity serve` replicas for the certificate tests: subprocesses on loopback, each serving from
its own TLS directory with the hot reload polled every 50 ms; and a client that verifies them as the API
server does (against a caBundle, for the Service's DNS name, a fresh TLS handshake per request)."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from support.ports import free_port
from support.server_harness import device_class, review

DRA_CAPACITY = str(Path(sys.executable).parent / "dra-capacity")


@dataclass
class Replica:
    tls_dir: Path
    port: int
    proc: subprocess.Popen[str]


@contextlib.contextmanager
def replicas(
    tls_dirs: list[Path], ca_pem: Callable[[], bytes], server_name: str, ports: list[int] | None = None
) -> Iterator[list[Replica]]:
    """Start one `serve` per directory (each must already hold a pair); wait until each answers /readyz."""
    started: list[Replica] = []
    try:
        for i, d in enumerate(tls_dirs):
            port = ports[i] if ports else free_port()
            proc = subprocess.Popen(
                [
                    DRA_CAPACITY,
                    "serve",
                    f"--listen=127.0.0.1:{port}",
                    f"--tls-dir={d}",
                    "--cert-check-interval=0.05",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            started.append(Replica(d, port, proc))
        for r in started:
            deadline = time.monotonic() + 60
            while True:
                assert r.proc.poll() is None, r.proc.stderr.read() if r.proc.stderr else ""
                try:
                    status, _ = request(r.port, ca_pem(), server_name, "GET", "/readyz")
                    if status == 200:
                        break
                except (OSError, ssl.SSLError, http.client.HTTPException):
                    pass
                assert time.monotonic() < deadline, "a replica never became ready"
                time.sleep(0.1)
        yield started
    finally:
        for r in started:
            r.proc.terminate()
        for r in started:
            try:
                r.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                r.proc.kill()


class _Conn(http.client.HTTPSConnection):
    """Dials 127.0.0.1 but verifies the certificate for `server_name`, as the API server dials a Service."""

    def __init__(self, port: int, context: ssl.SSLContext, server_name: str) -> None:
        super().__init__("127.0.0.1", port, context=context, timeout=10)
        self._server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)  # type: ignore[attr-defined]


def request(
    port: int,
    ca_pem: bytes,
    server_name: str,
    method: str = "POST",
    path: str = "/validate",
    body: bytes = b"",
) -> tuple[int, bytes]:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    conn = _Conn(port, ctx, server_name)
    try:
        conn.request(method, path, body or None, {"Content-Type": "application/json"} if body else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


REVIEW = json.dumps(review("u-1", device_class("gpu"))).encode()


@dataclass
class Traffic:
    """A background client hammering every replica with AdmissionReviews, trusting `bundle()` as refreshed
    every `refresh` seconds (an API server learns a new caBundle from its informer, a little late)."""

    ports: list[int]
    bundle: Callable[[], bytes]
    server_name: str
    refresh: float = 0.25
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        trusted, fetched = self.bundle(), time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() - fetched >= self.refresh:
                trusted, fetched = self.bundle(), time.monotonic()
            for port in self.ports:
                try:
                    status, body = request(port, trusted, self.server_name, body=REVIEW)
                    if status == 200 and json.loads(body)["response"]["allowed"] is True:
                        self.ok += 1
                    else:
                        self.failures.append(f"{port}: HTTP {status}")
                except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
                    self.failures.append(f"{port}: {exc}")

    def __enter__(self) -> Traffic:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
