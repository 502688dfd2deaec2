"""The one Kubernetes 1.37 field schema: unknown fields named as the API server's strict field validation
names them, for every kind `simulate` and `validate` check; the committed schema is the generator's output."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from resourceapi.manifests.apischema import SCHEMA_FILE, check_fields, known_kind, unknown_fields

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
    """The API server's decoder refuses `"true"` for a boolean and `"1"` for an integer."""
    pod = {"spec": {"containers": [{"name": "c"}], field: value}}
    problem = check_fields("v1", "Pod", pod).problem
    assert problem is not None
    kind = "boolean" if value is True else "string"
    assert (problem.path, problem.message) == (
        f"spec.{field}",
        f'Invalid value: "{kind}": must be of type {expected}',
    )


# What kube-apiserver v1.37.2 answers to these creates (dry-run, probed with tests/differential/server.py):
# 400 when Go's decoder refuses the value (`json: cannot unmarshal number into Go struct field ... of type
# string`), else it decodes. A plain string takes no number; a resource.Quantity takes a string or any
# number (1, 1.5, 1e3, 1E3, -1, 1.0, 1e400, a 23-digit integer); an intstr.IntOrString a string or an integer
# that fits an int32 (80.0, 80.5, 4294967296 and true are refused); an int64 takes no string and no 1.0 or
# 1e3; null is the zero value everywhere.
SLICE_DEVICE = ("resource.k8s.io/v1", "ResourceSlice", ("spec", "devices", 0))
CLAIM_EXACTLY = ("resource.k8s.io/v1", "ResourceClaim", ("spec", "devices", "requests", 0, "exactly"))
CONTAINER = ("v1", "Pod", ("spec", "containers", 0))
DECODE_VERDICTS: list[tuple[tuple[str, str, tuple[Any, ...]], dict[str, Any], bool]] = [
    (SLICE_DEVICE, {"attributes": {"a": {"string": 1}}}, False),
    (SLICE_DEVICE, {"attributes": {"a": {"string": 1.5}}}, False),
    (SLICE_DEVICE, {"attributes": {"a": {"version": 1}}}, False),
    (SLICE_DEVICE, {"attributes": {"a": {"string": "x"}}}, True),
    (SLICE_DEVICE, {"attributes": {"a": {"string": None, "int": 1}}}, True),
    (SLICE_DEVICE, {"attributes": {"a": {"int": "1"}}}, False),
    (SLICE_DEVICE, {"attributes": {"a": {"int": 1.0}}}, False),
    (SLICE_DEVICE, {"attributes": {"a": {"bool": "true"}}}, False),
    (SLICE_DEVICE, {"capacity": {"m": {"value": 1}}}, True),
    (SLICE_DEVICE, {"capacity": {"m": {"value": 1.5}}}, True),
    (SLICE_DEVICE, {"capacity": {"m": {"value": -1}}}, True),
    (SLICE_DEVICE, {"capacity": {"m": {"value": 12345678901234567890123}}}, True),
    (SLICE_DEVICE, {"capacity": {"m": {"value": True}}}, False),
    (SLICE_DEVICE, {"capacity": {"m": {"value": []}}}, False),
    (SLICE_DEVICE, {"capacity": {"m": {"value": {}}}}, False),
    (SLICE_DEVICE, {"capacity": {"m": {"value": "1", "requestPolicy": {"validValues": [1, 2.5]}}}}, True),
    (CLAIM_EXACTLY, {"deviceClassName": 1}, False),
    (CLAIM_EXACTLY, {"allocationMode": 1}, False),
    (CLAIM_EXACTLY, {"count": "1"}, False),
    (CLAIM_EXACTLY, {"count": 1.5}, False),
    (CLAIM_EXACTLY, {"selectors": {}}, False),
    (CLAIM_EXACTLY, {"capacity": {"requests": {"m": 2}}}, True),
    (CLAIM_EXACTLY, {"capacity": {"requests": {"m": "x"}}}, True),  # a bad text is the quantity's own 400
    (CONTAINER, {"image": 1}, False),
    (CONTAINER, {"args": "x"}, False),
    (CONTAINER, {"workingDir": None}, True),
    (CONTAINER, {"resources": {"requests": {"cpu": 1, "memory": 0.5}}}, True),
    (CONTAINER, {"ports": [{"containerPort": "80"}]}, False),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": 80}}}, True),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": "http"}}}, True),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": 2**31 - 1}}}, True),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": 80.0}}}, False),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": 80.5}}}, False),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": 2**32}}}, False),
    (CONTAINER, {"livenessProbe": {"httpGet": {"port": True}}}, False),
    (("v1", "Node", ("status",)), {"capacity": {"cpu": 4}}, True),
    (("v1", "Node", ("spec",)), {"podCIDR": 1}, False),
    (("v1", "Node", ("spec",)), {"unschedulable": "true"}, False),
    (("resource.k8s.io/v1", "DeviceClass", ("spec",)), {"extendedResourceName": 1}, False),
    (("resource.k8s.io/v1", "DeviceClass", ("spec",)), {"extendedResourceName": None}, True),
    (("resource.k8s.io/v1", "DeviceClass", ("spec",)), {"selectors": [{"cel": {"expression": 1}}]}, False),
]


