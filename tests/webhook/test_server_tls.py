"""HTTPS on loopback: the server is verified against the generated CA, and only TLS 1.2+ is spoken."""

from __future__ import annotations

import asyncio
import ssl
import warnings
from pathlib import Path

import aiohttp
import pytest
from support.server_harness import ADMISSION_JSON, review, running_server, session


async def test_client_verifying_against_generated_ca_gets_a_review(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, session(tls_dir) as http:
        resp = await http.post(srv.url + "/validate", json=review("abc"))
        assert resp.status == 200
        assert (await resp.json())["response"]["uid"] == "abc"


async def test_client_without_the_ca_fails_verification(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await http.post(srv.url + "/validate", json=review())


async def _handshake(port: int, context: ssl.SSLContext) -> str:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
    version = writer.get_extra_info("ssl_object").version()
    writer.close()
    await writer.wait_closed()
    return str(version)


def _client_pinned(tls_dir: Path, version: ssl.TLSVersion) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # let the client offer old protocols; the server must refuse
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLSv1_1 itself is deprecated in Python
        ctx.minimum_version = version
        ctx.maximum_version = version
    return ctx


async def test_tls_1_1_is_refused(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await _handshake(srv.server.port, _client_pinned(tls_dir, ssl.TLSVersion.TLSv1_1))


async def test_tls_1_2_is_accepted(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        assert await _handshake(srv.server.port, _client_pinned(tls_dir, ssl.TLSVersion.TLSv1_2)) == "TLSv1.2"


async def test_tls_1_3_is_negotiated_by_default(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        ctx = ssl.create_default_context(cafile=str(tls_dir / "ca.crt"))
        assert await _handshake(srv.server.port, ctx) == "TLSv1.3"


async def test_listener_context_requires_tls_1_2(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv:
        assert srv.reloader.server_context.minimum_version == ssl.TLSVersion.TLSv1_2


async def test_plain_http_to_the_tls_port_gets_no_review(tls_dir: Path) -> None:
    async with running_server(tls_dir) as srv, aiohttp.ClientSession() as http:
        url = srv.url.replace("https://", "http://") + "/validate"
        with pytest.raises(aiohttp.ClientError):
            await http.post(url, json=review(), headers=ADMISSION_JSON)
