"""One reconcile step for the webhook's certificates, as a pure function of what is stored and what is served.

`init`, `rotate` and the controller all call `next_step` and write what it returns. The order of a CA
rotation is what keeps every request working (the failure cert-manager issue 6350 describes, and its
`CAInjectorMerging` fix):

1. a new CA is generated and *added* to the trust bundle (`ca.crt` and every `caBundle`); the old serving
   certificate stays, so the API servers trust both the certificate in use and the one to come;
2. once the grown bundle is in every webhook configuration and has had `propagation_delay` to reach the API
   servers, a serving certificate from the new CA replaces the old one; replicas hot-reload it;
3. only when every replica is seen serving a certificate from the new CA is the old CA dropped.

A serving-certificate renewal under the same CA needs none of this: the bundle does not change.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cryptography import x509

from certs.authority import (
    CA_VALIDITY,
    SERVING_VALIDITY,
    Issued,
    generate_ca,
    issue_serving_certificate,
)
from certs.lifetime import expired, renewal_due
from certs.material import Material
from certs.verify import issued_by, key_matches, missing_names

DEFAULT_PROPAGATION_DELAY = datetime.timedelta(seconds=60)


class Change(enum.Enum):
    """What a step did, for logs, events and the command's output."""

    CREATED = "created a CA and a serving certificate"
    CA_ADDED = "added a new CA to the trust bundle (the serving certificate switches to it next)"
    LEAF_FROM_NEW_CA = "issued a serving certificate from the new CA"
    LEAF_RENEWED = "renewed the serving certificate"
    OLD_CA_RETIRED = "removed the old CA from the trust bundle: every replica serves the new certificate"
    EXPIRED_CA_DROPPED = "removed an expired CA from the trust bundle"


@dataclass(frozen=True)
class Settings:
    """What the certificates must be: the names the API server dials, and the lifetimes."""

    dns_names: tuple[str, ...]
    ca_validity: datetime.timedelta = CA_VALIDITY
    leaf_validity: datetime.timedelta = SERVING_VALIDITY
    propagation_delay: datetime.timedelta = DEFAULT_PROPAGATION_DELAY
    ca_common_name: str = "dra-capacity webhook CA"


@dataclass(frozen=True)
class Observed:
    """What the cluster shows besides the Secret.

    `configs_trust_signer`: every managed webhook configuration's caBundle already holds the signing CA.
    `served`: the serving certificate of every ready replica, or None when the replicas cannot be seen.
    """

    configs_trust_signer: bool = True
    served: Sequence[x509.Certificate] | None = None


@dataclass(frozen=True)
class Force:
    leaf: bool = False
    ca: bool = False


@dataclass(frozen=True)
class Step:
    """The material to store (unchanged when `changes` is empty) and what, if anything, is awaited."""

    material: Material
    changes: tuple[Change, ...] = ()
    waiting: str | None = None
    reasons: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _new_leaf(signer: Issued, settings: Settings, now: datetime.datetime) -> Issued:
    return issue_serving_certificate(signer, settings.dns_names, settings.leaf_validity, now=now)


def create(settings: Settings, now: datetime.datetime) -> Material:
    ca = generate_ca(settings.ca_common_name, settings.ca_validity, now=now)
    return Material(
        signer=ca, bundle=(ca.certificate,), leaf=_new_leaf(ca, settings, now), bundle_updated=now
    )


def _leaf_problem(material: Material, settings: Settings, now: datetime.datetime) -> str | None:
    """Why the serving certificate must be replaced under the same CA, or None."""
    leaf = material.leaf.certificate
    if not key_matches(material.leaf.key, leaf):
        return "tls.key does not match tls.crt"
    missing = missing_names(leaf, settings.dns_names)
    if missing:
        return f"the serving certificate does not name {', '.join(missing)}"
    if expired(leaf, now):
        return "the serving certificate has expired"
    if renewal_due(leaf, now):
        return "the serving certificate is past two thirds of its life"
    if leaf.not_valid_after_utc > material.signer.certificate.not_valid_after_utc:
        return "the serving certificate outlives its CA"
    return None


def next_step(
    current: Material | None,
    settings: Settings,
    now: datetime.datetime,
    observed: Observed | None = None,
    force: Force | None = None,
) -> Step:
    """The next safe change towards healthy certificates (see the module docstring), or none."""
    observed = observed or Observed()
    force = force or Force()
    if current is None:
        return Step(create(settings, now), (Change.CREATED,))
    material = current
    changes: list[Change] = []
    reasons: list[str] = []

    # Expired CAs verify nothing: drop them (never the signer, which is replaced below first).
    live = tuple(c for c in material.bundle if c == material.signer.certificate or not expired(c, now))
    if len(live) != len(material.bundle):
        material = replace(material, bundle=live, bundle_updated=now)
        changes.append(Change.EXPIRED_CA_DROPPED)

    leaf_from_signer = issued_by(material.leaf.certificate, material.signer.certificate)
    signer = material.signer.certificate
    if leaf_from_signer and (force.ca or renewal_due(signer, now)):
        reasons.append("forced" if force.ca else "the CA is past two thirds of its life")
        new_ca = generate_ca(settings.ca_common_name, settings.ca_validity, now=now)
        material = replace(
            material, signer=new_ca, bundle=(new_ca.certificate, *material.bundle), bundle_updated=now
        )
        changes.append(Change.CA_ADDED)
        return Step(material, tuple(changes), "the new CA to reach the API servers", tuple(reasons))

    if not leaf_from_signer:
        ready_at = (material.bundle_updated or now) + settings.propagation_delay
        leaf_dead = expired(material.leaf.certificate, now)
        if not observed.configs_trust_signer and not leaf_dead:
            return Step(material, tuple(changes), "every webhook configuration to trust the new CA")
        if now < ready_at and not leaf_dead:
            when = ready_at.strftime("%H:%M:%SZ")
            return Step(material, tuple(changes), f"the new CA to reach the API servers (until {when})")
        material = replace(material, leaf=_new_leaf(material.signer, settings, now))
        changes.append(Change.LEAF_FROM_NEW_CA)
        return Step(material, tuple(changes), "every replica to serve the new certificate", tuple(reasons))

    problem = _leaf_problem(material, settings, now)
    if problem is not None or force.leaf:
        reasons.append(problem or "forced")
        material = replace(material, leaf=_new_leaf(material.signer, settings, now))
        changes.append(Change.LEAF_RENEWED)

    old = [c for c in material.bundle if c != material.signer.certificate]
    if not old:
        return Step(material, tuple(changes), None, tuple(reasons))
    served = observed.served
    if served is None:
        return Step(material, tuple(changes), "a view of the replicas (keeping the old CA)", tuple(reasons))
    behind = [c for c in served if not issued_by(c, material.signer.certificate)]
    if not served or behind or Change.LEAF_RENEWED in changes:
        total = len(served)
        return Step(
            material,
            tuple(changes),
            f"every replica to serve the new certificate ({total - len(behind)} of {total} do)",
            tuple(reasons),
        )
    material = replace(material, bundle=(material.signer.certificate,), bundle_updated=now)
    changes.append(Change.OLD_CA_RETIRED)
    return Step(material, tuple(changes), None, tuple(reasons))
