"""The TLS directory: atomic writes, 0600 keys, `--self-signed` generation, reads that name the bad file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from certs.authority import generate_self_signed, issue_serving_certificate
from certs.files import (
    CA_CRT,
    TLS_CRT,
    TLS_KEY,
    CertFileError,
    ensure_self_signed,
    load_pair,
    write_bundle,
    write_pair,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_self_signed_writes_ca_certificate_and_key(tmp_path: Path) -> None:
    assert ensure_self_signed(tmp_path / "tls") is True
    assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == [CA_CRT, TLS_CRT, TLS_KEY]


def test_key_is_written_0600_and_certificates_0644(tmp_path: Path) -> None:
    write_bundle(tmp_path, generate_self_signed())
    assert _mode(tmp_path / TLS_KEY) == 0o600
    assert _mode(tmp_path / TLS_CRT) == 0o644
    assert _mode(tmp_path / CA_CRT) == 0o644


def test_self_signed_leaves_an_existing_pair_alone(tmp_path: Path) -> None:
    ensure_self_signed(tmp_path)
    before = (tmp_path / TLS_CRT).read_bytes()
    assert ensure_self_signed(tmp_path) is False
    assert (tmp_path / TLS_CRT).read_bytes() == before


def test_self_signed_leaves_a_lone_key_alone(tmp_path: Path) -> None:
    (tmp_path / TLS_KEY).write_bytes(b"mine")
    assert ensure_self_signed(tmp_path) is False
    assert (tmp_path / TLS_KEY).read_bytes() == b"mine"


def test_writes_leave_no_temporary_files(tmp_path: Path) -> None:
    write_bundle(tmp_path, generate_self_signed())
    write_bundle(tmp_path, generate_self_signed())
    assert len(list(tmp_path.iterdir())) == 3


def test_load_pair_returns_the_verified_leaf(tmp_path: Path) -> None:
    bundle = generate_self_signed()
    write_bundle(tmp_path, bundle)
    pair = load_pair(tmp_path)
    assert pair.leaf == bundle.serving.certificate
    assert pair.key_pem == bundle.serving.key_pem


def test_missing_certificate_is_named_with_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(CertFileError) as err:
        load_pair(tmp_path)
    assert str(err.value) == (
        f"{tmp_path / TLS_CRT}: serving certificate not found "
        "(mount the serving certificate there, or pass --self-signed)"
    )


def test_missing_key_is_named(tmp_path: Path) -> None:
    write_bundle(tmp_path, generate_self_signed())
    (tmp_path / TLS_KEY).unlink()
    with pytest.raises(CertFileError, match=r"tls\.key: private key not found"):
        load_pair(tmp_path)


def test_unreadable_key_is_named(tmp_path: Path) -> None:
    write_bundle(tmp_path, generate_self_signed())
    (tmp_path / TLS_KEY).unlink()
    (tmp_path / TLS_KEY).mkdir()  # unreadable as a file, even for root
    with pytest.raises(CertFileError, match=r"tls\.key: cannot read private key: Is a directory"):
        load_pair(tmp_path)


def test_mismatched_pair_is_refused(tmp_path: Path) -> None:
    bundle = generate_self_signed()
    other = issue_serving_certificate(bundle.ca)
    write_pair(tmp_path, bundle.serving.cert_pem, other.key_pem)
    with pytest.raises(CertFileError) as err:
        load_pair(tmp_path)
    assert str(err.value) == f"{tmp_path / TLS_KEY} does not match the certificate in {tmp_path / TLS_CRT}"


@pytest.mark.parametrize(
    ("cert", "key", "message"),
    [
        (b"not pem", None, "tls.crt: not a PEM certificate"),
        (None, b"not pem", "tls.key: not an unencrypted PEM private key"),
    ],
)
def test_malformed_files_are_named(
    tmp_path: Path, cert: bytes | None, key: bytes | None, message: str
) -> None:
    write_bundle(tmp_path, generate_self_signed())
    if cert is not None:
        (tmp_path / TLS_CRT).write_bytes(cert)
    if key is not None:
        (tmp_path / TLS_KEY).write_bytes(key)
    with pytest.raises(CertFileError, match=message.replace(".", r"\.")):
        load_pair(tmp_path)


def test_self_signed_into_an_unwritable_place_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CertFileError, match="cannot write self-signed certificates"):
        ensure_self_signed(blocker / "tls")
