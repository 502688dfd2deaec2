"""Leader election on a coordination.k8s.io/v1 Lease: one leader places, a standby takes over within the lease
duration when the leader dies, a leader that cannot renew stops writing at once, no pod is bound twice."""

from __future__ import annotations

import time
from typing import Any

from binder_harness import (
    bound,
    check_invariants,
    kube_for,
    running_binder,
    seed_cluster,
    successful_bindings,
    wait_for,
)
from gpu_cluster import pod

from allocator.binder.election import LeaderElector

TIMING = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.3}


def elector(api: Any, identity: str, **kw: Any) -> LeaderElector:
    return LeaderElector(kube_for(api), "kube-system", "dra-capacity-binder", identity, **{**TIMING, **kw})


def test_only_one_candidate_leads(kube_api: Any) -> None:
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    a.start()
    wait_for("a leads", a.is_leader)
    b.start()
    time.sleep(1.0)
    assert a.is_leader() and not b.is_leader()
    lease = kube_api.get("leases", "dra-capacity-binder", namespace="kube-system")
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 3
    a.stop()
    b.stop()


def test_clean_stop_releases_the_lease_for_an_immediate_takeover(kube_api: Any) -> None:
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    a.start()
    wait_for("a leads", a.is_leader)
    b.start()
    a.stop(release=True)
    started = time.monotonic()
    wait_for("b leads", b.is_leader, timeout=5)
    assert time.monotonic() - started < 2 * TIMING["retry_period"] + 0.5
    b.stop()


def test_standby_takes_over_within_the_lease_duration_after_a_crash(kube_api: Any) -> None:
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    a.start()
    wait_for("a leads", a.is_leader)
    b.start()
    a.stop(release=False)  # a dies: no release, the lease just stops being renewed
    died = time.monotonic()
    wait_for("b leads", b.is_leader, timeout=10)
    took = time.monotonic() - died
    assert took < TIMING["lease_duration"] + 2 * TIMING["retry_period"] + 1.0, took
    lease = kube_api.get("leases", "dra-capacity-binder", namespace="kube-system")
    assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1
    b.stop()


def test_leader_that_cannot_renew_stops_at_once(kube_api: Any) -> None:
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
    kube_api.faults.clear()
    a.stop()


def test_failover_between_two_binders_binds_every_pod_once(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=2, gpus=2, shares=4)
    for i in range(6):
        kube_api.seed(pod(f"early-{i}"))
    a, b = elector(kube_api, "a"), elector(kube_api, "b")
    with running_binder(kube_api, elector=a) as binder_a, running_binder(kube_api, elector=b) as binder_b:
        a.on_started, b.on_started = binder_a.relist, binder_b.relist  # as `dra-capacity bind` wires them
        a.start()
        wait_for("a leads", a.is_leader)
        b.start()
        wait_for("early pods bound", lambda: len(bound(kube_api)) == 6)
        assert binder_b.metrics.pods_bound._value.get() == 0  # the standby placed nothing
        binder_a.kill()
        a.stop(release=False)
        for i in range(6):
            kube_api.seed(pod(f"late-{i}"))
        wait_for("b leads", b.is_leader, timeout=10)
        wait_for("late pods bound", lambda: len(bound(kube_api)) == 12, timeout=30)
        # the counter moves once the Binding's answer is back, a moment after the double shows the pod bound
        wait_for("b counted 6", lambda: binder_b.metrics.pods_bound._value.get() == 6)
        assert binder_a.metrics.pods_bound._value.get() == 6
        b.stop()
    assert all(n == 1 for n in successful_bindings(kube_api).values())
    check_invariants(kube_api)
