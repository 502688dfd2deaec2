"""Serving-certificate hot reload: poll `tls.crt`/`tls.key`, verify the new pair, use it for new handshakes.

The listener keeps one server `SSLContext` for its lifetime. Its SNI callback (OpenSSL calls it on every
ClientHello, with or without SNI) points each new connection at the context of the newest verified pair, so a
rotation never restarts the listener, never drops a connection and never fails a request. A pair that does not
verify (half-written, key not matching) is reported and the previous pair keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from certs.files import TLS_CRT, TLS_KEY, CertFileError, ServingPair, load_pair

DEFAULT_CHECK_INTERVAL = 1.0

Signature = tuple[tuple[int, int, int], ...]


@contextlib.contextmanager
def _pem_file(data: bytes) -> Iterator[str]:
    """A path holding `data` for OpenSSL to read: an anonymous in-memory file where Linux offers one (works
    on a read-only root filesystem, leaves nothing on disk), else a private temporary file."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("dra-capacity-tls", os.MFD_CLOEXEC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, tmp = tempfile.mkstemp(prefix="dra-capacity-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        yield tmp
    finally:
        Path(tmp).unlink(missing_ok=True)


def pair_context(pair: ServingPair) -> ssl.SSLContext:
    """A TLS 1.2+ server context holding exactly the verified bytes of `pair`, sending no session tickets."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    # No TLS 1.3 session tickets: kube-apiserver's client never resumes a session (Go's crypto/tls without a
    # ClientSessionCache), so each ticket would be handshake work and one more write for nothing
    # (webhook/server/handshakes.py).
    ctx.num_tickets = 0
    # load_cert_chain takes paths only: hand it the bytes we verified, not the live files that may move on.
    with _pem_file(pair.key_pem.rstrip(b"\n") + b"\n" + pair.cert_pem) as path:
        ctx.load_cert_chain(path)
    return ctx


def _signature(directory: Path) -> Signature | None:
    """What changes when either file is rewritten or re-linked (Secret volumes swap a symlink)."""
    sig = []
    for name in (TLS_CRT, TLS_KEY):
        try:
            st = (directory / name).stat()
        except OSError:
            return None
        sig.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(sig)


class CertificateReloader:
    """Owns the listener's `SSLContext` and keeps it serving the newest valid pair found in `directory`."""

    def __init__(
        self,
        directory: Path,
        *,
        interval: float = DEFAULT_CHECK_INTERVAL,
        on_reload: Callable[[ServingPair], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.directory = directory
        self.interval = interval
        self._on_reload = on_reload
        self._on_failure = on_failure
        self._seen: Signature | None = None
        self._pair: ServingPair | None = None
        self._current: ssl.SSLContext | None = None
        self._server: ssl.SSLContext | None = None

    def load(self) -> ServingPair:
        """Load the initial pair and build the listener context; raises CertFileError naming the bad file."""
        self._seen = _signature(self.directory)
        pair = load_pair(self.directory)
        try:
            current = pair_context(pair)
            server = pair_context(pair)
        except ssl.SSLError as exc:
            raise CertFileError(
                f"{self.directory}: OpenSSL rejected the serving pair: {exc.reason}"
            ) from None
        server.sni_callback = self._select
        self._pair, self._current, self._server = pair, current, server
        if self._on_reload is not None:
            self._on_reload(pair)
        return pair

    @property
    def server_context(self) -> ssl.SSLContext:
        if self._server is None:
            raise RuntimeError("CertificateReloader.load() has not run")
        return self._server

    @property
    def pair(self) -> ServingPair:
        if self._pair is None:
            raise RuntimeError("CertificateReloader.load() has not run")
        return self._pair

    def _select(self, sslobj: ssl.SSLObject, server_name: str | None, ctx: ssl.SSLContext) -> None:
        current = self._current
        if current is not None and current is not ctx:
            sslobj.context = current

    def check(self) -> bool:
        """Poll once: when the files changed and now hold a valid pair, serve it. True if swapped."""
        sig = _signature(self.directory)
        if sig is None or sig == self._seen:
            return False
        self._seen = sig
        try:
            pair = load_pair(self.directory)
            context = pair_context(pair)
        except CertFileError as exc:
            self._fail(str(exc))
            return False
        except ssl.SSLError as exc:
            self._fail(f"{self.directory}: OpenSSL rejected the serving pair: {exc.reason}")
            return False
        if (
            self._pair is not None
            and pair.cert_pem == self._pair.cert_pem
            and pair.key_pem == self._pair.key_pem
        ):
            return False  # touched, not changed
        self._pair, self._current = pair, context
        if self._on_reload is not None:
            self._on_reload(pair)
        return True

    def _fail(self, message: str) -> None:
        if self._on_failure is not None:
            self._on_failure(message)

    async def run(self) -> None:
        """Poll forever (cancel to stop). Stat calls are cheap; reading happens only after a change."""
        while True:
            await asyncio.sleep(self.interval)
            self.check()
