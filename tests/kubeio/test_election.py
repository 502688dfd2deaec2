"""Leader election on a coordination.k8s.io/v1 Lease (kubeio/election.py), against the kube-apiserver test
double, as client-go's leaderelection.go behaves: one leader at a time, a clean stop hands the Lease over at
once, a standby takes over within the lease duration after a crash, and a leader that cannot renew, or sees
another holder, stops leading at once. Both uses are covered: the renewal thread (`start`, the binder) and
single attempts from the caller's own loop (`try_acquire_or_renew`, the certs controller)."""

from __future__ import annotations

import functools
import time
from typing import Any

import pytest
from kubeapi import KubeAPIServer
from support import waiting

from kubeio.election import LeaderElector, LeaseError
from kubeio.kube import Kube

TIMING = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.3}
NS, NAME = "kube-system", "dra-capacity-binder"


wait_for = functools.partial(waiting.wait_for, timeout=20.0)


def elector(api: KubeAPIServer, identity: str, **kw: Any) -> LeaderElector:
    return LeaderElector(Kube.of_client(api.api_client()), NS, NAME, identity, **{**TIMING, **kw})


def lease_spec(api: KubeAPIServer) -> dict[str, Any]:
    lease = api.get("leases", NAME, namespace=NS)
    assert lease is not None
    return dict(lease["spec"])


# --- the renewal thread (the binder) ------------------------------------------------------------------------


def _a_leads_b_stands_by(kube_api: KubeAPIServer) -> tuple[LeaderElector, LeaderElector]:
    """Candidate a started and leading, then candidate b started beside it."""
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    a.start()
    wait_for("a leads", a.is_leader)
    b.start()
    return a, b


def test_only_one_candidate_leads(kube_api: KubeAPIServer) -> None:
    a, b = _a_leads_b_stands_by(kube_api)
    time.sleep(1.0)
    assert a.is_leader() and not b.is_leader()
    spec = lease_spec(kube_api)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 3
    a.stop()
    b.stop()


def test_clean_stop_releases_the_lease_for_an_immediate_takeover(kube_api: KubeAPIServer) -> None:
    a, b = _a_leads_b_stands_by(kube_api)
    a.stop(release=True)
    started = time.monotonic()
    wait_for("b leads", b.is_leader, timeout=5)
    assert time.monotonic() - started < 2 * TIMING["retry_period"] + 0.5
    b.stop()


def test_standby_takes_over_within_the_lease_duration_after_a_crash(kube_api: KubeAPIServer) -> None:
    a, b = _a_leads_b_stands_by(kube_api)
    a.stop(release=False)  # a dies: no release, the lease just stops being renewed
    died = time.monotonic()
    wait_for("b leads", b.is_leader, timeout=10)
    took = time.monotonic() - died
    assert took < TIMING["lease_duration"] + 2 * TIMING["retry_period"] + 1.0, took
    spec = lease_spec(kube_api)
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    b.stop()


def test_leader_that_cannot_renew_stops_at_once(kube_api: KubeAPIServer) -> None:
    lost: list[float] = []
    a = elector(kube_api, "a", on_lost=lambda: lost.append(time.monotonic()))
    a.start()
    wait_for("a leads", a.is_leader)
    fault = kube_api.faults.fail("update", "leases", 500, times=0)
    cut = time.monotonic()
    wait_for("a stops leading", lambda: not a.is_leader(), timeout=5)
    assert time.monotonic() - cut <= TIMING["renew_deadline"] + TIMING["retry_period"] + 0.5
    wait_for("on_lost", lambda: lost)
    assert fault.fired >= 1
    assert a.lost.is_set()
    kube_api.faults.clear()
    a.stop()


def test_on_started_fires_once_on_acquiring(kube_api: KubeAPIServer) -> None:
    started: list[str] = []
    a = elector(kube_api, "a", on_started=lambda: started.append("a"))
    a.start()
    wait_for("a leads", a.is_leader)
    time.sleep(3 * TIMING["retry_period"])  # renewals do not fire it again
    assert started == ["a"]
    a.stop()


# --- single attempts from the caller's loop (the certs controller) ------------------------------------------


def test_an_attempt_creates_the_lease_and_renews_it(kube_api: KubeAPIServer) -> None:
    a = elector(kube_api, "a")
    assert a.try_acquire_or_renew() and a.is_leader()
    first = lease_spec(kube_api)
    assert first["holderIdentity"] == "a" and first["leaseTransitions"] == 0
    assert a.try_acquire_or_renew()
    renewed = lease_spec(kube_api)
    assert renewed["acquireTime"] == first["acquireTime"] and renewed["leaseTransitions"] == 0


def test_an_attempt_on_a_lease_held_by_another_fails_until_it_expires(kube_api: KubeAPIServer) -> None:
    now = [100.0]
    a = elector(kube_api, "a")
    b = elector(kube_api, "b", clock=lambda: now[0])
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew() and not b.is_leader()
    now[0] += TIMING["lease_duration"] - 0.5  # by b's own clock, not the holder's renewTime
    assert not b.try_acquire_or_renew()
    now[0] += 1.0
    assert b.try_acquire_or_renew() and b.is_leader()
    spec = lease_spec(kube_api)
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_a_leader_that_sees_another_holder_stops_leading_at_once(kube_api: KubeAPIServer) -> None:
    a = elector(kube_api, "a")
    assert a.try_acquire_or_renew()
    lease = kube_api.get("leases", NAME, namespace=NS)
    assert lease is not None
    lease["spec"]["holderIdentity"] = "intruder"
    kube_api.update(lease)
    assert a.is_leader()  # not seen yet
    assert not a.try_acquire_or_renew()
    assert not a.is_leader()


def test_two_candidates_creating_at_once_conflict_and_only_one_wins(kube_api: KubeAPIServer) -> None:
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    assert a.try_acquire_or_renew()
    kube_api.faults.fail("get", "leases", 404, times=1)
    assert not b.try_acquire_or_renew() and not b.is_leader()
    assert lease_spec(kube_api)["holderIdentity"] == "a"


def test_a_failed_attempt_names_the_lease_and_the_answer(kube_api: KubeAPIServer) -> None:
    a = elector(kube_api, "a")
    kube_api.faults.fail("get", "leases", 500, times=1)
    with pytest.raises(LeaseError, match=r"^lease kube-system/dra-capacity-binder: get: HTTP 500"):
        a.try_acquire_or_renew()
    assert not a.is_leader()


def test_renewal_deadline_bounds_leadership_between_attempts(kube_api: KubeAPIServer) -> None:
    now = [0.0]
    a = elector(kube_api, "a", clock=lambda: now[0])
    assert a.try_acquire_or_renew()
    now[0] += TIMING["renew_deadline"] - 0.1
    assert a.is_leader()
    now[0] += 0.2
    assert not a.is_leader()  # stricter than the lease duration: the deadline has passed


def test_release_hands_the_lease_over(kube_api: KubeAPIServer) -> None:
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    assert a.try_acquire_or_renew()
    a.release()
    assert not a.is_leader()
    spec = lease_spec(kube_api)
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew()


def test_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="lease duration > renew deadline > retry period"):
        LeaderElector(None, NS, NAME, "a", lease_duration=3.0, renew_deadline=3.0, retry_period=1.0)  # type: ignore[arg-type]
    derived = LeaderElector(None, NS, NAME, "a", lease_duration=15.0)  # type: ignore[arg-type]
    assert (derived.renew_deadline, derived.retry_period) == pytest.approx(
        (10.0, 2.0)
    )  # client-go's defaults
