"""Issue 28: a deposed leader cannot overwrite. A leader frozen with a write already past its lease check
sends that write after the standby has taken over and written; the write must not alter what the new leader
wrote.
Every conflicting write is conditional (resourceVersion/uid: binder/writes.py), and the new leader
fences the claims of pods still being placed before it places anything (binder/fence.py).

The freeze is the double's `hold` fault: the old leader's write is sent (its lease check passed) and held at
the server until the test releases it, after the new leader wrote; the old leader's elector stops renewing,
as a frozen process's does."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from support.binder_harness import (
    bound,
    check_invariants,
    extended_claims,
    kube_for,
    pods,
    running_binder,
    seed_cluster,
    wait_for,
)
from support.gpu_cluster import pod

from binder.controller import Binder
from binder.names import FENCE_ANNOTATION
from kubeio.election import LeaderElector

TIMING = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}


def _elector(api: Any, identity: str) -> LeaderElector:
    return LeaderElector(kube_for(api), "kube-system", "dra-capacity-binder", identity, **TIMING)


@contextlib.contextmanager
def _leader(api: Any, identity: str, **options: Any) -> Iterator[tuple[Binder, LeaderElector]]:
    elector = _elector(api, identity)
    with running_binder(api, elector=elector, instance=identity, **options) as binder:
        elector.on_started = binder.relist  # as `dra-capacity bind` wires it
        elector.start()
        try:
            yield binder, elector
        finally:
            elector.stop(release=False)


def _state(api: Any) -> dict[str, Any]:
    """What a leader wrote and others read: pods' nodes, conditions and claim links; claims' allocations."""
    out: dict[str, Any] = {}
    for p in pods(api):
        status = p.get("status") or {}
        conds = [(c["type"], c["status"], c.get("reason")) for c in status.get("conditions") or []]
        out[f"pod/{p['metadata']['name']}"] = (
            p["spec"].get("nodeName"),
            sorted(conds),
            status.get("extendedResourceClaimStatus"),
        )
    for c in extended_claims(api):
        meta = c["metadata"]
        out[f"claim/{meta['name']}"] = (meta.get("finalizers"), (c.get("status") or {}).get("allocation"))
    return out


def _answered(
    api: Any, fault: Any, verb: str, resource: str, subresource: str, name: str | None = None
) -> int:
    """The status the double answered the held request with, once it did."""

    def status() -> int:
        for r in api.requests_for(verb, resource):
            if r.subresource == subresource and r.fault == "hold" and (name is None or r.name == name):
                return r.status
        return 0

    return int(wait_for("the held write answered", status))


def test_a_stale_allocation_cannot_double_book_shares_the_new_leader_gave_away(kube_api: Any) -> None:
    """A freezes with p1's `status.allocation` sent; B takes over and gives the GPU's two shares to p2 and
    p3 (higher priority: B places them first). A's write then lands: without the fence it would allocate a
    third share of a two-share GPU, untouched by B, and B would resume p1 with it."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=2)
    kube_api.seed(pod("p1"))
    hold = kube_api.faults.hold("update", "resourceclaims", 30.0, subresource="status")
    released: list[int] = []

    def release_when_p3_is_placed(step: str, obj: dict[str, Any]) -> None:
        if step == "placed" and obj["metadata"]["name"] == "p3" and not released:
            hold.release.set()  # B's scheduling thread waits here: p1 is not looked at before A's write lands
            released.append(_answered(kube_api, hold, "update", "resourceclaims", "status"))

    with _leader(kube_api, "a") as (binder_a, elector_a):
        wait_for("A's allocation write sent", hold.arrived.is_set, timeout=40)
        elector_a.stop(release=False)  # A freezes: its elector renews no more
        kube_api.seed(pod("p2", priority=100))  # p2, p3 come first in B's queue (PrioritySort)
        kube_api.seed(pod("p3", priority=100))
        with _leader(kube_api, "b", hook=release_when_p3_is_placed) as (binder_b, elector_b):
            wait_for("B leads", elector_b.is_leader, timeout=40)
            wait_for(
                "p2 and p3 bound",
                lambda: {p["metadata"]["name"] for p in bound(kube_api)} == {"p2", "p3"},
                timeout=40,
            )
            assert released == [409]  # the stale write met the fence
            assert binder_b.fenced == 1
            wait_for("B settled", lambda: binder_b.settled(binder_b.pending_keys()), timeout=40)
            before = _state(kube_api)
            binder_a.kill()
    assert _state(kube_api) == before
    assert {p["metadata"]["name"] for p in bound(kube_api)} == {"p2", "p3"}
    assert not [
        c
        for c in extended_claims(kube_api)
        if (c.get("status") or {}).get("allocation") and c["metadata"]["ownerReferences"][0]["name"] == "p1"
    ]
    check_invariants(kube_api)


