"""Unknown fields derived from the pydantic models, named as the API server's strict field validation does."""

from __future__ import annotations

from resourceapi.resource_v1 import DeviceClass
from resourceapi.schema import unknown_fields


def test_a_known_device_class_has_no_unknown_field() -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu", "labels": {"a": "b"}, "managedFields": [{"x": 1}], "selfLink": ""},
        "spec": {
            "selectors": [{"cel": {"expression": "true"}}],
            "config": [{"opaque": {"driver": "d", "parameters": {"free": {"form": 1}}}}],
            "extendedResourceName": "example.com/gpu",
            "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
        },
    }
    assert unknown_fields(DeviceClass, obj) == []


def test_typos_are_named_by_their_path_in_document_order() -> None:
    obj = {
        "metadata": {"name": "gpu", "nmae": "x"},
        "spec": {"extendedResourceNmae": "x", "selectors": [{"cel": {"expression": "true"}}, {"cell": {}}]},
    }
    assert unknown_fields(DeviceClass, obj) == [
        "metadata.nmae",
        "spec.extendedResourceNmae",
        "spec.selectors[1].cell",
    ]


def test_owner_references_are_checked_field_by_field() -> None:
    obj = {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "nme": "p"}]}}
    assert unknown_fields(DeviceClass, obj) == ["metadata.ownerReferences[0].nme"]


def test_the_capacity_requests_are_left_to_their_own_rules() -> None:
    """An unknown key there is reported once, by resourceapi.capacity_requests, not twice."""
    obj = {"spec": {"extendedResourceCapacityRequests": {"requests": {}, "limits": {}}}}
    assert unknown_fields(DeviceClass, obj) == []


def test_values_of_the_wrong_type_are_left_to_validation() -> None:
    obj = {"spec": {"selectors": "not-a-list", "config": [42]}}
    assert unknown_fields(DeviceClass, obj) == []
