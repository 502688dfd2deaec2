"""Does a trust bundle verify a serving certificate for a name, as the API server's TLS client would?

The API server dials `https://<service>.<namespace>.svc:<port>` and verifies the chain against the webhook's
`caBundle` and the host name against the SANs (Go crypto/x509). `cryptography`'s RFC 5280 verifier does the
same checks here: chain to an anchor in the bundle, validity at `now`, serverAuth usage, and the DNS name.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError


def parse_bundle(pem: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle; ValueError when there is none or one is malformed."""
    if not pem.strip():
        raise ValueError("empty")
    return x509.load_pem_x509_certificates(pem)


def bundle_pem(certs: Sequence[x509.Certificate]) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def verify_server(
    bundle: Sequence[x509.Certificate],
    leaf: x509.Certificate,
    name: str,
    now: datetime.datetime,
    intermediates: Sequence[x509.Certificate] = (),
) -> str | None:
    """None when `bundle` verifies `leaf` for `name` at `now`; otherwise the reason, in one line."""
    if not bundle:
        return "the bundle holds no certificate"
    subject: x509.GeneralName
    try:
        subject = x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        subject = x509.DNSName(name)
    try:
        verifier = PolicyBuilder().store(Store(list(bundle))).time(now).build_server_verifier(subject)
        verifier.verify(leaf, list(intermediates))
    except VerificationError as exc:
        return str(exc)
    except ValueError as exc:
        return str(exc)
    return None


def issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    """True when `ca` signed `leaf` (signature and issuer name; validity is not checked here)."""
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def public_der(obj: PrivateKeyTypes | x509.Certificate) -> bytes:
    return obj.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_matches(key: PrivateKeyTypes, cert: x509.Certificate) -> bool:
    return public_der(key) == public_der(cert)


def dns_names(cert: x509.Certificate) -> list[str]:
    """The DNS and IP SANs of `cert`, as strings."""
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [
        *sans.get_values_for_type(x509.DNSName),
        *(str(i) for i in sans.get_values_for_type(x509.IPAddress)),
    ]


def missing_names(cert: x509.Certificate, names: Sequence[str]) -> list[str]:
    """The `names` that `cert`'s SANs do not cover (exact match; we never issue wildcards)."""
    have = {n.lower() for n in dns_names(cert)}
    return [n for n in names if n.lower() not in have]
