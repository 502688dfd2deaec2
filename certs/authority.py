"""A private CA and the webhook's serving certificate (EC P-256), generated with `cryptography`.

The serving certificate always names `localhost` and `127.0.0.1` so `make run` and loopback tests verify it
against the CA, plus every DNS name the caller passes (the webhook Service's names in a cluster).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# A long-lived private CA (5 years) and a 1-year serving certificate, each renewed at two thirds of its life
# (certs/lifetime.py), as cert-manager renews its own: short enough to rotate for real, long enough that a
# stopped controller leaves months to notice.
CA_VALIDITY = datetime.timedelta(days=5 * 365 + 1)
SERVING_VALIDITY = datetime.timedelta(days=365)
# Backdate notBefore a little so a client whose clock lags the server's still accepts a fresh certificate.
CLOCK_SKEW = datetime.timedelta(minutes=5)
DEFAULT_NAMES: tuple[str, ...] = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


@dataclass(frozen=True)
class ServingBundle:
    """What `--self-signed` writes: the CA certificate (for clients) and the serving pair (for the server)."""

    ca: Issued
    serving: Issued


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def generate_ca(
    common_name: str = "dra-capacity webhook CA",
    validity: datetime.timedelta = CA_VALIDITY,
    now: datetime.datetime | None = None,
) -> Issued:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = now or _now()
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(cert, key)


def subject_alternative_names(names: Iterable[str]) -> list[x509.GeneralName]:
    """`localhost`, `127.0.0.1` and `names`, deduplicated in order; IP literals become IP SANs."""
    out: list[x509.GeneralName] = []
    seen: set[str] = set()
    for raw in (*DEFAULT_NAMES, *names):
        name = raw.strip()
        if not name or name in seen:
            continue
        seen.add(name)
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def issue_serving_certificate(
    ca: Issued,
    dns_names: Sequence[str] = (),
    validity: datetime.timedelta = SERVING_VALIDITY,
    now: datetime.datetime | None = None,
) -> Issued:
    """A TLS server certificate signed by `ca` for `localhost`, `127.0.0.1` and `dns_names`.

    Its common name is the first of `dns_names` (the Service name clients dial), else `localhost`.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    sans = subject_alternative_names(dns_names)
    first = next((n for n in dns_names if n.strip()), "localhost").strip()
    now = now or _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, first[:64])]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(min(now + validity, ca.certificate.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    return Issued(cert, key)


def generate_self_signed(dns_names: Sequence[str] = ()) -> ServingBundle:
    """A fresh CA and a serving certificate it signed: what `serve --self-signed` uses."""
    ca = generate_ca()
    return ServingBundle(ca=ca, serving=issue_serving_certificate(ca, dns_names))
