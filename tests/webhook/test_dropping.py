"""Gate drop-on-disable, upstream's pattern (kubernetes/kubernetes
pkg/registry/resource/deviceclass/strategy.go, dropDisabledFields): drop on create, keep on update when the
old object already used the feature, per feature; the annotation follows DRAExtendedResourceCapacity
(docs/validation.md, "Feature gates: drop on disable")."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.deviceclasses import ANNOTATION, device_class, with_annotation

from resourceapi.gates import FeatureGates
from webhook.deviceclass.dropping import apply_removals, drop_disabled_fields, json_pointer

ON = FeatureGates.defaults()
NAME_OFF = ON.with_overrides(DRAExtendedResource=False)
CAPACITY_OFF = ON.with_overrides(DRAExtendedResourceCapacity=False)
REMOVE_NAME = {"op": "remove", "path": "/spec/extendedResourceName"}
REMOVE_CAPACITY = {"op": "remove", "path": "/spec/extendedResourceCapacityRequests"}
REMOVE_ANNOTATION = {
    "op": "remove",
    "path": "/metadata/annotations/dra-capacity.io~1extended-resource-capacity-requests",
}

NAMED = device_class(extendedResourceName="example.com/gpu")
RENAMED = device_class(extendedResourceName="example.com/other")
PLAIN = device_class()
REQUESTING = device_class(extendedResourceCapacityRequests={"requests": {"shares": "1"}})
REQUESTING_MORE = device_class(extendedResourceCapacityRequests={"requests": {"shares": "2"}})
ANNOTATED = with_annotation(device_class(), '{"requests": {"shares": "1"}}')

# (new, old or None for create, gates, expected patch)
MATRIX: dict[str, tuple[dict[str, Any], dict[str, Any] | None, FeatureGates, list[dict[str, str]]]] = {
    "name/create/gate-on": (NAMED, None, ON, []),
    "name/create/gate-off": (NAMED, None, NAME_OFF, [REMOVE_NAME]),
    "name/update/gate-on/old-unused": (NAMED, PLAIN, ON, []),
    "name/update/gate-on/old-used": (RENAMED, NAMED, ON, []),
    "name/update/gate-off/old-unused": (NAMED, PLAIN, NAME_OFF, [REMOVE_NAME]),
    "name/update/gate-off/old-used-keeps-changed-value": (RENAMED, NAMED, NAME_OFF, []),
    "capacity/create/gate-on": (REQUESTING, None, ON, []),
    "capacity/create/gate-off": (REQUESTING, None, CAPACITY_OFF, [REMOVE_CAPACITY]),
    "capacity/update/gate-on/old-unused": (REQUESTING, PLAIN, ON, []),
    "capacity/update/gate-on/old-used": (REQUESTING_MORE, REQUESTING, ON, []),
    "capacity/update/gate-off/old-unused": (REQUESTING, PLAIN, CAPACITY_OFF, [REMOVE_CAPACITY]),
    "capacity/update/gate-off/old-used-keeps-changed-value": (REQUESTING_MORE, REQUESTING, CAPACITY_OFF, []),
    "annotation/create/gate-on": (ANNOTATED, None, ON, []),
    "annotation/create/gate-off": (ANNOTATED, None, CAPACITY_OFF, [REMOVE_ANNOTATION]),
    "annotation/update/gate-off/old-unused": (ANNOTATED, PLAIN, CAPACITY_OFF, [REMOVE_ANNOTATION]),
    "annotation/update/gate-off/old-used": (ANNOTATED, ANNOTATED, CAPACITY_OFF, []),
    "annotation/update/gate-off/old-used-the-field": (ANNOTATED, REQUESTING, CAPACITY_OFF, []),
    "features-are-independent": (
        device_class(
            extendedResourceName="example.com/gpu", extendedResourceCapacityRequests={"requests": {}}
        ),
        NAMED,
        FeatureGates.defaults().with_overrides(DRAExtendedResource=False, DRAExtendedResourceCapacity=False),
        [REMOVE_CAPACITY],
    ),
    "explicit-null-is-not-in-use": (device_class(extendedResourceName=None), None, NAME_OFF, []),
}


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_drop_disabled_fields(case: str) -> None:
    new, old, gates, want = MATRIX[case]
    assert drop_disabled_fields(new, old, gates).patch == want


def test_drop_does_not_mutate_the_input() -> None:
    obj = with_annotation(REQUESTING, "{}")
    before = copy.deepcopy(obj)
    result = drop_disabled_fields(obj, None, CAPACITY_OFF)
    assert obj == before
    assert "extendedResourceCapacityRequests" not in result.obj["spec"]
    assert ANNOTATION not in result.obj["metadata"]["annotations"]


def test_dropped_object_equals_the_patched_object() -> None:
    obj = with_annotation(
        device_class(extendedResourceName="a.com/b", extendedResourceCapacityRequests={}), "{}"
    )
    gates = ON.with_overrides(DRAExtendedResource=False, DRAExtendedResourceCapacity=False)
    result = drop_disabled_fields(obj, None, gates)
    assert apply_removals(obj, result.patch) == result.obj


def test_json_pointer_escapes_slash_and_tilde() -> None:
    assert json_pointer("metadata", "annotations", "a~b/c") == "/metadata/annotations/a~0b~1c"


def _annotated_class(annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu", "labels": {"team": "a"}, "annotations": annotations},
        "spec": {"extendedResourceName": "example.com/gpu"},
    }


def test_dropping_the_carrier_keeps_every_other_annotation_and_the_rest_of_the_object() -> None:
    from resourceapi.capacity_requests import ANNOTATION as CARRIER

    obj = _annotated_class({"a.example.com/first": "1", CARRIER: "{}", "z.example.com/last": "2"})
    stored = drop_disabled_fields(obj, None, CAPACITY_OFF).obj
    assert stored["metadata"] == {
        "name": "gpu",
        "labels": {"team": "a"},
        "annotations": {"a.example.com/first": "1", "z.example.com/last": "2"},
    }
    assert stored["spec"] == {"extendedResourceName": "example.com/gpu"}


def test_each_dropped_field_is_named_in_its_warning() -> None:
    """A field the drop removes reaching /validate is warned about by its path and its gate."""
    from resourceapi.capacity_requests import ANNOTATION as CARRIER
    from webhook.deviceclass.warning_texts import not_dropped

    obj = _annotated_class({CARRIER: "{}"})
    obj["spec"]["extendedResourceCapacityRequests"] = {}
    gates = ON.with_overrides(DRAExtendedResource=False, DRAExtendedResourceCapacity=False)
    result = drop_disabled_fields(obj, None, gates)
    assert [not_dropped(d.path, d.gate) for d in result.dropped] == [
        "spec.extendedResourceName ignored: DRAExtendedResource is off (no /mutate webhook?)",
        "spec.extendedResourceCapacityRequests ignored: DRAExtendedResourceCapacity is off "
        "(no /mutate webhook?)",
        "dra-capacity.io/extended-resource-capacity-requests ignored: DRAExtendedResourceCapacity is off "
        "(no /mutate webhook?)",
    ]
    assert result.obj["spec"] == {}
    assert result.obj["metadata"]["annotations"] == {}


def test_nothing_dropped_returns_the_object_itself() -> None:
    obj = _annotated_class({"a.example.com/first": "1"})
    result = drop_disabled_fields(obj, None, CAPACITY_OFF)
    assert result.obj is obj and result.dropped == [] and result.patch == []


def test_apply_removals_refuses_other_operations() -> None:
    with pytest.raises(ValueError, match="unsupported JSONPatch operation 'add'"):
        apply_removals({"a": 1}, [{"op": "add", "path": "/a"}])


def test_dropping_only_a_spec_field_leaves_the_metadata_untouched() -> None:
    obj = {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": "example.com/gpu"}}
    stored = drop_disabled_fields(obj, None, NAME_OFF).obj
    assert stored == {"metadata": {"name": "gpu"}, "spec": {}}
    assert stored["metadata"] is obj["metadata"]


def test_apply_removals_unescapes_tilde_and_slash_in_pointer_tokens() -> None:
    obj = {"metadata": {"annotations": {"a~b/c": "1", "a~0b~1c": "2", "a/b": "3"}}}
    patch = [{"op": "remove", "path": json_pointer("metadata", "annotations", "a~b/c")}]
    assert apply_removals(obj, patch) == {"metadata": {"annotations": {"a~0b~1c": "2", "a/b": "3"}}}
    assert obj["metadata"]["annotations"] == {"a~b/c": "1", "a~0b~1c": "2", "a/b": "3"}
