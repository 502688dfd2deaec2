"""Two binders under one Lease: the standby places nothing, takes over within the lease duration when the
leader dies, and no pod is bound twice (the elector itself: tests/kubeio/test_election.py)."""

from __future__ import annotations

from typing import Any

from support.binder_harness import (
    bound,
    check_invariants,
    kube_for,
    running_binder,
    seed_cluster,
    successful_bindings,
    wait_for,
)
from support.gpu_cluster import pod

from kubeio.election import LeaderElector

TIMING = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.3}


def elector(api: Any, identity: str, **kw: Any) -> LeaderElector:
    return LeaderElector(kube_for(api), "kube-system", "dra-capacity-binder", identity, **{**TIMING, **kw})


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
