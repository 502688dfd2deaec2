"""The webhook's certificate material as stored in its Secret, and its conversions.

The Secret is of type `kubernetes.io/tls`, so anything that reads TLS Secrets (kubelet mounts, ingress
controllers, `kubectl create secret tls`) understands it:

* `tls.crt`, `tls.key`: the serving pair the webhook presents;
* `ca.crt`: the trust bundle, exactly what the webhook configurations' `caBundle` must hold. Outside a CA
  rotation it is one CA; during one it holds the old and the new CA;
* `ca.key`: the key of the CA that signs new serving certificates (the "signer": the CA in `ca.crt` whose
  public key matches). It never reaches the serving container: the chart mounts only the first three keys.

One annotation records when `ca.crt` last changed, so a new serving certificate from a new CA is only put in
place once the API servers have had time to see the new bundle.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from certs.authority import Issued
from certs.files import CA_CRT, TLS_CRT, TLS_KEY
from certs.verify import bundle_pem, key_matches, parse_bundle

CA_KEY = "ca.key"
SECRET_TYPE = "kubernetes.io/tls"
BUNDLE_UPDATED_ANNOTATION = "dra-capacity.io/ca-bundle-updated"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "dra-capacity-certs"


class MaterialError(Exception):
    """Secret contents that cannot be used as managed certificate material; the message names the key."""


@dataclass(frozen=True)
class Material:
    """Everything the Secret holds, parsed. `bundle` lists the trusted CAs, newest first."""

    signer: Issued
    bundle: tuple[x509.Certificate, ...]
    leaf: Issued
    bundle_updated: datetime.datetime | None = None

    def secret_data(self) -> dict[str, bytes]:
        return {
            TLS_CRT: self.leaf.cert_pem,
            TLS_KEY: self.leaf.key_pem,
            CA_CRT: bundle_pem(self.bundle),
            CA_KEY: self.signer.key_pem,
        }

    def annotations(self) -> dict[str, str]:
        if self.bundle_updated is None:
            return {}
        return {BUNDLE_UPDATED_ANNOTATION: format_time(self.bundle_updated)}

    @property
    def bundle_pem(self) -> bytes:
        return bundle_pem(self.bundle)


def format_time(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def decode_data(data: Mapping[str, str] | None) -> dict[str, bytes]:
    """A Secret's base64 `data` as bytes; a value that is not base64 is left out (reported as missing)."""
    out: dict[str, bytes] = {}
    for key, value in (data or {}).items():
        try:
            out[key] = base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            continue
    return out


def encode_data(data: Mapping[str, bytes]) -> dict[str, str]:
    return {k: base64.b64encode(v).decode("ascii") for k, v in sorted(data.items())}


def _load_key(pem: bytes, what: str) -> ec.EllipticCurvePrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise MaterialError(f"{what}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise MaterialError(f"{what}: not an EC private key (this tool issues EC P-256 keys)")
    return key


def _load_cert(pem: bytes, what: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificates(pem)[0]
    except (ValueError, IndexError):
        raise MaterialError(f"{what}: not a PEM certificate") from None


def from_secret(data: Mapping[str, bytes], annotations: Mapping[str, str] | None = None) -> Material:
    """Parse decoded Secret data; MaterialError names the first key that is missing or unusable."""
    for key in (TLS_CRT, TLS_KEY, CA_CRT, CA_KEY):
        if not data.get(key):
            raise MaterialError(f"{key}: missing")
    leaf_cert = _load_cert(data[TLS_CRT], TLS_CRT)
    leaf_key = _load_key(data[TLS_KEY], TLS_KEY)
    if not key_matches(leaf_key, leaf_cert):
        raise MaterialError(f"{TLS_KEY} does not match the certificate in {TLS_CRT}")
    try:
        bundle = tuple(parse_bundle(data[CA_CRT]))
    except ValueError:
        raise MaterialError(f"{CA_CRT}: not a PEM certificate bundle") from None
    signer_key = _load_key(data[CA_KEY], CA_KEY)
    signer_cert = next((c for c in bundle if key_matches(signer_key, c)), None)
    if signer_cert is None:
        raise MaterialError(f"{CA_KEY} matches no certificate in {CA_CRT}")
    updated = parse_time((annotations or {}).get(BUNDLE_UPDATED_ANNOTATION, ""))
    return Material(
        signer=Issued(signer_cert, signer_key),
        bundle=bundle,
        leaf=Issued(leaf_cert, leaf_key),
        bundle_updated=updated,
    )
