"""A free loopback port, the argv of a self-signed `serve` on it, and one HTTPS request verified against a TLS
directory's CA (the `serve` tests)."""

from __future__ import annotations

import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path

# e2e tests (edited elsewhere) import free_port from here; its home is support.ports
from support.ports import free_port as free_port

CLI = str(Path(sys.executable).parent / "dra-capacity")


def serve_argv(port: int, tls_dir: Path, *extra: str) -> list[str]:
    """`dra-capacity serve` on 127.0.0.1:`port`, generating its CA and certificate in `tls_dir`."""
    return [CLI, "serve", "--self-signed", "--listen", f"127.0.0.1:{port}", "--tls-dir", str(tls_dir), *extra]


def https(url: str, tls_dir: Path, body: bytes | None = None) -> tuple[int, bytes]:
    ctx = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    headers = {"Content-Type": "application/json"} if body is not None else {}
    req = urllib.request.Request(
        url, data=body, headers=headers, method="POST" if body is not None else "GET"
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
