"""The queueing hints, without a server: which events requeue unschedulable pods and why."""

from __future__ import annotations

from typing import Any

from binder import hints
from binder.names import CLAIM_ANNOTATION


def pod(node: str | None = None, *, phase: str = "Pending", labels: dict[str, str] | None = None) -> Any:
    spec: dict[str, Any] = {"schedulerName": "dra-capacity", "containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    meta: dict[str, Any] = {"name": "p", "namespace": "default", "uid": "u1"}
    if labels is not None:
        meta["labels"] = labels
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def claim(allocation: Any = None, reserved: Any = None, rv: str = "1") -> Any:
    status: dict[str, Any] = {}
    if allocation is not None:
        status["allocation"] = allocation
    if reserved is not None:
        status["reservedFor"] = reserved
    return {
        "metadata": {"name": "c", "namespace": "default", "uid": "c1", "resourceVersion": rv},
        "status": status,
    }


def test_pending_for_our_scheduler_only() -> None:
    assert hints.pending_for(pod(), "dra-capacity")
    assert not hints.pending_for(pod(), "other")
    assert not hints.pending_for(pod("n1"), "dra-capacity")
    assert not hints.pending_for(pod(phase="Failed"), "dra-capacity")
    deleted = pod()
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not hints.pending_for(deleted, "dra-capacity")


def test_status_write_does_not_requeue_but_spec_change_does() -> None:
    old, new = pod(), pod()
    new["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
    assert not hints.enqueue_pending(old, new, "dra-capacity")
    new["spec"]["nodeSelector"] = {"zone": "a"}
    assert hints.enqueue_pending(old, new, "dra-capacity")
    assert hints.enqueue_pending(None, new, "dra-capacity")


def test_pod_priority_is_spec_priority_defaulting_to_zero() -> None:
    p = pod()
    assert hints.pod_priority(p) == 0
    p["spec"]["priority"] = 1000
    assert hints.pod_priority(p) == 1000
    p["spec"]["priority"] = -5
    assert hints.pod_priority(p) == -5
    p["spec"]["priority"] = None
    assert hints.pod_priority(p) == 0


def test_pod_hints() -> None:
    assert hints.pod_hint(pod("n1"), None, in_flight=False, own_binding=False) == "pod-gone"
    assert hints.pod_hint(pod(), None, in_flight=False, own_binding=False) is None
    assert hints.pod_hint(pod(), None, in_flight=True, own_binding=False) == "pod-gone"
    assert (
        hints.pod_hint(pod("n1"), pod("n1", phase="Succeeded"), in_flight=False, own_binding=False)
        == "pod-gone"
    )
    assert hints.pod_hint(pod(), pod("n1"), in_flight=False, own_binding=False) == "pod-bound-elsewhere"
    assert hints.pod_hint(pod(), pod("n1"), in_flight=False, own_binding=True) is None
    relabeled = hints.pod_hint(
        pod("n1", labels={"a": "1"}), pod("n1", labels={"a": "2"}), in_flight=False, own_binding=False
    )
    assert relabeled == "pod-labels"
    assert hints.pod_hint(pod("n1"), pod("n1"), in_flight=False, own_binding=False) is None
    assert hints.pod_hint(pod(), pod(), in_flight=False, own_binding=False) is None


def test_node_heartbeat_is_no_change() -> None:
    old = {"metadata": {"name": "n", "labels": {"a": "1"}}, "status": {"allocatable": {"cpu": "4"}}}
    beat = {**old, "status": {"allocatable": {"cpu": "4"}, "conditions": [{"type": "Ready"}]}}
    assert hints.node_hint("MODIFIED", old, beat) is None
    relabeled = {**old, "metadata": {"name": "n", "labels": {"a": "2"}}}
    assert hints.node_hint("MODIFIED", old, relabeled) == "node"
    assert hints.node_hint("ADDED", None, old) == "node"
    assert hints.node_hint("DELETED", old, None) == "node"


def test_slice_hint_reads_the_spec_only() -> None:
    old = {"metadata": {"name": "s", "resourceVersion": "1"}, "spec": {"driver": "d"}}
    assert hints.slice_hint(old, {**old, "metadata": {"name": "s", "resourceVersion": "2"}}) is None
    assert hints.slice_hint(old, {**old, "spec": {"driver": "e"}}) == "resource-slice"
    assert hints.slice_hint(None, old) == "resource-slice"


def test_claim_hints() -> None:
    alloc = {"devices": {"results": [{"device": "gpu-0"}]}}
    # allocated elsewhere: a change
    assert hints.claim_hint(claim(), claim(alloc), None, False) == "claim-changed"
    # the echo of our own write is none
    assert hints.claim_hint(claim(), claim(alloc), claim(alloc), False) is None
    # a claim of a bind under way is counted already
    assert hints.claim_hint(claim(), claim(alloc), None, True) is None
    # metadata-only update: none
    assert hints.claim_hint(claim(alloc, rv="1"), claim(alloc, rv="2"), None, False) is None
    # deleted: a change only when it held an allocation
    assert hints.claim_hint(claim(alloc), None, None, False) == "claim-deleted"
    assert hints.claim_hint(claim(), None, None, False) is None


def test_controller_pod_uid_needs_annotation_and_controller_ref() -> None:
    c = claim()
    c["metadata"]["ownerReferences"] = [{"kind": "Pod", "uid": "p1", "controller": True}]
    assert hints.controller_pod_uid(c) is None
    c["metadata"]["annotations"] = {CLAIM_ANNOTATION: "true"}
    assert hints.controller_pod_uid(c) == "p1"
    c["metadata"]["ownerReferences"][0]["controller"] = False
    assert hints.controller_pod_uid(c) is None


def test_pod_uid_is_the_metadata_uid_or_empty() -> None:
    assert hints.pod_uid(pod()) == "u1"
    assert hints.pod_uid({"metadata": {"name": "p"}}) == ""
    assert hints.pod_uid({"metadata": None}) == ""
    assert hints.pod_uid({}) == ""


def test_assigned_pod_update_with_the_same_labels_is_no_change() -> None:
    old, new = pod("n1", labels={"a": "1"}), pod("n1", labels={"a": "1"})
    new["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert hints.pod_hint(old, new, in_flight=False, own_binding=False) is None


def test_node_allocatable_or_spec_change_requeues() -> None:
    old = {"metadata": {"name": "n"}, "spec": {}, "status": {"allocatable": {"cpu": "4"}}}
    grown = {**old, "status": {"allocatable": {"cpu": "8"}}}
    assert hints.node_hint("MODIFIED", old, grown) == "node"
    tainted = {**old, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    assert hints.node_hint("MODIFIED", old, tainted) == "node"
    cordoned = {**old, "spec": {"unschedulable": True}}
    assert hints.node_hint("MODIFIED", old, cordoned) == "node"


def test_claim_deallocated_by_someone_else_requeues() -> None:
    alloc = {"devices": {"results": [{"device": "gpu-0"}]}}
    assert hints.claim_hint(claim(alloc), claim(), None, False) == "claim-changed"


def test_claim_reservation_change_requeues() -> None:
    alloc = {"devices": {"results": [{"device": "gpu-0"}]}}
    consumer = [{"resource": "pods", "name": "p", "uid": "u9"}]
    # a consumer released its reservation: a change, and not the echo of our write of the reserved claim
    assert hints.claim_hint(claim(alloc, consumer), claim(alloc, []), None, False) == "claim-changed"
    assert hints.claim_hint(claim(alloc), claim(alloc, consumer), claim(alloc), False) == "claim-changed"
