"""`certs check`: what is wrong with the webhook's certificates, each finding with the command that fixes it.

Pure functions over what was read: the Secret's decoded data, each webhook's caBundle, and the certificate
each replica serves. The problems are the recurring webhook outages: an expired certificate, a key that does
not match, a certificate for the wrong Service name (kopf issue 785), and a caBundle that does not verify the
served certificate (`x509: certificate signed by unknown authority`, cert-manager issues 5642, 6350).
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.files import CA_CRT, TLS_CRT, TLS_KEY
from certs.lifetime import describe_remaining, expired, remaining
from certs.material import CA_KEY
from certs.verify import key_matches, missing_names, parse_bundle, verify_server

# A certificate closer than this to its end is a problem: renewal at two thirds of its life should have
# happened long before (four months before the end, for a one-year certificate).
DEFAULT_EXPIRY_WARNING = datetime.timedelta(days=30)


class Severity(enum.Enum):
    PROBLEM = "problem"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    severity: Severity
    subject: str
    message: str
    remedy: str = ""

    def render(self) -> str:
        text = f"{self.severity.value}: {self.subject}: {self.message}"
        if self.remedy:
            text += f"\n  fix: {self.remedy}"
        return text


@dataclass(frozen=True)
class Remedies:
    """The commands a finding points to, already filled in with this installation's flags."""

    rotate_leaf: str
    rotate_ca: str
    init: str
    inject: str


@dataclass(frozen=True)
class Served:
    """What one replica presented on a TLS handshake (or why none could be had)."""

    endpoint: str
    certificate: x509.Certificate | None
    error: str = ""


def _expiry(
    cert: x509.Certificate, subject: str, now: datetime.datetime, warning: datetime.timedelta, remedy: str
) -> list[Finding]:
    left = remaining(cert, now)
    if expired(cert, now):
        return [Finding(Severity.PROBLEM, subject, describe_remaining(left), remedy)]
    if cert.not_valid_before_utc > now:
        return [Finding(Severity.PROBLEM, subject, "not valid yet (check the clocks)", remedy)]
    if left < warning:
        return [Finding(Severity.PROBLEM, subject, describe_remaining(left), remedy)]
    return []


def check_secret(
    where: str,
    data: Mapping[str, bytes] | None,
    dns_names: Sequence[str],
    now: datetime.datetime,
    remedies: Remedies,
    warning: datetime.timedelta = DEFAULT_EXPIRY_WARNING,
) -> tuple[list[Finding], x509.Certificate | None, list[x509.Certificate]]:
    """Findings on the Secret itself; also returns its leaf and its CA bundle for the checks that follow."""
    if data is None:
        return [Finding(Severity.PROBLEM, where, "not found", remedies.init)], None, []
    findings: list[Finding] = []
    leaf: x509.Certificate | None = None
    if not data.get(TLS_CRT):
        findings.append(Finding(Severity.PROBLEM, f"{where} {TLS_CRT}", "missing", remedies.init))
    else:
        try:
            leaf = x509.load_pem_x509_certificates(data[TLS_CRT])[0]
        except (ValueError, IndexError):
            findings.append(
                Finding(Severity.PROBLEM, f"{where} {TLS_CRT}", "not a PEM certificate", remedies.rotate_leaf)
            )
    if leaf is not None:
        subject = f"{where} {TLS_CRT}"
        findings += _expiry(leaf, subject, now, warning, remedies.rotate_leaf)
        missing = missing_names(leaf, dns_names)
        if missing:
            findings.append(
                Finding(
                    Severity.PROBLEM,
                    subject,
                    f"does not name {', '.join(missing)} (SAN mismatch: the API server will refuse it)",
                    remedies.rotate_leaf,
                )
            )
        if data.get(TLS_KEY):
            try:
                key = serialization.load_pem_private_key(data[TLS_KEY], password=None)
            except (ValueError, TypeError):
                findings.append(
                    Finding(
                        Severity.PROBLEM, f"{where} {TLS_KEY}", "not a PEM private key", remedies.rotate_leaf
                    )
                )
            else:
                if not key_matches(key, leaf):
                    findings.append(
                        Finding(
                            Severity.PROBLEM,
                            f"{where} {TLS_KEY}",
                            f"does not match the certificate in {TLS_CRT} (key mismatch)",
                            remedies.rotate_leaf,
                        )
                    )
        else:
            findings.append(Finding(Severity.PROBLEM, f"{where} {TLS_KEY}", "missing", remedies.rotate_leaf))
    bundle: list[x509.Certificate] = []
    if not data.get(CA_CRT):
        findings.append(
            Finding(Severity.NOTE, f"{where} {CA_CRT}", "missing: caBundle cannot be checked against it")
        )
    else:
        try:
            bundle = parse_bundle(data[CA_CRT])
        except ValueError:
            findings.append(
                Finding(Severity.PROBLEM, f"{where} {CA_CRT}", "not a PEM certificate bundle", remedies.init)
            )
        for ca in bundle:
            findings += _expiry(ca, f"{where} {CA_CRT} CA {_cn(ca)!r}", now, warning, remedies.rotate_ca)
        if leaf is not None and bundle and dns_names and not expired(leaf, now):
            reason = verify_server(bundle, leaf, dns_names[-1], now)
            if reason is not None:
                findings.append(
                    Finding(
                        Severity.PROBLEM,
                        f"{where} {CA_CRT}",
                        f"does not verify {TLS_CRT}: {reason}",
                        remedies.rotate_leaf,
                    )
                )
    if data.get(CA_KEY) and bundle:
        try:
            ca_key = serialization.load_pem_private_key(data[CA_KEY], password=None)
        except (ValueError, TypeError):
            ca_key = None
        if ca_key is None or not any(key_matches(ca_key, c) for c in bundle):
            findings.append(
                Finding(
                    Severity.PROBLEM,
                    f"{where} {CA_KEY}",
                    f"matches no CA in {CA_CRT} (key mismatch)",
                    remedies.rotate_ca,
                )
            )
    return findings, leaf, bundle


