"""Strict decoding per release (resourceapi/releases.py `Schema`): 1.36's API types lack 1.37's fields, so its
API server names them as unknown (a 400) and has the alpha `nodeAllocatableResourceMappings` instead."""

from __future__ import annotations

from typing import Any

from dra_capacity.apiverdict import simulate_object
from resourceapi.gates import FeatureGates
from resourceapi.manifests.apischema import unknown_fields

V1 = "resource.k8s.io/v1"


def _slice() -> dict[str, Any]:
    device = {
        "name": "gpu-0",
        "nodeAllocatableResources": {"cpu": {"overhead": {"perPod": "1"}}},
        "consumesCounters": [
            {"counterSet": "cs", "counters": {"c": {"value": "1"}}, "compatibilityGroups": ["a"]}
        ],
    }
    spec = {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n"}
    spec |= {"partitionTypeAttribute": "d.example.com/t", "devices": [device]}
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": spec}


def test_1_36_names_the_1_37_only_fields_of_a_slice_in_document_order() -> None:
    assert unknown_fields(V1, "ResourceSlice", _slice(), "1.36") == [
        "spec.partitionTypeAttribute",
        "spec.devices[0].nodeAllocatableResources",
        "spec.devices[0].consumesCounters[0].compatibilityGroups",
    ]
    assert unknown_fields(V1, "ResourceSlice", _slice(), "1.37") == []


def test_1_36_knows_node_allocatable_resource_mappings_and_1_37_does_not() -> None:
    obj = _slice()
    obj["spec"]["devices"] = [
        {
            "name": "gpu-0",
            "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "c", "allocationMultiplier": 2}},
        }
    ]
    del obj["spec"]["partitionTypeAttribute"]
    assert unknown_fields(V1, "ResourceSlice", obj, "1.36") == []
    assert unknown_fields(V1, "ResourceSlice", obj, "1.37") == [
        "spec.devices[0].nodeAllocatableResourceMappings"
    ]


def test_1_36_refuses_a_claims_derived_attributes_with_the_strict_decoding_400() -> None:
    """The 400 comes before the object's other errors (the 422 the ported validation would give)."""
    request = {
        "name": "Bad",
        "exactly": {"deviceClassName": "c", "derivedAttributes": [{"name": "a", "expression": "1"}]},
    }
    claim = {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"}}
    claim["spec"] = {"devices": {"requests": [request]}}
    verdict = simulate_object("ResourceClaim", claim, FeatureGates.parse("", release="1.36"))
    assert (verdict.code, verdict.message) == (
        400,
        'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: strict decoding error: '
        'unknown field "spec.devices.requests[0].exactly.derivedAttributes"',
    )
    assert simulate_object("ResourceClaim", claim, FeatureGates.parse("", release="1.37")).code == 422
