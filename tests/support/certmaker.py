"""Certificates at chosen instants and lifetimes for the plan and check tests (real cryptography objects)."""

from __future__ import annotations

import datetime

from certs.authority import Issued, generate_ca, issue_serving_certificate
from certs.material import Material
from certs.operations import service_dns_names
from certs.plan import Settings

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
NAMES = service_dns_names("dra-capacity-webhook", "dra-system")
SETTINGS = Settings(dns_names=NAMES, propagation_delay=datetime.timedelta(seconds=60))
DAY = datetime.timedelta(days=1)


def material(
    now: datetime.datetime = T0,
    ca_days: float = 5 * 365,
    leaf_days: float = 365,
    names: tuple[str, ...] = NAMES,
    ca: Issued | None = None,
) -> Material:
    ca = ca or generate_ca(validity=datetime.timedelta(days=ca_days), now=now)
    leaf = issue_serving_certificate(ca, names, datetime.timedelta(days=leaf_days), now=now)
    return Material(signer=ca, bundle=(ca.certificate,), leaf=leaf, bundle_updated=now)
