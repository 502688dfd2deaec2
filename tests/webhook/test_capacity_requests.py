"""KEP-6406 `spec.extendedResourceCapacityRequests` and its annotation carrier: the KEP's stated rules (keys
validated as kubernetes/kubernetes pkg/apis/resource/validation/validation.go validates capacity names), the
carrier's rules and the field's precedence as docs/validation.md states them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.deviceclasses import ANNOTATION, device_class, with_annotation

from resourceapi.gates import FeatureGates
from webhook.deviceclass.capacity_requests import check_capacity_requests

GATES = FeatureGates.defaults()
NO_CONSUMABLE = GATES.with_overrides(DRAConsumableCapacity=False)
FIELD = "spec.extendedResourceCapacityRequests"
ANN = f"metadata.annotations[{ANNOTATION}]"
C_IDENT = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
    "'[A-Za-z_][A-Za-z0-9_]*')"
)
QUANTITY_RE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def capacity(requests: Any, **spec: Any) -> dict[str, Any]:
    return device_class(
        "gpu-shared",
        extendedResourceName="nvidia.com/gpu.shared",
        extendedResourceCapacityRequests={"requests": requests},
        **spec,
    )


def errors(obj: dict[str, Any], old: dict[str, Any] | None = None, gates: FeatureGates = GATES) -> list[str]:
    return [str(e) for e in check_capacity_requests(obj, old, gates, "gpu-shared").errors]


def warnings(
    obj: dict[str, Any], old: dict[str, Any] | None = None, gates: FeatureGates = GATES
) -> list[str]:
    return check_capacity_requests(obj, old, gates, "gpu-shared").warnings


FIELD_CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "kep-story-1": ({"shares": "1"}, []),
    "kep-story-2": ({"bandwidth": "5Gi"}, []),
    "qualified-key": ({"gpu.nvidia.com/shares": "1"}, []),
    "numbers-are-quantities": ({"shares": 1, "memory": 0.5}, []),
    "zero": ({"shares": "0"}, [f'{FIELD}.requests[shares]: Invalid value: "0": must be greater than zero']),
    "negative": (
        {"shares": "-1"},
        [f'{FIELD}.requests[shares]: Invalid value: "-1": must be greater than zero'],
    ),
    "zero-with-suffix-is-canonical": (
        {"memory": "0Gi"},
        [f'{FIELD}.requests[memory]: Invalid value: "0": must be greater than zero'],
    ),
    "unparseable": ({"shares": "one"}, [f'{FIELD}.requests[shares]: Invalid value: "one": {QUANTITY_RE}']),
    "null-value": ({"shares": None}, [f'{FIELD}.requests[shares]: Invalid value: "null": {QUANTITY_RE}']),
    "key-not-c-identifier": (
        {"test-capacity": "1"},
        [f'{FIELD}.requests[test-capacity]: Invalid value: "test-capacity": {C_IDENT}'],
    ),
    "key-identifier-too-long": (
        {"a" * 33: "1"},
        [f"{FIELD}.requests[{'a' * 33}]: Too long: may not be more than 32 bytes"],
    ),
    "key-two-slashes": (
        {"a.com/b/c": "1"},
        [f'{FIELD}.requests[a.com/b/c]: Invalid value: "a.com/b/c": must not contain more than one slash'],
    ),
    "key-empty-domain": (
        {"/shares": "1"},
        [f'{FIELD}.requests[/shares]: Invalid value: "": the domain must not be empty'],
    ),
    "errors-sorted-by-key-and-all-reported": (
        {"z": "0", "a": "x"},
        [
            f'{FIELD}.requests[a]: Invalid value: "x": {QUANTITY_RE}',
            f'{FIELD}.requests[z]: Invalid value: "0": must be greater than zero',
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(FIELD_CASES))
def test_field_requests(case: str) -> None:
    requests, want = FIELD_CASES[case]
    assert errors(capacity(requests)) == want


def test_field_not_an_object_is_invalid() -> None:
    obj = device_class("gpu-shared", extendedResourceCapacityRequests="shares=1")
    assert errors(obj) == [f'{FIELD}: Invalid value: "<value omitted>": must be a valid JSON object']


def test_field_with_unknown_member_is_invalid() -> None:
    obj = device_class("gpu-shared", extendedResourceCapacityRequests={"request": {"shares": "1"}})
    assert errors(obj) == [f'{FIELD}: Invalid value: "<value omitted>": unknown field "request"']


def test_field_is_forbidden_without_consumable_capacity() -> None:
    assert errors(capacity({"shares": "0"}), gates=NO_CONSUMABLE) == [
        f"{FIELD}: Forbidden: may only be set when the DRAConsumableCapacity feature gate is enabled"
    ]


def test_field_without_extended_resource_name_is_allowed_with_a_warning() -> None:
    obj = device_class("gpu-shared", extendedResourceCapacityRequests={"requests": {"shares": "1"}})
    assert errors(obj) == []
    assert warnings(obj) == [
        "capacity requests apply only to deviceclass.resource.kubernetes.io/gpu-shared: "
        "extendedResourceName is unset"
    ]


def test_both_spellings_of_one_capacity_warn() -> None:
    obj = capacity({"shares": "1", "gpu.nvidia.com/shares": "1"})
    assert errors(obj) == []
    assert warnings(obj) == [
        'capacity requested as both "shares" and "gpu.nvidia.com/shares": '
        "the same capacity if the driver is the domain"
    ]


def test_update_does_not_revalidate_an_unchanged_field() -> None:
    old = capacity({"shares": "0"})
    assert errors(capacity({"shares": "0"}), old) == []


def test_update_does_not_revalidate_an_unchanged_entry() -> None:
    old = capacity({"shares": "0"})
    new = capacity({"shares": "0", "memory": "-1"})
    assert errors(new, old) == [f'{FIELD}.requests[memory]: Invalid value: "-1": must be greater than zero']


def test_update_keeps_unchanged_field_when_consumable_capacity_is_off() -> None:
    old = capacity({"shares": "1"})
    assert errors(capacity({"shares": "1"}), old, NO_CONSUMABLE) == []


# --- annotation carrier ---


def annotated(value: str, **spec: Any) -> dict[str, Any]:
    return with_annotation(
        device_class("gpu-shared", extendedResourceName="nvidia.com/gpu.shared", **spec), value
    )


ANNOTATION_CASES: dict[str, tuple[str, list[str]]] = {
    "valid": ('{"requests": {"shares": "1"}}', []),
    "zero": ('{"requests": {"shares": "0"}}', [f'{ANN}: Invalid value: "0": must be greater than zero']),
    "bad-key": ('{"requests": {"bad-key": "1"}}', [f'{ANN}: Invalid value: "bad-key": {C_IDENT}']),
    "bad-json": (
        "{requests: 1}",
        [
            f"{ANN}: Invalid value: \"{{requests: 1}}\": error parsing data as JSON: invalid character 'r' "
            "looking for beginning of object key string"
        ],
    ),
    "bad-json-long-value-is-omitted": (
        '{"requests": {"shares": "1"}' + " " * 60,
        [
            f'{ANN}: Invalid value: "<value omitted>": '
            "error parsing data as JSON: unexpected end of JSON input"
        ],
    ),
    "not-an-object": ('["shares"]', [f'{ANN}: Invalid value: "[\\"shares\\"]": must be a valid JSON object']),
    "null": ("null", [f"{ANN}: Required value"]),
    "requests-not-an-object": (
        '{"requests": ["shares"]}',
        [f'{ANN}: Invalid value: "{{\\"requests\\": [\\"shares\\"]}}": must be a valid JSON object'],
    ),
    "unknown-member": (
        '{"request": {"shares": "1"}}',
        [f'{ANN}: Invalid value: "{{\\"request\\": {{\\"shares\\": \\"1\\"}}}}": unknown field "request"'],
    ),
}


@pytest.mark.parametrize("case", sorted(ANNOTATION_CASES))
def test_annotation_requests(case: str) -> None:
    value, want = ANNOTATION_CASES[case]
    assert errors(annotated(value)) == want


def test_annotation_is_forbidden_without_consumable_capacity() -> None:
    assert errors(annotated('{"requests": {"shares": "1"}}'), gates=NO_CONSUMABLE) == [
        f"{ANN}: Forbidden: may only be set when the DRAConsumableCapacity feature gate is enabled"
    ]


def test_field_wins_over_annotation_with_a_warning() -> None:
    obj = with_annotation(capacity({"shares": "1"}), "not json")
    assert errors(obj) == []
    assert warnings(obj) == [
        f"annotation {ANNOTATION} is ignored: spec.extendedResourceCapacityRequests is set"
    ]


def test_annotation_without_extended_resource_name_warns() -> None:
    obj = with_annotation(device_class("gpu-shared"), json.dumps({"requests": {"shares": "1"}}))
    assert warnings(obj) == [
        "capacity requests apply only to deviceclass.resource.kubernetes.io/gpu-shared: "
        "extendedResourceName is unset"
    ]


def test_update_does_not_revalidate_an_unchanged_annotation() -> None:
    old = annotated('{"requests": {"shares": "0"}}')
    assert errors(annotated('{"requests": {"shares": "0"}}'), old) == []
