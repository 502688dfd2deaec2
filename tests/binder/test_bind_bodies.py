"""The bodies the binder writes (claim, allocation status, pod status patch, Binding) and which leftover
claim a pod keeps: built from a real placement by the allocator core."""

from __future__ import annotations

import uuid
from typing import Any

from support.gpu_cluster import CLASS, RESOURCE, device_class, gpu_slice, node, pod

from allocator.scheduling.placement import Placement, Placer
from allocator.structured.cluster import Cluster
from binder import claims
from binder.names import CLAIM_ANNOTATION, DELETE_PROTECTION_FINALIZER
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.routing import SERVED_TAINT_KEY

UID = "0a1b2c3d-0000-4000-8000-000000000000"


def place(obj: dict[str, Any] | None = None) -> Placement:
    gates = FeatureGates.parse("")
    classes = [DeviceClass.model_validate(device_class())]
    slices = [ResourceSlice.model_validate(gpu_slice("gpu-node-1"))]
    placer = Placer(
        Cluster(gates, classes, slices),
        gates,
        ExtendedResourceResolver(classes, gates),
        [Node.model_validate(node("gpu-node-1"))],
        slices,
    )
    placement = placer.place(Pod.model_validate(obj or pod("web-0", uid=UID)))
    assert placement.result == "bound", placement.reason
    return placement


def test_claim_is_created_with_generate_name_owner_annotation_and_finalizer() -> None:
    placement = place()
    assert placement.claim is not None
    body = claims.claim_create_body(placement.claim)
    meta = body["metadata"]
    assert "name" not in meta and "uid" not in meta and "status" not in body
    assert meta["generateName"] == "web-0-extended-resources-"
    assert meta["namespace"] == "default"
    assert meta["annotations"] == {CLAIM_ANNOTATION: "true"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": UID, "controller": True}
    ]
    assert meta["finalizers"] == [DELETE_PROTECTION_FINALIZER]
    [request] = body["spec"]["devices"]["requests"]
    assert request == {
        "name": "container-0-request-0",
        "exactly": {
            "deviceClassName": CLASS,
            "allocationMode": "ExactCount",
            "count": 1,
            # the one divergence: the binder's claims tolerate its own device taint (one allocator per device)
            "tolerations": [{"key": SERVED_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "capacity": {"requests": {"shares": "1"}},
        },
    }


def test_allocation_status_carries_the_share_and_reserves_for_the_pod() -> None:
    placement = place()
    status = claims.allocation_status(placement.allocation[-1], {"metadata": {"name": "web-0", "uid": UID}})
    [result] = status["allocation"]["devices"]["results"]
    assert result["request"] == "container-0-request-0"
    assert (result["driver"], result["pool"], result["device"]) == ("gpu.nvidia.com", "gpu-node-1", "gpu-0")
    assert result["consumedCapacity"] == {"shares": "1"}
    assert str(uuid.UUID(result["shareID"])) == result["shareID"]
    assert status["reservedFor"] == [{"resource": "pods", "name": "web-0", "uid": UID}]
    terms = status["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-1"]}]}]


def test_pod_status_patch_names_the_claim_and_maps_each_container() -> None:
    patch = claims.extended_status_patch(place(), "web-0-extended-resources-abcde")
    assert patch == {
        "status": {
            "extendedResourceClaimStatus": {
                "resourceClaimName": "web-0-extended-resources-abcde",
                "requestMappings": [
                    {
                        "containerName": "server",
                        "resourceName": RESOURCE,
                        "requestName": "container-0-request-0",
                    }
                ],
            }
        }
    }


def test_binding_targets_the_node_with_the_pod_uid() -> None:
    assert claims.binding_body({"metadata": {"name": "p", "namespace": "ns", "uid": UID}}, "n1") == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": UID},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }


def test_unschedulable_condition() -> None:
    [cond] = claims.unschedulable_condition_patch("0/2 nodes are available: 2 cannot allocate all claims.")[
        "status"
    ]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("PodScheduled", "False", "Unschedulable")
    pod_obj = {"status": {"conditions": [cond]}}
    assert claims.condition_is(pod_obj, "Unschedulable", cond["message"])
    assert not claims.condition_is(pod_obj, "Unschedulable", "other")


# --- leftovers ---------------------------------------------------------------------------------------------


def claim(
    name: str,
    *,
    owner: str = UID,
    allocated_on: str | None = None,
    reserved: str | None = None,
    deleting: bool = False,
    marker: bool = True,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "creationTimestamp": created,
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": owner, "controller": True}
        ],
    }
    if marker:
        meta["annotations"] = {CLAIM_ANNOTATION: "true"}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    out: dict[str, Any] = {"metadata": meta, "spec": {}}
    if allocated_on is not None:
        selector = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [allocated_on]}]}
            ]
        }
        out["status"] = {"allocation": {"devices": {"results": []}, "nodeSelector": selector}}
        if reserved is not None:
            out["status"]["reservedFor"] = [{"resource": "pods", "name": "web-0", "uid": reserved}]
    return out


def test_no_leftover() -> None:
    assert claims.classify_leftovers([], UID).action is claims.LeftoverAction.NONE


def test_claims_not_controlled_by_the_pod_are_not_leftovers() -> None:
    others = [claim("a", owner="someone-else"), claim("b", marker=False)]
    assert claims.classify_leftovers(others, UID).action is claims.LeftoverAction.NONE


def test_unallocated_leftover_is_deleted() -> None:
    out = claims.classify_leftovers([claim("a")], UID)
    assert out.action is claims.LeftoverAction.DELETE and [c["metadata"]["name"] for c in out.delete] == ["a"]


def test_allocated_and_reserved_claim_on_a_fitting_node_is_resumed() -> None:
    out = claims.classify_leftovers([claim("a", allocated_on="n1", reserved=UID)], UID, lambda n: n == "n1")
    assert out.action is claims.LeftoverAction.RESUME and out.keep is not None and out.delete == ()


def test_allocated_claim_on_a_node_that_no_longer_fits_is_deleted() -> None:
    out = claims.classify_leftovers([claim("a", allocated_on="n1", reserved=UID)], UID, lambda n: False)
    assert out.action is claims.LeftoverAction.DELETE


def test_allocated_but_not_reserved_for_the_pod_is_deleted() -> None:
    out = claims.classify_leftovers([claim("a", allocated_on="n1", reserved="other")], UID, lambda n: True)
    assert out.action is claims.LeftoverAction.DELETE


def test_claim_being_deleted_is_not_resumed() -> None:
    out = claims.classify_leftovers(
        [claim("a", allocated_on="n1", reserved=UID, deleting=True)], UID, lambda n: True
    )
    assert out.action is claims.LeftoverAction.DELETE


def test_of_two_claims_the_resumable_one_is_kept_and_the_other_deleted() -> None:
    found = [claim("b", created="2026-01-02T00:00:00Z"), claim("a", allocated_on="n1", reserved=UID)]
    out = claims.classify_leftovers(found, UID, lambda n: True)
    assert out.action is claims.LeftoverAction.RESUME
    assert out.keep is not None and out.keep["metadata"]["name"] == "a"
    assert [c["metadata"]["name"] for c in out.delete] == ["b"]