def test_a_stale_unschedulable_condition_cannot_mark_a_pod_the_new_leader_bound(kube_api: Any) -> None:
    """A freezes with p1's `PodScheduled=False` patch sent; the holder goes away, B binds p1; A's patch then
    lands conditional on the pod as A saw it: 409, and p1 stays `PodScheduled=True`."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=1)
    kube_api.seed(pod("holder"))
    with _leader(kube_api, "a") as (binder_a, elector_a):
        wait_for("holder bound", lambda: len(bound(kube_api)) == 1)
        hold = kube_api.faults.hold("patch", "pods", 30.0, subresource="status", name="p1")
        kube_api.seed(pod("p1"))
        wait_for("A's condition patch sent", hold.arrived.is_set, timeout=40)
        elector_a.stop(release=False)
        kube_api.delete("pods", "holder", grace_period_seconds=0)
        with _leader(kube_api, "b") as (binder_b, _elector_b):
            wait_for("p1 bound by B", lambda: kube_api.get("pods", "p1")["spec"].get("nodeName"), timeout=40)
            wait_for("B settled", lambda: binder_b.settled(binder_b.pending_keys()), timeout=40)
            before = _state(kube_api)
            hold.release.set()
            assert _answered(kube_api, hold, "patch", "pods", "status", "p1") == 409
            binder_a.kill()
    assert _state(kube_api) == before
    [cond] = [c for c in kube_api.get("pods", "p1")["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "True"
    check_invariants(kube_api)


def test_a_stale_finalizer_removal_cannot_unprotect_a_claim_the_new_leader_resumed(kube_api: Any) -> None:
    """A's pod status patch fails, so A's Unreserve removes the claim's finalizer; that write is held and A
    freezes. B finds the claim allocated and reserved for p1 and completes the bind with it. A's removal
    then meets the fence (409): the claim B's pod uses keeps its delete protection."""
    seed_cluster(kube_api, nodes=1, gpus=1, shares=4)
    kube_api.faults.fail("patch", "pods", 422, subresource="status", name="p1", message="injected")
    hold = kube_api.faults.hold("update", "resourceclaims", 30.0, subresource="")
    kube_api.seed(pod("p1"))
    with _leader(kube_api, "a") as (binder_a, elector_a):
        wait_for("A's finalizer removal sent", hold.arrived.is_set, timeout=40)
        elector_a.stop(release=False)
        with _leader(kube_api, "b") as (binder_b, _elector_b):
            wait_for("p1 bound by B", lambda: kube_api.get("pods", "p1")["spec"].get("nodeName"), timeout=40)
            wait_for("B settled", lambda: binder_b.settled(binder_b.pending_keys()), timeout=40)
            before = _state(kube_api)
            hold.release.set()
            assert _answered(kube_api, hold, "update", "resourceclaims", "") == 409
            binder_a.kill()
    assert _state(kube_api) == before
    [claim] = extended_claims(kube_api)
    assert claim["metadata"]["annotations"][FENCE_ANNOTATION].startswith("b/")
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    check_invariants(kube_api)