def _placed(where: tuple[str, str, tuple[Any, ...]], fields: dict[str, Any]) -> dict[str, Any]:
    api_version, kind, path = where
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    skeleton: dict[str, Any] = {
        "ResourceSlice": {"spec": {"driver": "d", "pool": {"name": "p"}, "devices": [{"name": "d"}]}},
        "ResourceClaim": {"spec": {"devices": {"requests": [{"name": "a", "exactly": {}}]}}},
        "Pod": {"spec": {"containers": [{"name": "c"}]}},
    }.get(kind, {})
    obj.update(json.loads(json.dumps(skeleton)))
    target: Any = obj
    for key in path:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target.update(fields)
    return obj


@pytest.mark.parametrize(("where", "fields", "decodes"), DECODE_VERDICTS)
def test_json_types_are_decoded_as_go_decodes_them(
    where: tuple[str, str, tuple[Any, ...]], fields: dict[str, Any], decodes: bool
) -> None:
    obj = _placed(where, fields)
    report = check_fields(where[0], where[1], obj)
    assert report.unknown == []
    wrong = report.problem is not None and not report.problem.message.startswith("Required value")
    assert wrong is not decodes, report.problem
    if wrong:
        assert report.problem is not None and report.problem.message.startswith('Invalid value: "')


def test_the_schema_types_quantities_and_int_or_strings_apart_from_strings() -> None:
    types = json.loads(SCHEMA_FILE.read_text())["types"]
    assert types["io.k8s.api.resource.v1.DeviceCapacity"]["fields"]["value"] == "q"
    assert types["io.k8s.api.resource.v1.DeviceAttribute"]["fields"]["string"] == "s"
    assert types["io.k8s.api.core.v1.ResourceRequirements"]["fields"]["requests"] == ["d", "q"]
    assert types["io.k8s.api.core.v1.HTTPGetAction"]["fields"]["port"] == "x"
    assert types["io.k8s.api.core.v1.NodeSpec"]["fields"]["podCIDR"] == "s"


@pytest.mark.parametrize("remembered", [False, True])
def test_a_wrong_type_wins_over_a_missing_required_field_found_before_it(remembered: bool) -> None:
    """Go decodes the whole body before any rule runs: a wrong type after a missing required field is still
    the 400 (the request without a name comes first, its count a string after it)."""
    claim = _placed(CLAIM_EXACTLY, {"count": "1"})
    claim["spec"]["devices"]["requests"].insert(0, {"exactly": {"deviceClassName": "c"}})
    parts = {"spec": json.dumps(claim["spec"]).encode()} if remembered else None
    problem = check_fields("resource.k8s.io/v1", "ResourceClaim", claim, parts).problem
    assert problem is not None
    assert (problem.path, problem.message) == (
        "spec.devices.requests[1].exactly.count",
        'Invalid value: "string": must be of type integer',
    )
    del claim["spec"]["devices"]["requests"][1]
    problem = check_fields("resource.k8s.io/v1", "ResourceClaim", claim, parts and None).problem
    assert problem is not None and problem.message == "Required value"
