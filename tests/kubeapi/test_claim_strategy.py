"""ResourceClaim rules of the real strategy and validation: pkg/registry/resource/resourceclaim/strategy.go
and pkg/apis/resource/validation/validation.go (ValidateResourceClaimUpdate,
ValidateResourceClaimStatusUpdate)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import allocation, claim

POD_REF = {"resource": "pods", "name": "p", "uid": "11111111-1111-1111-1111-111111111111"}


def _status(res: client.ResourceV1Api, status: dict[str, Any]) -> Any:
    """A JSON merge patch: lists replaced as written (a strategic merge would merge reservedFor by uid)."""
    return res.patch_namespaced_resource_claim_status(
        "c", "default", {"status": status}, _content_type="application/merge-patch+json"
    )


def _causes(e: client.ApiException) -> list[dict[str, str]]:
    body = json.loads(e.body)
    assert e.status == 422 and body["reason"] == "Invalid"
    return body["details"]["causes"]  # type: ignore[no-any-return]


@pytest.fixture
def res(kube_client: client.ApiClient) -> client.ResourceV1Api:
    api = client.ResourceV1Api(kube_client)
    api.create_namespaced_resource_claim("default", claim("c"))
    return api


@pytest.mark.double_only("README disagreement 8: immutable-field message")
def test_allocation_is_immutable_once_set(res: client.ResourceV1Api) -> None:
    """`status.allocation`: ValidateImmutableField once populated (validateResourceClaimStatusUpdate)."""
    _status(res, {"allocation": allocation(device="gpu-0")})
    with pytest.raises(client.ApiException) as info:
        _status(res, {"allocation": allocation(device="gpu-1")})
    cause = _causes(info.value)[0]
    assert cause["field"] == "status.allocation" and cause["message"].endswith("field is immutable")
    res.patch_namespaced_resource_claim_status(
        "c", "default", {"status": {"allocation": None}}
    )  # clearing is allowed


def test_reserved_for_requires_an_allocation(res: client.ResourceV1Api) -> None:
    """`reservedFor` may not be specified when `allocated` is not set."""
    with pytest.raises(client.ApiException) as info:
        _status(res, {"reservedFor": [POD_REF]})
    assert _causes(info.value) == [
        {
            "reason": "FieldValueForbidden",
            "field": "status.reservedFor",
            "message": "Forbidden: may not be specified when `allocated` is not set",
        }
    ]


def test_reserved_for_is_unique_by_uid(res: client.ResourceV1Api) -> None:
    """validateSet keyed by uid: a second entry with the same uid is `reservedFor[i]: Duplicate value`."""
    with pytest.raises(client.ApiException) as info:
        _status(res, {"allocation": allocation(), "reservedFor": [POD_REF, {**POD_REF, "name": "q"}]})
    assert _causes(info.value) == [
        {
            "reason": "FieldValueDuplicate",
            "field": "status.reservedFor[1]",
            "message": 'Duplicate value: {"resource":"pods","name":"q","uid":"' + POD_REF["uid"] + '"}',
        }
    ]


def test_reserved_for_entries_need_resource_name_and_uid(res: client.ResourceV1Api) -> None:
    """validateResourceClaimUserReference: resource, name and uid are required."""
    with pytest.raises(client.ApiException) as info:
        _status(res, {"allocation": allocation(), "reservedFor": [{"resource": "pods"}]})
    assert [c["field"] for c in _causes(info.value)] == [
        "status.reservedFor[0].name",
        "status.reservedFor[0].uid",
    ]


def test_no_new_reservations_while_deleting(kube_api: KubeAPIServer, res: client.ResourceV1Api) -> None:
    """A claim with deletionTimestamp may lose reservedFor entries but gain none."""
    _status(res, {"allocation": allocation(), "reservedFor": [POD_REF]})
    res.patch_namespaced_resource_claim("c", "default", {"metadata": {"finalizers": ["example.com/hold"]}})
    res.delete_namespaced_resource_claim("c", "default")
    other = {"resource": "pods", "name": "q", "uid": "22222222-2222-2222-2222-222222222222"}
    with pytest.raises(client.ApiException) as info:
        _status(res, {"reservedFor": [POD_REF, other]})
    assert "new entries may not be added while" in _causes(info.value)[0]["message"]
    out = _status(res, {"reservedFor": []})
    assert not out.status.reserved_for


def test_share_id_must_be_a_uuid(res: client.ResourceV1Api) -> None:
    """DRAConsumableCapacity: `shareID` must be a lowercase UUID."""
    alloc = allocation()
    alloc["devices"]["results"][0]["shareID"] = "not-a-uuid"
    with pytest.raises(client.ApiException) as info:
        _status(res, {"allocation": alloc})
    cause = _causes(info.value)[0]
    assert cause["field"] == "status.allocation.devices.results[0].shareID"
    assert cause["message"] == 'Invalid value: "not-a-uuid": must be a lowercase UUID in 8-4-4-4-12 format'
    alloc["devices"]["results"][0]["shareID"] = "0b4a6e0c-0f7e-4c7b-9a52-5d1b8f7f0e11"
    assert _status(res, {"allocation": alloc}).status.allocation is not None


def test_spec_is_immutable(res: client.ResourceV1Api) -> None:
    """ValidateResourceClaimUpdate: `spec: Invalid value: ...: field is immutable`."""
    with pytest.raises(client.ApiException) as info:
        res.patch_namespaced_resource_claim(
            "c",
            "default",
            {"spec": {"devices": {"requests": [{"name": "other", "exactly": {"deviceClassName": "x"}}]}}},
        )
    assert _causes(info.value)[0]["field"] == "spec"
