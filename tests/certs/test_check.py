"""`certs check` findings (certs/check.py): each problem is found, named, and comes with the fix to run."""

from __future__ import annotations

import datetime

from support.certmaker import DAY, NAMES, T0, material

from certs.authority import generate_ca, issue_serving_certificate
from certs.check import Remedies, Served, Severity, check_ca_bundle, check_secret, check_served, problems
from certs.material import Material

REMEDIES = Remedies(rotate_leaf="ROTATE-LEAF", rotate_ca="ROTATE-CA", init="INIT", inject="INJECT")
WHERE = "secret dra-system/tls"
SVC = NAMES[-1]


def _check(m: Material, now: datetime.datetime = T0 + DAY, **changes: bytes) -> list[str]:
    data = {**m.secret_data(), **changes}
    findings, _, _ = check_secret(WHERE, data, NAMES, now, REMEDIES)
    return [f.render() for f in problems(findings)]


def test_healthy_material_has_no_problem() -> None:
    assert _check(material()) == []


def test_an_expired_leaf_is_reported_with_the_rotate_command() -> None:
    (line,) = _check(material(leaf_days=10), now=T0 + 11 * DAY)
    assert "tls.crt: expired 24 hours ago" in line
    assert "fix: ROTATE-LEAF" in line


def test_a_leaf_close_to_expiry_is_a_problem() -> None:
    (line,) = _check(material(leaf_days=40), now=T0 + 20 * DAY)
    assert "expires in 20 days" in line


def test_an_expiring_ca_points_to_a_ca_rotation() -> None:
    lines = _check(material(ca_days=40, leaf_days=5), now=T0 + 15 * DAY)
    assert any("CA 'dra-capacity webhook CA'" in x and "ROTATE-CA" in x for x in lines)


def test_a_key_that_does_not_match_the_certificate_is_a_key_mismatch() -> None:
    other = material()
    (line,) = _check(material(), **{"tls.key": other.leaf.key_pem})
    assert "tls.key: does not match the certificate in tls.crt (key mismatch)" in line


def test_a_ca_key_matching_no_ca_is_a_key_mismatch() -> None:
    other = material()
    (line,) = _check(material(), **{"ca.key": other.signer.key_pem})
    assert "ca.key: matches no CA in ca.crt" in line


def test_a_certificate_for_another_service_is_a_san_mismatch() -> None:
    lines = _check(material(names=("elsewhere.dra-system.svc",)))
    assert any("SAN mismatch" in x and SVC in x for x in lines)


def test_a_ca_bundle_that_does_not_verify_the_served_certificate_is_reported() -> None:
    m = material()
    foreign = generate_ca(now=T0)
    findings = check_ca_bundle(
        "validatingwebhookconfiguration/x webhook v",
        foreign.cert_pem,
        [("served by 10.0.0.1:8443", m.leaf.certificate)],
        SVC,
        T0 + DAY,
        REMEDIES,
    )
    (f,) = findings
    assert f.severity is Severity.PROBLEM
    assert "caBundle does not verify the certificate served by 10.0.0.1:8443" in f.message
    assert f.remedy == "INJECT"
    assert check_ca_bundle("x", m.bundle_pem, [("served", m.leaf.certificate)], SVC, T0 + DAY, REMEDIES) == []


def test_an_empty_ca_bundle_is_reported() -> None:
    (f,) = check_ca_bundle("cfg", None, [], SVC, T0, REMEDIES)
    assert f.message == "caBundle is empty"


def test_a_missing_secret_points_to_init() -> None:
    findings, _, _ = check_secret(WHERE, None, NAMES, T0, REMEDIES)
    assert [(f.message, f.remedy) for f in findings] == [("not found", "INIT")]


def test_a_replica_serving_an_older_certificate_is_a_note_and_an_unreachable_one_a_problem() -> None:
    m = material()
    newer = issue_serving_certificate(m.signer, NAMES, 365 * DAY, now=T0)
    findings = check_served(
        [Served("10.0.0.1:8443", m.leaf.certificate), Served("10.0.0.2:8443", None, "connection refused")],
        newer.certificate,
        NAMES,
        T0 + DAY,
        REMEDIES,
    )
    assert [(f.severity, f.subject) for f in findings] == [
        (Severity.NOTE, "replica 10.0.0.1:8443"),
        (Severity.PROBLEM, "replica 10.0.0.2:8443"),
    ]