def _cn(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(names[0].value) if names else cert.subject.rfc4514_string()


def check_ca_bundle(
    where: str,
    ca_bundle: bytes | None,
    leaves: Sequence[tuple[str, x509.Certificate]],
    server_name: str,
    now: datetime.datetime,
    remedies: Remedies,
) -> list[Finding]:
    """A webhook's caBundle must verify every certificate the API server may be shown, for `server_name`."""
    if not ca_bundle:
        return [Finding(Severity.PROBLEM, where, "caBundle is empty", remedies.inject)]
    try:
        bundle = parse_bundle(ca_bundle)
    except ValueError:
        return [Finding(Severity.PROBLEM, where, "caBundle is not a PEM certificate bundle", remedies.inject)]
    findings = []
    for label, leaf in leaves:
        reason = verify_server(bundle, leaf, server_name, now)
        if reason is not None:
            findings.append(
                Finding(
                    Severity.PROBLEM,
                    where,
                    f"caBundle does not verify the certificate {label} for {server_name}: {reason}",
                    remedies.inject,
                )
            )
    return findings


def check_served(
    served: Sequence[Served],
    secret_leaf: x509.Certificate | None,
    dns_names: Sequence[str],
    now: datetime.datetime,
    remedies: Remedies,
    warning: datetime.timedelta = DEFAULT_EXPIRY_WARNING,
) -> list[Finding]:
    """Each replica's certificate: reachable, in date, naming the Service; a stale one is a note (reload)."""
    findings: list[Finding] = []
    for s in served:
        subject = f"replica {s.endpoint}"
        if s.certificate is None:
            findings.append(Finding(Severity.PROBLEM, subject, f"no TLS handshake: {s.error}"))
            continue
        findings += _expiry(s.certificate, subject, now, warning, remedies.rotate_leaf)
        missing = missing_names(s.certificate, dns_names)
        if missing:
            findings.append(
                Finding(Severity.PROBLEM, subject, f"serves a certificate not naming {', '.join(missing)}")
            )
        if secret_leaf is not None and s.certificate != secret_leaf:
            findings.append(
                Finding(
                    Severity.NOTE,
                    subject,
                    "serves a different certificate than the Secret holds (a reload may be pending)",
                )
            )
    return findings


def problems(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.PROBLEM]
