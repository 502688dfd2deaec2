"""The one Kubernetes 1.37 field schema: unknown fields named as the API server's strict field validation
names them, for every kind `simulate` and `validate` check; the committed schema is the generator's output."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from resourceapi.apischema import SCHEMA_FILE, check_fields, known_kind, unknown_fields

DEVICE_CLASS = ("resource.k8s.io/v1", "DeviceClass")
GENERATOR = Path(__file__).resolve().parents[2] / "scripts" / "gen_field_schemas.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_field_schemas", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_schema_is_the_generators_output() -> None:
    """fields.json is reproducible: regenerating it from the pinned kubernetes-validate changes nothing."""
    assert _generator().generate() == SCHEMA_FILE.read_text()


def test_nested_lists_maps_and_references_are_followed() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labelz": {}, "labels": {"any-key": "v"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}, "limit": {}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "efect": "NoSchedule"}],
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
    }
    assert unknown_fields("v1", "Pod", pod) == [
        "metadata.labelz",
        "spec.containers[0].resources.limit",
        "spec.tolerations[0].efect",
    ]


def test_a_type_without_a_schema_is_none() -> None:
    assert (
        unknown_fields("example.com/v1", "Widget", {"apiVersion": "example.com/v1", "kind": "Widget"}) is None
    )
    assert unknown_fields("", "Pod", {"kind": "Pod"}) is None


def test_device_class_knows_the_kep_6406_field_and_catches_a_typo() -> None:
    dc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {
            "extendedResourceNmae": "example.com/gpu",
            "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
            "selectors": [{"cel": {"expression": "true"}}],
        },
    }
    assert unknown_fields(*DEVICE_CLASS, dc) == ["spec.extendedResourceNmae"]


def test_a_known_device_class_has_no_unknown_field() -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {
            "name": "gpu",
            "labels": {"a": "b"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}],
            "selfLink": "",
        },
        "spec": {
            "selectors": [{"cel": {"expression": "true"}}],
            "config": [{"opaque": {"driver": "d", "parameters": {"free": {"form": 1}}}}],
            "extendedResourceName": "example.com/gpu",
            "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
        },
    }
    assert unknown_fields(*DEVICE_CLASS, obj) == []


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_every_served_device_class_version_is_checked(version: str) -> None:
    """`validate` reads v1, v1beta2 and v1beta1 DeviceClasses; each has its schema and the KEP-6406 field."""
    api_version = f"resource.k8s.io/{version}"
    obj: dict[str, Any] = {"spec": {"extendedResourceCapacityRequests": {}, "selector": []}}
    assert known_kind(api_version, "DeviceClass")
    assert unknown_fields(api_version, "DeviceClass", obj) == ["spec.selector"]


def test_typos_are_named_by_their_path_in_document_order() -> None:
    obj = {
        "metadata": {"name": "gpu", "nmae": "x"},
        "spec": {"extendedResourceNmae": "x", "selectors": [{"cel": {"expression": "true"}}, {"cell": {}}]},
    }
    assert unknown_fields(*DEVICE_CLASS, obj) == [
        "metadata.nmae",
        "spec.extendedResourceNmae",
        "spec.selectors[1].cell",
    ]


def test_owner_references_are_checked_field_by_field() -> None:
    obj = {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "nme": "p"}]}}
    assert unknown_fields(*DEVICE_CLASS, obj) == ["metadata.ownerReferences[0].nme"]


def test_managed_fields_entries_are_checked_field_by_field() -> None:
    """metav1.ManagedFieldsEntry is a struct: strict decoding names its unknown fields (fieldsV1 is free)."""
    obj = {"metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:x": {}}, "x": 1}]}}
    assert unknown_fields(*DEVICE_CLASS, obj) == ["metadata.managedFields[0].x"]


def test_the_kep_6406_field_is_typed_as_capacity_requirements() -> None:
    """As a KEP-6406 API server types it: `simulate` warns about an unknown key inside it, and refuses a
    non-object (`validate` leaves its inside to the carrier's own rules, tests/dra_capacity)."""
    obj = {"spec": {"extendedResourceCapacityRequests": {"requests": {}, "limits": {}}}}
    assert unknown_fields(*DEVICE_CLASS, obj) == ["spec.extendedResourceCapacityRequests.limits"]
    problem = check_fields(*DEVICE_CLASS, {"spec": {"extendedResourceCapacityRequests": 7}}).problem
    assert problem is not None
    assert (problem.path, problem.message) == (
        "spec.extendedResourceCapacityRequests",
        'Invalid value: "number": must be of type object',
    )


def test_values_of_the_wrong_type_are_not_unknown_fields() -> None:
    obj = {"spec": {"selectors": "not-a-list", "config": [42]}}
    report = check_fields(*DEVICE_CLASS, obj)
    assert report.unknown == []
    assert report.problem is not None
    assert (report.problem.path, report.problem.message) == (
        "spec.selectors",
        'Invalid value: "string": must be of type array',
    )


@pytest.mark.parametrize(
    "pod",
    [
        {"spec": {"containers": [{"name": "c", "imagee": "x"}], "nodeNmae": "n"}, "zz": 1},
        {"spec": {"containers": [{"name": "c"}], "nodeName": True}, "status": {"phase": False}},
        {"metadata": {"name": 1}, "spec": {"containers": [{"nme": "c"}]}},
        {"spec": {}, "status": {"conditions": [{"x": 1}]}},
    ],
)
def test_remembered_parts_give_the_same_report(pod: dict[str, Any]) -> None:
    """A top-level part walked once and remembered by its JSON text reports as the whole walk does, in
    document order, each time it is seen."""
    parts: dict[str, bytes] = {n: json.dumps(pod[n]).encode() for n in ("spec", "status") if n in pod}
    plain = check_fields("v1", "Pod", pod)
    assert plain.unknown or plain.problem is not None
    for _ in range(2):
        remembered = check_fields("v1", "Pod", pod, parts)
        assert (remembered.unknown, remembered.problem) == (plain.unknown, plain.problem)


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [("hostNetwork", "true", "boolean"), ("priority", "1", "integer"), ("nodeName", True, "string")],
)
def test_an_integer_or_boolean_field_takes_no_string(field: str, value: Any, expected: str) -> None:
    """Only a string field is lenient (it takes numbers, for quantities); the API server's decoder refuses
    `"true"` for a boolean and `"1"` for an integer."""
    pod = {"spec": {"containers": [{"name": "c"}], field: value}}
    problem = check_fields("v1", "Pod", pod).problem
    assert problem is not None
    kind = "boolean" if value is True else "string"
    assert (problem.path, problem.message) == (
        f"spec.{field}",
        f'Invalid value: "{kind}": must be of type {expected}',
    )
