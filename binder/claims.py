"""The API bodies of the bind sequence, and which leftover claim a pod may keep: pure functions on JSON.

Upstream: `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go` (`bindClaim`: create with
name, uid and status cleared; finalizer; `status.allocation` + `reservedFor`; then the pod's
`status.extendedResourceClaimStatus` by strategic-merge patch) and `extendeddynamicresources.go` (the
in-memory claim, its owner reference and annotation; a leftover claim controlled by the pod is deleted by
PostFilter, finalizer first).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from allocator.scheduling.placement import Placement
from binder.names import (
    CLAIM_ANNOTATION,
    CONDITION_POD_SCHEDULED,
    DELETE_PROTECTION_FINALIZER,
    REASON_UNSCHEDULABLE,
)
from resourceapi.api.resource_v1 import AllocationResult, ResourceClaim

Obj = dict[str, Any]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def claim_create_body(claim: ResourceClaim) -> Obj:
    """The synthesized claim as created: generateName, no name/uid/status, the controller reference to the
    pod without blockOwnerDeletion (which would need `pods/finalizers`), the marker annotation, and the
    delete-protection finalizer from the start (upstream adds it with an update right after the create; one
    write fewer, and a claim is never without it)."""
    body = claim.to_api()
    meta = body.setdefault("metadata", {})
    for key in ("name", "uid", "resourceVersion", "creationTimestamp"):
        meta.pop(key, None)
    for ref in meta.get("ownerReferences") or []:
        ref.pop("blockOwnerDeletion", None)
    body.pop("status", None)
    meta["finalizers"] = [DELETE_PROTECTION_FINALIZER]
    return body


def allocation_status(result: AllocationResult, pod: Mapping[str, Any]) -> Obj:
    """`status` for the status subresource: the allocation and the pod in reservedFor."""
    meta = pod["metadata"]
    return {
        "allocation": result.to_api(),
        "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
    }


def extended_status_patch(placement: Placement, claim_name: str) -> Obj:
    """The strategic-merge patch of `pods/status` that links the claim to the pod (and to its node for the
    node authorizer, `plugin/pkg/auth/authorizer/node/graph.go`)."""
    assert placement.extended is not None
    status = placement.extended.status(claim_name).to_api()
    if not status.get("requestMappings"):
        raise ValueError(f"nil or empty request mappings, no update of pod {placement.pod.name}")
    return {"status": {"extendedResourceClaimStatus": status}}


def unschedulable_condition_patch(message: str, reason: str = REASON_UNSCHEDULABLE) -> Obj:
    """The pod condition PodScheduled=False, as kube-scheduler's `updatePod` writes it (strategic merge on
    `conditions`, keyed by type)."""
    return {
        "status": {
            "conditions": [
                {
                    "type": CONDITION_POD_SCHEDULED,
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": now_rfc3339(),
                }
            ]
        }
    }


def condition_is(pod: Mapping[str, Any], reason: str, message: str) -> bool:
    """True when the pod already carries PodScheduled=False with this reason and message (skip the write)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == CONDITION_POD_SCHEDULED:
            return bool(
                c.get("status") == "False" and c.get("reason") == reason and c.get("message") == message
            )
    return False


def binding_body(pod: Mapping[str, Any], node: str) -> Obj:
    meta = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace", "default"), "uid": meta["uid"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


# --- leftover claims ---------------------------------------------------------------------------------------


def is_extended_claim_of(claim: Mapping[str, Any], pod_uid: str) -> bool:
    """Upstream's lookup: the annotation `resource.kubernetes.io/extended-resource-claim: "true"` and a
    controller ownerReference to the pod's uid."""
    meta = claim.get("metadata") or {}
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return False
    return any(
        ref.get("controller") is True and ref.get("kind") == "Pod" and ref.get("uid") == pod_uid
        for ref in meta.get("ownerReferences") or []
    )


def reserved_for(claim: Mapping[str, Any], pod_uid: str) -> bool:
    status = claim.get("status") or {}
    return bool(status.get("allocation")) and any(
        r.get("uid") == pod_uid and r.get("resource") == "pods" for r in status.get("reservedFor") or []
    )


def has_finalizer(claim: Mapping[str, Any]) -> bool:
    return DELETE_PROTECTION_FINALIZER in ((claim.get("metadata") or {}).get("finalizers") or [])


class LeftoverAction(enum.Enum):
    NONE = "none"  # no leftover: place from scratch
    RESUME = "resume"  # the binder's own crash recovery: complete the pod status and the Binding
    DELETE = "delete"  # delete the leftovers (finalizer first), then place from scratch


@dataclass(frozen=True)
class Leftovers:
    action: LeftoverAction
    keep: Obj | None = None  # the claim to resume with
    delete: tuple[Obj, ...] = ()  # claims to delete


def allocated_node(claim: Mapping[str, Any]) -> str | None:
    """The single node an allocation is restricted to (`nodeSelector` with one `metadata.name` field term)."""
    selector = ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector") or {}
    terms = selector.get("nodeSelectorTerms") or []
    if len(terms) != 1:
        return None
    fields = terms[0].get("matchFields") or []
    exprs = terms[0].get("matchExpressions") or []
    if exprs or len(fields) != 1:
        return None
    f = fields[0]
    values = f.get("values") or []
    if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(values) == 1:
        return str(values[0])
    return None


def classify_leftovers(claims: Iterable[Mapping[str, Any]], pod_uid: str, node_fits: Any = None) -> Leftovers:
    """What to do with the pod's extended-resource claims found in the cluster.

    Resume only with one claim allocated and reserved for this pod, not being deleted, on a node for which
    `node_fits(node_name)` holds; everything else (unallocated claims from a crash before the status write,
    claims being deleted, more than one claim) is deleted, as upstream's PostFilter does."""
    mine = [dict(c) for c in claims if is_extended_claim_of(c, pod_uid)]
    if not mine:
        return Leftovers(LeftoverAction.NONE)
    keep: Obj | None = None
    for c in sorted(mine, key=lambda c: str(c["metadata"].get("creationTimestamp") or "")):
        if keep is not None or c["metadata"].get("deletionTimestamp") or not reserved_for(c, pod_uid):
            continue
        node = allocated_node(c)
        if node is not None and (node_fits is None or node_fits(node)):
            keep = c
    rest = tuple(c for c in mine if c is not keep)
    if keep is not None:
        return Leftovers(LeftoverAction.RESUME, keep, rest)
    return Leftovers(LeftoverAction.DELETE, None, rest)


def still_pending(pod: Mapping[str, Any]) -> bool:
    """A pod read after a 409 may still get the unschedulable condition: not bound, not being deleted."""
    bound = (pod.get("spec") or {}).get("nodeName")
    return not bound and not (pod.get("metadata") or {}).get("deletionTimestamp")


def unbound_naming(claim_name: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a pod read after a 409 is still this binder's to write: not bound, not being deleted, and its
    `extendedResourceClaimStatus` names `claim_name` or nothing (None: names nothing)."""

    def check(pod: Mapping[str, Any]) -> bool:
        if (pod.get("spec") or {}).get("nodeName") or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return False
        named = pod_claim_status_name(pod)
        return named is None or named == claim_name

    return check


def pod_claim_status_name(pod: Mapping[str, Any]) -> str | None:
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    name = status.get("resourceClaimName")
    return name if isinstance(name, str) and name else None
