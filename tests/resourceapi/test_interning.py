"""Device capacity maps validated once per distinct value, device attributes kept as read
(resourceapi/manifests/interning.py)."""

from __future__ import annotations

import copy
import math

import pytest
from pydantic import ValidationError

from resourceapi.api.meta import ObjectMeta
from resourceapi.api.resource_v1 import Device
from resourceapi.manifests.interning import json_key

DEVICE = {
    "name": "gpu-0",
    "attributes": {"brand": {"string": "Nvidia"}, "index": {"int": 0}},
    "capacity": {"shares": {"value": "4", "requestPolicy": {"default": "1"}}},
}


def test_equal_values_share_one_model() -> None:
    a, b = Device.model_validate(DEVICE), Device.model_validate(copy.deepcopy(DEVICE))
    assert a.capacity is not None and b.capacity is not None
    assert a.capacity is b.capacity  # equal maps: one map
    other = Device.model_validate({"name": "d", "capacity": {**DEVICE["capacity"], "memory": {"value": "1"}}})
    assert other.capacity is not None and other.capacity is not a.capacity
    assert other.capacity["shares"] is a.capacity["shares"]  # equal values: one model


def test_attributes_are_the_inputs_own_objects_in_a_map_of_the_models_own() -> None:
    raw = copy.deepcopy(DEVICE)
    device = Device.model_validate(raw)
    assert device.attributes == raw["attributes"]
    assert device.attributes is not raw["attributes"]
    assert device.attributes["brand"] is raw["attributes"]["brand"]
    assert device.to_api() == raw


def test_an_attribute_that_is_not_an_object_keeps_the_plain_maps_error() -> None:
    with pytest.raises(ValidationError) as exc:
        Device.model_validate({"name": "d", "attributes": {"brand": {"string": "x"}, "x": "one"}})
    assert exc.value.errors()[0]["loc"] == ("attributes", "x")
    with pytest.raises(ValidationError) as exc:
        Device.model_validate({"name": "d", "attributes": ["one"]})
    assert exc.value.errors()[0]["loc"] == ("attributes",)


def test_result_is_that_of_the_plain_map_in_input_order() -> None:
    Device.model_validate(DEVICE)
    raw = {"name": "d", "attributes": {"new": {"bool": True}, "brand": {"string": "Nvidia"}}}
    device = Device.model_validate(raw)
    assert device.to_api() == raw
    assert list(device.attributes or {}) == ["new", "brand"]


def test_errors_keep_the_plain_maps_locations() -> None:
    Device.model_validate(DEVICE)
    with pytest.raises(ValidationError) as exc:
        Device.model_validate(
            {"name": "d", "capacity": {"memory": {"value": "1"}, "x": {"value": "4", "requestPolicy": 3}}}
        )
    assert exc.value.errors()[0]["loc"] == ("capacity", "x", "requestPolicy")
    with pytest.raises(ValidationError) as exc:
        Device.model_validate({"name": "d", "capacity": {"shares": {"value": "four"}}})
    assert exc.value.errors()[0]["loc"] == ("capacity", "shares", "value")


def test_a_value_that_failed_is_not_remembered() -> None:
    bad = {"name": "d", "capacity": {"x": {"value": "four"}}}
    for _ in range(2):
        with pytest.raises(ValidationError):
            Device.model_validate(bad)


def test_values_a_check_tells_apart_get_distinct_keys() -> None:
    assert json_key({"int": 1}) != json_key({"int": True}) != json_key({"int": 1.0})
    assert json_key({"int": math.nan}) is None  # orjson writes NaN as null
    assert json_key({"a": [None, {"b": -math.inf}]}) is None
    assert json_key({"int": None}) == b'{"int":null}'  # a null that is one
    assert json_key({"int": None}) != json_key({"int": math.nan})
    assert json_key({"int": 1 << 70}) is None  # beyond JSON's 64-bit integers
    assert json_key({"a": (1, None)}) is None  # a tuple reads back as a list: not shared
    # a caller whose reader saw every number finite (Document.finite) skips the read-back: nulls are nulls
    assert json_key({"a": [None, {"b": 1}]}, finite=True) == b'{"a":[null,{"b":1}]}'
    assert json_key({"int": 1 << 70}, finite=True) is None
    Device.model_validate({"name": "d", "capacity": {"x": {"value": "1", "requestPolicy": None}}})
    with pytest.raises(ValidationError):
        Device.model_validate({"name": "d", "capacity": {"x": {"value": math.nan, "requestPolicy": None}}})


def test_one_field_values_that_compare_equal_are_kept_apart() -> None:
    """One-field objects are keyed by field, value and class: `1` and `true` compare equal in Python, but a
    quantity takes one and refuses the other."""
    Device.model_validate({"name": "d", "capacity": {"c": {"value": 1}}})
    with pytest.raises(ValidationError) as exc:
        Device.model_validate({"name": "d", "capacity": {"c": {"value": True}}})
    assert exc.value.errors()[0]["loc"] == ("capacity", "c", "value")
    Device.model_validate({"name": "d", "capacity": {"c": {"value": "1", "requestPolicy": {"default": 1}}}})
    with pytest.raises(ValidationError) as exc:
        Device.model_validate(
            {"name": "d", "capacity": {"c": {"value": "1", "requestPolicy": {"default": True}}}}
        )
    assert exc.value.errors()[0]["loc"] == ("capacity", "c", "requestPolicy", "default")


def test_list_items_are_shared_and_errors_keep_the_plain_lists_locations() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}
    a = ObjectMeta.model_validate({"name": "a", "ownerReferences": [owner]})
    b = ObjectMeta.model_validate({"name": "b", "ownerReferences": [dict(owner)]})
    assert a.owner_references is not None and b.owner_references is not None
    assert a.owner_references is not b.owner_references  # each object's own list
    assert a.owner_references[0] is b.owner_references[0]
    assert b.to_api()["ownerReferences"] == [owner]
    with pytest.raises(ValidationError) as exc:
        ObjectMeta.model_validate({"name": "c", "ownerReferences": [owner, {"name": ["x"]}]})
    assert exc.value.errors()[0]["loc"] == ("ownerReferences", 1, "name")
    assert ObjectMeta.model_validate({"name": "d", "ownerReferences": None}).owner_references is None
