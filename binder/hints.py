"""Queueing hints: which informer events may change where a pending pod fits. Pure functions on JSON.

Upstream: each plugin's `EventsToRegister` with its `QueueingHintFn` (pkg/scheduler/framework/plugins/):
NodeAffinity and NodeResourcesFit requeue on a node's labels, spec or allocatable (not on a heartbeat);
DynamicResources on a ResourceSlice's spec, a DeviceClass, or a claim's allocation or reservation;
InterPodAffinity and PodTopologySpread on an assigned pod's labels; every plugin on a pod that leaves its
node. Each function returns the reason (a label of the `changes` counter) or None for "no requeue".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from binder.names import CLAIM_ANNOTATION

TERMINAL = ("Succeeded", "Failed")

Key = tuple[str, str]


def pod_uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def pod_priority(pod: Mapping[str, Any]) -> int:
    """The pod's `spec.priority`, 0 when unset (corev1helpers.PodPriority, which PrioritySort orders by)."""
    priority = (pod.get("spec") or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def pending_for(pod: Mapping[str, Any], scheduler_name: str) -> bool:
    """A pod this binder should place: ours by schedulerName, not on a node, not deleted, not finished."""
    spec = pod.get("spec") or {}
    return (
        spec.get("schedulerName") == scheduler_name
        and not spec.get("nodeName")
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in TERMINAL
    )


def enqueue_pending(old: Mapping[str, Any] | None, new: Mapping[str, Any], scheduler_name: str) -> bool:
    """Queue the pending pod `new` again? A new pod or a changed spec is a reason; a status write (ours: the
    condition, the claim link) is not (upstream's isPodUpdated ignores status too)."""
    return old is None or not pending_for(old, scheduler_name) or old.get("spec") != new.get("spec")


def node_name(pod: Mapping[str, Any] | None) -> str | None:
    return ((pod or {}).get("spec") or {}).get("nodeName") or None


def labels(obj: Mapping[str, Any] | None) -> Any:
    return ((obj or {}).get("metadata") or {}).get("labels")


def pod_hint(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, *, in_flight: bool, own_binding: bool
) -> str | None:
    """A pod event, as it may change other pods' placement. `in_flight`: the pod had a bind under way;
    `own_binding`: the event is the echo of our own Binding (both from the assume cache).

    "pod-gone" when a pod that held node resources (or was being bound) is gone or finished,
    "pod-bound-elsewhere" when someone else bound it, "pod-labels" when an assigned pod's labels changed
    (the queueing hint of InterPodAffinity and PodTopologySpread)."""
    was_on_node, on_node = bool(node_name(old)), bool(node_name(new))
    if new is None or (on_node and (new.get("status") or {}).get("phase") in TERMINAL):
        return "pod-gone" if was_on_node or on_node or in_flight else None
    if on_node and not was_on_node:
        return None if own_binding else "pod-bound-elsewhere"
    if on_node and was_on_node and labels(old) != labels(new):
        return "pod-labels"
    return None


def node_view(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What placement reads of a node: labels, spec, allocatable."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return (meta.get("labels"), node.get("spec"), status.get("allocatable"))


def node_hint(kind: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """None for a heartbeat or a status condition: nothing placement reads."""
    if kind == "MODIFIED" and old is not None and new is not None and node_view(old) == node_view(new):
        return None
    return "node"


def slice_hint(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """None for a watch resync or a metadata-only update."""
    if old is not None and new is not None and old.get("spec") == new.get("spec"):
        return None
    return "resource-slice"


def claim_view(claim: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What placement reads of a claim: its allocation and its reservations."""
    if claim is None:
        return (None, None)
    status = claim.get("status") or {}
    return (status.get("allocation"), status.get("reservedFor"))


def is_allocated(claim: Mapping[str, Any] | None) -> bool:
    return bool(((claim or {}).get("status") or {}).get("allocation"))


def controller_pod_uid(claim: Mapping[str, Any]) -> str | None:
    """The uid of the pod controlling an extended-resource claim (ours by annotation); None for any other."""
    meta = claim.get("metadata") or {}
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return None
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("kind") == "Pod" and ref.get("uid"):
            return str(ref["uid"])
    return None


def claim_hint(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    assumed: Mapping[str, Any] | None,
    in_flight: bool,
) -> str | None:
    """A claim event. `assumed`: the object our own last write of that claim returned, as the assume cache
    held it when the event came (None if none); `in_flight`: the claim belongs to a bind under way, whose
    allocation is counted already."""
    if new is None:
        return "claim-deleted" if is_allocated(old) else None
    if assumed is not None and claim_view(new) == claim_view(assumed):
        return None  # the echo of our own write
    if in_flight:
        return None
    if claim_view(old) != claim_view(new):
        return "claim-changed"
    return None
