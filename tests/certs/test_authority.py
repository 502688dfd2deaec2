"""The generated CA and serving certificate: EC P-256, the right SANs, and a chain that verifies."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from certs.authority import (
    generate_ca,
    generate_self_signed,
    issue_serving_certificate,
    subject_alternative_names,
)


def _sans(cert: x509.Certificate) -> x509.SubjectAlternativeName:
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value


def test_ca_is_an_ec_p256_ca_for_leaves_only() -> None:
    ca = generate_ca()
    constraints = ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert constraints.ca is True and constraints.path_length == 0
    assert isinstance(ca.key, ec.EllipticCurvePrivateKey) and ca.key.curve.name == "secp256r1"


def test_serving_certificate_names_localhost_and_loopback_always() -> None:
    sans = _sans(generate_self_signed().serving.certificate)
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_serving_certificate_names_every_dns_name() -> None:
    names = ("dra-capacity-webhook.dra-capacity.svc", "dra-capacity-webhook.dra-capacity.svc.cluster.local")
    sans = _sans(generate_self_signed(names).serving.certificate)
    assert sans.get_values_for_type(x509.DNSName) == ["localhost", *names]


def test_ip_literal_dns_names_become_ip_sans() -> None:
    sans = subject_alternative_names(["10.0.0.7", "::1"])
    assert x509.IPAddress(ipaddress.ip_address("10.0.0.7")) in sans
    assert x509.IPAddress(ipaddress.ip_address("::1")) in sans


def test_duplicate_and_blank_names_are_dropped() -> None:
    assert len(subject_alternative_names(["localhost", " ", "a.example", "a.example"])) == 3


def test_serving_certificate_is_for_server_auth_and_signed_by_the_ca() -> None:
    bundle = generate_self_signed()
    leaf = bundle.serving.certificate
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert leaf.issuer == bundle.ca.certificate.subject
    leaf.verify_directly_issued_by(bundle.ca.certificate)


def test_serving_certificate_never_outlives_its_ca() -> None:
    ca = generate_ca(validity=datetime.timedelta(days=1))
    leaf = issue_serving_certificate(ca, validity=datetime.timedelta(days=365))
    assert leaf.certificate.not_valid_after_utc <= ca.certificate.not_valid_after_utc


def test_pem_round_trips() -> None:
    issued = generate_self_signed().serving
    assert x509.load_pem_x509_certificate(issued.cert_pem) == issued.certificate
    assert issued.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")
