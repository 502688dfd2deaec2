"""The reconcile step (certs/plan.py): what is renewed when, and the order of a CA rotation."""

from __future__ import annotations

import datetime

from support.certmaker import DAY, NAMES, SETTINGS, T0, material

from certs.authority import generate_ca, issue_serving_certificate
from certs.lifetime import renewal_time
from certs.material import from_secret
from certs.plan import Change, Force, Observed, next_step
from certs.verify import issued_by, verify_server


def test_nothing_stored_creates_a_five_year_ca_and_a_one_year_leaf_for_the_service() -> None:
    step = next_step(None, SETTINGS, T0)
    assert step.changes == (Change.CREATED,)
    m = step.material
    ca_life = m.signer.certificate.not_valid_after_utc - T0
    leaf_life = m.leaf.certificate.not_valid_after_utc - T0
    assert 5 * 365 <= ca_life.days <= 5 * 365 + 1
    assert leaf_life.days == 365
    assert verify_server(m.bundle, m.leaf.certificate, "dra-capacity-webhook.dra-system.svc", T0) is None


def test_healthy_material_is_left_alone() -> None:
    m = material()
    step = next_step(m, SETTINGS, T0 + 30 * DAY)
    assert not step.changed and step.material is m and step.waiting is None


def test_the_leaf_is_renewed_at_two_thirds_of_its_life_under_the_same_ca() -> None:
    m = material()
    due = renewal_time(m.leaf.certificate)
    assert not next_step(m, SETTINGS, due - datetime.timedelta(minutes=1)).changed
    step = next_step(m, SETTINGS, due)
    assert step.changes == (Change.LEAF_RENEWED,)
    assert step.material.bundle == m.bundle  # the bundle does not change: nothing to propagate
    assert issued_by(step.material.leaf.certificate, m.signer.certificate)


def test_a_leaf_missing_a_service_name_is_reissued() -> None:
    m = material(names=("old-name.dra-system.svc",))
    step = next_step(m, SETTINGS, T0 + DAY)
    assert step.changes == (Change.LEAF_RENEWED,)
    assert any("does not name" in r for r in step.reasons)


def test_force_leaf_renews_once() -> None:
    m = material()
    step = next_step(m, SETTINGS, T0 + DAY, force=Force(leaf=True))
    assert step.changes == (Change.LEAF_RENEWED,)
    assert step.material.leaf.certificate != m.leaf.certificate


def test_ca_rotation_first_adds_the_new_ca_and_keeps_the_old_leaf() -> None:
    m = material()
    step = next_step(m, SETTINGS, T0 + DAY, force=Force(ca=True))
    assert step.changes == (Change.CA_ADDED,)
    new = step.material
    assert len(new.bundle) == 2 and new.bundle[1] == m.signer.certificate
    assert new.leaf == m.leaf  # the old leaf keeps serving while the new CA propagates
    assert new.signer.certificate == new.bundle[0]
    assert step.waiting is not None


def test_the_ca_is_renewed_before_it_expires() -> None:
    m = material(ca_days=300, leaf_days=30)
    step = next_step(m, SETTINGS, renewal_time(m.signer.certificate))
    assert Change.CA_ADDED in step.changes


def test_the_leaf_switches_only_after_the_propagation_delay_and_when_configs_trust_the_new_ca() -> None:
    m = next_step(material(), SETTINGS, T0, force=Force(ca=True)).material
    early = next_step(m, SETTINGS, T0 + datetime.timedelta(seconds=30))
    assert not early.changed and "reach the API servers" in (early.waiting or "")
    untrusted = next_step(m, SETTINGS, T0 + DAY, Observed(configs_trust_signer=False))
    assert not untrusted.changed and "webhook configuration" in (untrusted.waiting or "")
    step = next_step(m, SETTINGS, T0 + datetime.timedelta(seconds=61))
    assert step.changes == (Change.LEAF_FROM_NEW_CA,)
    assert issued_by(step.material.leaf.certificate, m.signer.certificate)
    assert len(step.material.bundle) == 2  # the old CA stays: replicas may still serve the old leaf


def test_the_old_ca_stays_until_every_replica_serves_the_new_leaf() -> None:
    old = material()
    m = next_step(old, SETTINGS, T0, force=Force(ca=True)).material
    m = next_step(m, SETTINGS, T0 + DAY).material
    new_leaf, old_leaf = m.leaf.certificate, old.leaf.certificate
    now = T0 + DAY + datetime.timedelta(seconds=1)
    blind = next_step(m, SETTINGS, now, Observed(served=None))
    assert not blind.changed and "replicas" in (blind.waiting or "")
    nobody = next_step(m, SETTINGS, now, Observed(served=[]))
    assert not nobody.changed
    half = next_step(m, SETTINGS, now, Observed(served=[new_leaf, old_leaf]))
    assert not half.changed and "1 of 2" in (half.waiting or "")
    done = next_step(m, SETTINGS, now, Observed(served=[new_leaf, new_leaf]))
    assert done.changes == (Change.OLD_CA_RETIRED,)
    assert done.material.bundle == (m.signer.certificate,)
    assert done.waiting is None


def test_an_expired_old_ca_is_dropped_from_the_bundle() -> None:
    stale = generate_ca(validity=DAY, now=T0 - 10 * DAY)
    m = material()
    m = type(m)(signer=m.signer, bundle=(*m.bundle, stale.certificate), leaf=m.leaf)
    step = next_step(m, SETTINGS, T0 + DAY, Observed(served=None))
    assert Change.EXPIRED_CA_DROPPED in step.changes
    assert step.material.bundle == (m.signer.certificate,)


def test_an_expired_leaf_from_the_old_ca_is_replaced_without_waiting() -> None:
    m = material(leaf_days=1)
    m = next_step(m, SETTINGS, T0, force=Force(ca=True)).material
    step = next_step(m, SETTINGS, T0 + 2 * DAY, Observed(configs_trust_signer=False))
    assert step.changes == (Change.LEAF_FROM_NEW_CA,)


def test_material_round_trips_through_secret_data() -> None:
    m = next_step(material(), SETTINGS, T0, force=Force(ca=True)).material
    back = from_secret(m.secret_data(), m.annotations())
    assert back.bundle == m.bundle
    assert back.signer.certificate == m.signer.certificate
    assert back.leaf.certificate == m.leaf.certificate
    assert back.bundle_updated == T0


def test_a_leaf_never_outlives_its_ca() -> None:
    ca = generate_ca(validity=10 * DAY, now=T0)
    leaf = issue_serving_certificate(ca, NAMES, 365 * DAY, now=T0)
    assert leaf.certificate.not_valid_after_utc == ca.certificate.not_valid_after_utc
