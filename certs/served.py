"""The certificate a replica presents: one TLS handshake, no verification (we judge the result ourselves)."""

from __future__ import annotations

import socket
import ssl

from cryptography import x509

from certs.check import Served


def fetch_served(host: str, port: int, timeout: float = 3.0, server_name: str | None = None) -> Served:
    """Connect to `host:port`, present `server_name` as SNI (what the API server sends), return the leaf."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    endpoint = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            ctx.wrap_socket(raw, server_hostname=server_name) as tls,
        ):
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as exc:
        return Served(endpoint, None, str(exc) or type(exc).__name__)
    if der is None:
        return Served(endpoint, None, "no certificate presented")
    return Served(endpoint, x509.load_der_x509_certificate(der))
