"""Certificate hot reload: a rotation on disk is served without a restart and without one failed request; a
half-written or broken pair is never loaded (the previous pair keeps serving).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from support.server_harness import client_context, make_tls_dir, review, running_server, session

from certs.authority import ServingBundle, issue_serving_certificate
from certs.files import TLS_CRT, TLS_KEY, atomic_write, load_pair, write_bundle, write_pair
from webhook.server.tlsreload import pair_context


@pytest.fixture
def tls(tmp_path: Path) -> tuple[Path, ServingBundle]:
    directory = tmp_path / "tls"
    return directory, make_tls_dir(directory)


async def served_leaf(port: int, tls_dir: Path, server_name: str | None = None) -> bytes:
    """DER of the certificate the server presents to a new connection (verified against the CA); no SNI for
    an IP address, as from the apiserver to a webhook URL with an IP; `server_name` sends SNI."""
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=client_context(tls_dir), server_hostname=server_name
    )
    ssl_object: ssl.SSLObject = writer.get_extra_info("ssl_object")
    der = ssl_object.getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    assert der is not None
    return der


async def test_rotation_under_load_fails_no_request_and_serves_the_new_leaf(
    tls: tuple[Path, ServingBundle],
) -> None:
    tls_dir, bundle = tls
    new = issue_serving_certificate(bundle.ca)
    new_der = new.certificate.public_bytes(Encoding.DER)
    failures: list[str] = []
    answered = 0
    stop = asyncio.Event()

    async def client(force_close: bool) -> None:
        nonlocal answered
        async with session(tls_dir, force_close=force_close) as http:
            while not stop.is_set():
                try:
                    resp = await http.post(srv.url + "/validate", json=review(f"u{answered}"))
                    body = await resp.read()
                    if resp.status != 200:
                        failures.append(f"{resp.status} {body!r}")
                    answered += 1
                except Exception as exc:  # any error counts as a failed request
                    failures.append(repr(exc))

    async with running_server(tls_dir, interval=0.02) as srv:
        old_der = await served_leaf(srv.server.port, tls_dir)
        clients = [asyncio.create_task(client(force_close)) for force_close in (True, True, False, False)]
        await asyncio.sleep(0.3)
        before = answered
        write_pair(tls_dir, new.cert_pem, new.key_pem)
        for _ in range(200):
            if await served_leaf(srv.server.port, tls_dir) == new_der:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.gather(*clients)
        assert await served_leaf(srv.server.port, tls_dir) == new_der != old_der
    assert failures == []
    assert before > 0 and answered > before
    loads = [
        line
        for line in srv.log.getvalue().splitlines()
        if json.loads(line)["msg"] == "serving certificate loaded"
    ]
    assert len(loads) == 2


async def test_half_written_pair_is_not_loaded_until_the_certificate_follows(
    tls: tuple[Path, ServingBundle],
) -> None:
    tls_dir, bundle = tls
    new = issue_serving_certificate(bundle.ca)
    async with running_server(tls_dir, interval=3600) as srv:
        old_der = await served_leaf(srv.server.port, tls_dir)
        atomic_write(tls_dir / TLS_KEY, new.key_pem, 0o600)  # key rotated, certificate not yet
        assert srv.reloader.check() is False
        assert await served_leaf(srv.server.port, tls_dir) == old_der
        assert "does not match the certificate" in srv.log.getvalue()
        atomic_write(tls_dir / TLS_CRT, new.cert_pem, 0o644)
        assert srv.reloader.check() is True
        assert await served_leaf(srv.server.port, tls_dir) == new.certificate.public_bytes(Encoding.DER)
        text = srv.metrics.render().decode()
    assert 'dra_capacity_webhook_certificate_reloads_total{result="failure"} 1.0' in text
    assert 'dra_capacity_webhook_certificate_reloads_total{result="success"} 2.0' in text


async def test_garbage_certificate_keeps_the_current_pair(tls: tuple[Path, ServingBundle]) -> None:
    tls_dir, _ = tls
    async with running_server(tls_dir, interval=3600) as srv:
        old_der = await served_leaf(srv.server.port, tls_dir)
        (tls_dir / TLS_CRT).write_bytes(b"-----BEGIN CERTIFICATE-----\ntruncated")
        assert srv.reloader.check() is False
        assert await served_leaf(srv.server.port, tls_dir) == old_der
        assert "not a PEM certificate" in srv.log.getvalue()


async def test_touched_but_unchanged_files_do_not_count_as_a_reload(tls: tuple[Path, ServingBundle]) -> None:
    tls_dir, _ = tls
    async with running_server(tls_dir, interval=3600) as srv:
        os.utime(tls_dir / TLS_CRT, ns=(1, 1))
        assert srv.reloader.check() is False
        text = srv.metrics.render().decode()
    assert 'dra_capacity_webhook_certificate_reloads_total{result="success"} 1.0' in text


async def test_reload_publishes_the_new_expiry(tls: tuple[Path, ServingBundle]) -> None:
    tls_dir, bundle = tls
    new = issue_serving_certificate(bundle.ca, validity=datetime.timedelta(days=7))
    async with running_server(tls_dir, interval=3600) as srv:
        write_pair(tls_dir, new.cert_pem, new.key_pem)
        assert srv.reloader.check() is True
        expiry = srv.metrics.certificate_expiry._value.get()
    assert expiry == pytest.approx(new.certificate.not_valid_after_utc.timestamp())


async def test_keep_alive_connection_survives_a_rotation(tls: tuple[Path, ServingBundle]) -> None:
    tls_dir, bundle = tls
    new = issue_serving_certificate(bundle.ca)
    async with running_server(tls_dir, interval=3600) as srv, session(tls_dir) as http:
        assert (await http.post(srv.url + "/validate", json=review("1"))).status == 200
        write_pair(tls_dir, new.cert_pem, new.key_pem)
        assert srv.reloader.check() is True
        assert (await http.post(srv.url + "/validate", json=review("2"))).status == 200


async def test_clients_sending_sni_get_the_new_leaf_too(tls: tuple[Path, ServingBundle]) -> None:
    tls_dir, bundle = tls
    new = issue_serving_certificate(bundle.ca)
    async with running_server(tls_dir, interval=3600) as srv:
        write_pair(tls_dir, new.cert_pem, new.key_pem)
        assert srv.reloader.check() is True
        served = await served_leaf(srv.server.port, tls_dir, server_name="localhost")
    assert served == new.certificate.public_bytes(Encoding.DER)


def test_loading_a_pair_needs_no_writable_temporary_directory(
    tls: tuple[Path, ServingBundle], monkeypatch: pytest.MonkeyPatch
) -> None:
    tls_dir, _ = tls
    monkeypatch.setattr(
        tempfile, "tempdir", str(tls_dir / "no-such-dir")
    )  # as on a read-only root filesystem
    context = pair_context(load_pair(tls_dir))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def _kubelet_secret_dir(root: Path, version: str, bundle: ServingBundle) -> None:
    """Lay out a Secret volume as the kubelet does: files behind `..data`, a symlink to a timestamped dir that
    is replaced atomically (a new dir, then `..data` swapped by rename) when the Secret changes."""
    target = root / f"..{version}"
    write_bundle(target, bundle)
    link = root / "..data_tmp"
    link.symlink_to(target.name)
    os.replace(link, root / "..data")
    for name in (TLS_CRT, TLS_KEY, "ca.crt"):
        if not (root / name).is_symlink():
            (root / name).symlink_to(f"..data/{name}")


def test_secret_volume_update_by_symlink_swap_is_picked_up(tmp_path: Path) -> None:
    """cert-manager renews the Secret; the kubelet swaps `..data`; the reloader must see the new pair."""
    from certs.authority import generate_self_signed
    from webhook.server.tlsreload import CertificateReloader

    root = tmp_path / "tls"
    root.mkdir()
    first = generate_self_signed(())
    _kubelet_secret_dir(root, "2026_11_29_08_00_00.1", first)
    reloader = CertificateReloader(root, interval=3600)
    assert reloader.load().cert_pem == load_pair(root).cert_pem
    renewed = issue_serving_certificate(first.ca)
    _kubelet_secret_dir(root, "2026_11_29_09_00_00.2", ServingBundle(first.ca, renewed))
    assert reloader.check() is True
    assert (
        reloader.pair.cert_pem
        == load_pair(root).cert_pem
        != first.serving.certificate.public_bytes(Encoding.PEM)
    )
