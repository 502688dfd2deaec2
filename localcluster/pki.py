"""The control plane's certificates: one CA for serving and client certificates, the admin's and each
component's client certificate (their user and groups are the certificate's CN and O, as upstream's
x509 authenticator reads them), and the ServiceAccount token signing key."""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import Issued, generate_ca, issue_serving_certificate

__all__ = ["Issued", "generate_ca", "issue_client_certificate", "issue_serving_certificate", "write_pair"]


def issue_client_certificate(
    ca: Issued, user: str, groups: tuple[str, ...] = (), validity: datetime.timedelta | None = None
) -> Issued:
    """A TLS client certificate for `user` in `groups` (CN and O), signed by `ca`."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + (validity or datetime.timedelta(days=30)))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return Issued(cert, key)


def write_pair(issued: Issued, directory: Path, stem: str) -> tuple[Path, Path]:
    """`<stem>.crt` and `<stem>.key` (mode 0600) in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    cert.write_bytes(issued.cert_pem)
    key.write_bytes(issued.key_pem)
    key.chmod(0o600)
    return cert, key


def write_signing_key(directory: Path) -> tuple[Path, Path]:
    """The ServiceAccount token signing key (EC P-256, ES256) and its public half: `sa.key`, `sa.pub`."""
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = directory / "sa.key", directory / "sa.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    private.chmod(0o600)
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public
