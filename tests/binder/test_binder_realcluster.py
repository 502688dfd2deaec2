"""The binder on the real control plane (kube-apiserver v1.37.2, its controllers, kwok nodes with
NVIDIA-shaped slices), as the chart's binder ServiceAccount: chaos with two real `dra-capacity bind`
processes (issue 25; with preemptors, the leader killed once it nominates: issue 41), and the fencing test
of tests/binder/test_fencing.py on real objects (issue 28).

One cluster for the module. The full chaos run (30 cycles or more) is `make binder-chaos-real`
(scripts/binder_chaos_real.py); CI runs a seeded 10-cycle one here.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.binder_harness import check_invariants
from support.gpu_cluster import pod
from support.real_binders import BINDER_NAMESPACE, Chaos, RealApi, install_binder_rbac, state, wait
from support.real_cluster import module_cluster

from binder.controller import Binder, BinderOptions
from kubeio.election import LeaderElector
from kubeio.kube import Kube, load_configuration
from localcluster.cluster import Cluster, ClusterConfig
from resourceapi.gates import FeatureGates

pytestmark = [pytest.mark.realcluster, pytest.mark.slow]

CYCLES = int(os.environ.get("DRA_CAPACITY_REAL_CHAOS_CYCLES", "10"))
SEED = int(os.environ.get("DRA_CAPACITY_REAL_CHAOS_SEED", "25"))
PREEMPTION = 0.4  # the share of cycles (from the third) with a preemptor, the leader killed once it nominates
TIMING: dict[str, Any] = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}


cluster = module_cluster("binder-real", ClusterConfig(nodes=2, gpus_per_node=2, shares=4))


@pytest.fixture(scope="module")
def binder_kubeconfig(cluster: Cluster) -> Path:
    return install_binder_rbac(cluster)


def test_kill_and_freeze_the_leader_keep_the_invariants(
    cluster: Cluster, binder_kubeconfig: Path, tmp_path: Path
) -> None:
    chaos = Chaos(cluster, binder_kubeconfig, "chaos", tmp_path / "binders", SEED, PREEMPTION)
    result = chaos.run(CYCLES)
    print("\n" + "\n".join(chaos.log))
    print(
        f"real chaos: {result.cycles} cycles ({dict(result.actions)}), {result.pods_created} pods, "
        f"{result.bound} bound, {result.seconds:.0f} s; pending: {dict(result.unschedulable)}; "
        f"victims by their preemptor's fate: {dict(result.preemptions)}"
    )
    assert sum(result.actions.values()) == CYCLES and result.actions["kill"] and result.actions["freeze"]
    assert result.actions["kill-nominated"] + result.actions["kill-preempting"], "no preemption cycle"
    assert result.bound > 0
    chaos.cleanup()


class FreezableLease:
    """The lease check of the old leader, with a freeze between the check and the write it guards (as SIGSTOP
    can fall there): once armed on a thread, the next check on that thread is made, then the thread waits
    until `thaw`, and returns the answer it had before the freeze."""

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector
        self.armed: set[int] = set()
        self.frozen_thread: int | None = None
        self.frozen = threading.Event()
        self.thaw = threading.Event()
        self.answered = (
            threading.Event()
        )  # the frozen thread checked the lease again: its write got its answer

    def arm(self) -> None:
        self.armed.add(threading.get_ident())

    def __call__(self) -> bool:
        leading = self.elector.is_leader()
        me = threading.get_ident()
        if me in self.armed:
            self.armed.discard(me)
            self.frozen_thread = me
            self.frozen.set()
            self.thaw.wait(60)
        elif me == self.frozen_thread and self.thaw.is_set():
            self.answered.set()
        return leading


def test_a_stale_allocation_from_a_frozen_leader_meets_the_fence_on_the_real_server(
    cluster: Cluster, binder_kubeconfig: Path
) -> None:
    """test_fencing.py's first case on the real control plane: leader A freezes right after its lease check
    for p1's `status.allocation`; B takes the (real) Lease and fences p1's claim; A's write then goes out
    (B places nothing until it is answered) and gets 409; B then binds p1, and nothing is double-booked."""
    ns = "fencing"
    api = RealApi(cluster, ns)
    Chaos(cluster, binder_kubeconfig, ns, Path(cluster.workdir) / "fencing", 0).setup()
    kube_a, kube_b = (Kube(load_configuration(str(binder_kubeconfig))) for _ in range(2))
    elector_a = LeaderElector(kube_a, BINDER_NAMESPACE, "fencing-test", "a", **TIMING)
    elector_b = LeaderElector(kube_b, BINDER_NAMESPACE, "fencing-test", "b", **TIMING)
    lease_a = FreezableLease(elector_a)
    binders: list[Binder] = []
    b_relisted = threading.Event()  # B took the lease: relisted and fenced

    def hook_a(step: str, obj: dict[str, Any]) -> None:
        if step == "claim-created" and obj["metadata"]["name"] == "p1":
            lease_a.arm()  # the next check on this thread guards the claim's status write

    def lease_b() -> bool:
        """B's check; its scheduling thread first lets A's stale write go, once B has taken the lease."""
        if (
            threading.current_thread().name == "binder-scheduler"
            and b_relisted.is_set()
            and not lease_a.thaw.is_set()
        ):
            lease_a.thaw.set()
            lease_a.answered.wait(30)
        return elector_b.is_leader()

    options: dict[str, Any] = {"initial_backoff": 0.05, "max_backoff": 0.5, "watch_timeout": 30.0}
    gates = FeatureGates.parse("")
    binders.append(
        Binder(kube_a, gates, options=BinderOptions(instance="a", hook=hook_a, **options), is_leader=lease_a)
    )
    binders.append(Binder(kube_b, gates, options=BinderOptions(instance="b", **options), is_leader=lease_b))
    binder_a, binder_b = binders

    def b_started() -> None:
        binder_b.relist()
        b_relisted.set()

    elector_a.on_started, elector_b.on_started = binder_a.relist, b_started
    try:
        binder_a.start()
        elector_a.start()
        cluster.create(pod("p1", ns))
        assert lease_a.frozen.wait(30), "A never reached p1's allocation write"
        [stale_claim] = [c["metadata"]["name"] for c in api.list("resourceclaims")]
        elector_a.stop(release=False)  # A is frozen: no renewals
        binder_b.start()
        elector_b.start()
        assert lease_a.answered.wait(30), "A's stale write never came back"
        assert binder_a.metrics.conflicts.labels("update-claim-status")._value.get() == 1  # the 409
        assert binder_b.fenced == 1
        p1 = wait(
            "B binds p1",
            lambda: (lambda p: p if p["spec"].get("nodeName") else None)(
                cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/p1")[1]
            ),
            30,
        )
        wait("B settled", lambda: binder_b.settled(binder_b.pending_keys()), 30)
        assert p1["status"]["extendedResourceClaimStatus"]["resourceClaimName"] != stale_claim
        assert all(
            c["metadata"]["name"] != stale_claim or not (c.get("status") or {}).get("allocation")
            for c in api.list("resourceclaims")
        )
        before = state(api)
        time.sleep(1.0)
        assert state(api) == before
        check_invariants(api)
    finally:
        lease_a.thaw.set()
        binder_a.kill()
        binder_b.stop()
        elector_b.stop()
        kube_a.close()
        kube_b.close()
        cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
