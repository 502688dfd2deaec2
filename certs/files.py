"""The TLS directory: `ca.crt`, `tls.crt`, `tls.key` (the layout of a Kubernetes TLS Secret mount).

Writes are atomic per file (temporary file, fsync, rename) and keys are 0600. Reads verify that the key
matches the certificate, so a pair caught half-rotated on disk is reported, never served.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from certs.authority import ServingBundle, generate_self_signed

CA_CRT = "ca.crt"
TLS_CRT = "tls.crt"
TLS_KEY = "tls.key"


class CertFileError(Exception):
    """A certificate or key file that is missing, unreadable, malformed or not a matching pair; names it."""


@dataclass(frozen=True)
class ServingPair:
    """A verified serving pair as read from disk: the exact bytes, and the parsed leaf certificate."""

    cert_pem: bytes
    key_pem: bytes
    leaf: x509.Certificate

    @property
    def not_valid_after(self) -> datetime.datetime:
        return self.leaf.not_valid_after_utc


def atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` with `data` in one rename: a reader sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_pair(directory: Path, cert_pem: bytes, key_pem: bytes) -> None:
    """Write `tls.key` (0600) then `tls.crt` (0644); a reader between the two renames sees a mismatch."""
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / TLS_KEY, key_pem, 0o600)
    atomic_write(directory / TLS_CRT, cert_pem, 0o644)


def write_bundle(directory: Path, bundle: ServingBundle) -> None:
    """Write `ca.crt` and the serving pair."""
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(directory / CA_CRT, bundle.ca.cert_pem, 0o644)
    write_pair(directory, bundle.serving.cert_pem, bundle.serving.key_pem)


def has_serving_files(directory: Path) -> bool:
    """True when `tls.crt` or `tls.key` exists (then `--self-signed` leaves the directory alone)."""
    return (directory / TLS_CRT).exists() or (directory / TLS_KEY).exists()


def ensure_self_signed(directory: Path, dns_names: Sequence[str] = ()) -> bool:
    """Generate a CA and a serving pair into `directory` unless it already holds one; True if generated."""
    if has_serving_files(directory):
        return False
    try:
        write_bundle(directory, generate_self_signed(dns_names))
    except OSError as exc:
        raise CertFileError(f"{directory}: cannot write self-signed certificates: {_reason(exc)}") from None
    return True


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CertFileError(
            f"{path}: {what} not found (mount the serving certificate there, or pass --self-signed)"
        ) from None
    except OSError as exc:
        raise CertFileError(f"{path}: cannot read {what}: {_reason(exc)}") from None


def _public_der(key: PrivateKeyTypes | x509.Certificate) -> bytes:
    public = key.public_key()
    return public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def parse_pair(cert_pem: bytes, key_pem: bytes, cert_name: str, key_name: str) -> ServingPair:
    """Parse and cross-check a pair held in memory; `cert_name`/`key_name` name its sources in errors."""
    try:
        chain = x509.load_pem_x509_certificates(cert_pem)
    except ValueError:
        raise CertFileError(f"{cert_name}: not a PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise CertFileError(f"{key_name}: not an unencrypted PEM private key") from None
    except Exception as exc:  # cryptography raises UnsupportedAlgorithm for exotic keys
        raise CertFileError(f"{key_name}: unsupported private key: {exc}") from None
    leaf = chain[0]
    if _public_der(key) != _public_der(leaf):
        raise CertFileError(f"{key_name} does not match the certificate in {cert_name}")
    return ServingPair(cert_pem=cert_pem, key_pem=key_pem, leaf=leaf)


def load_pair(directory: Path) -> ServingPair:
    """Read `tls.crt` and `tls.key` from `directory`; raises CertFileError naming the file that is wrong."""
    cert_path, key_path = directory / TLS_CRT, directory / TLS_KEY
    cert_pem = _read(cert_path, "serving certificate")
    key_pem = _read(key_path, "private key")
    return parse_pair(cert_pem, key_pem, str(cert_path), str(key_path))
