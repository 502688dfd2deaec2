"""DeviceClassAdmission: /mutate and /validate on AdmissionReview requests."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from support.deviceclasses import ANNOTATION, device_class, review_request, with_annotation

from resourceapi.gates import FeatureGates
from webhook.deviceclass.admission import AdmissionOutcome, DeviceClassAdmission
from webhook.deviceclass.warning_texts import MAX_WARNING_LENGTH

ON = FeatureGates.defaults()
NAME_OFF = ON.with_overrides(DRAExtendedResource=False)
CAPACITY_OFF = ON.with_overrides(DRAExtendedResourceCapacity=False)


def patch_of(outcome: AdmissionOutcome) -> list[dict[str, Any]]:
    response = outcome.response
    if "patch" not in response:
        return []
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops


def test_valid_class_is_allowed_and_echoes_the_uid() -> None:
    outcome = DeviceClassAdmission(ON).validate(review_request(device_class("gpu"), uid="abc"))
    assert outcome.response == {"uid": "abc", "allowed": True}
    assert outcome.handled
    assert (outcome.name, outcome.operation) == ("gpu", "CREATE")


def test_invalid_class_is_rejected_with_a_422_status_and_cause_types() -> None:
    obj = device_class("gpu", selectors=[{}], extendedResourceName="x")
    outcome = DeviceClassAdmission(ON).validate(review_request(obj))
    response = outcome.response
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert response["status"]["reason"] == "Invalid"
    assert response["status"]["message"].startswith('DeviceClass.resource.k8s.io "gpu" is invalid: [')
    assert outcome.cause_types == ["FieldValueRequired", "FieldValueInvalid"]


def test_mutate_drops_a_disabled_field_on_create_as_a_json_patch() -> None:
    obj = device_class("gpu", extendedResourceName="example.com/gpu")
    outcome = DeviceClassAdmission(NAME_OFF).mutate(review_request(obj))
    assert outcome.response["allowed"] is True
    assert "warnings" not in outcome.response
    assert patch_of(outcome) == [{"op": "remove", "path": "/spec/extendedResourceName"}]


def test_mutate_removes_the_annotation_with_an_escaped_pointer() -> None:
    obj = with_annotation(device_class("gpu"), '{"requests": {"shares": "1"}}')
    outcome = DeviceClassAdmission(CAPACITY_OFF).mutate(review_request(obj))
    assert patch_of(outcome) == [
        {"op": "remove", "path": "/metadata/annotations/dra-capacity.io~1extended-resource-capacity-requests"}
    ]


def test_mutate_without_anything_to_drop_has_no_patch() -> None:
    outcome = DeviceClassAdmission(ON).mutate(
        review_request(device_class("gpu", extendedResourceName="a.com/b"))
    )
    assert outcome.response == {"uid": "uid-1", "allowed": True}


def test_validate_never_rejects_a_field_the_drop_removes_but_warns() -> None:
    obj = device_class("gpu", extendedResourceName="not valid")
    outcome = DeviceClassAdmission(NAME_OFF).validate(review_request(obj))
    assert outcome.response["allowed"] is True
    assert outcome.response["warnings"] == [
        "spec.extendedResourceName ignored: DRAExtendedResource is off (no /mutate webhook?)"
    ]


CAPACITY_OFF = ON.with_overrides(DRAExtendedResourceCapacity=False)
ESCAPED_FIELD = "spec.extendedResourceCapacityRequests"


def test_an_escaped_capacity_field_is_still_judged_and_an_invalid_value_denied() -> None:
    obj = device_class(
        "nic",
        extendedResourceName="example.com/nic",
        extendedResourceCapacityRequests={"requests": {"bandwidth": "0"}},
    )
    outcome = DeviceClassAdmission(CAPACITY_OFF).validate(review_request(obj))
    assert outcome.response["allowed"] is False
    causes = outcome.response["status"]["details"]["causes"]
    assert causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "0": must be greater than zero',
            "field": "spec.extendedResourceCapacityRequests.requests[bandwidth]",
        }
    ]
    assert outcome.response["warnings"] == [
        f"{ESCAPED_FIELD}: the drop did not run (DRAExtendedResourceCapacity off, no /mutate?); value judged"
    ]


def test_an_escaped_capacity_annotation_is_still_judged_and_an_invalid_value_denied() -> None:
    obj = with_annotation(device_class("nic"), '{"requests": {"bandwidth": "0"}}')
    outcome = DeviceClassAdmission(CAPACITY_OFF).validate(review_request(obj))
    assert outcome.response["allowed"] is False
    (cause,) = outcome.response["status"]["details"]["causes"]
    assert cause["field"] == f"metadata.annotations[{ANNOTATION}]"
    assert "must be greater than zero" in cause["message"]
    assert "drop did not run" in outcome.response["warnings"][0]


@pytest.mark.parametrize("consumable", [True, False])
def test_an_escaped_valid_capacity_request_is_allowed_with_the_warning(consumable: bool) -> None:
    gates = CAPACITY_OFF.with_overrides(DRAConsumableCapacity=consumable)
    field = device_class("nic", extendedResourceCapacityRequests={"requests": {"bandwidth": "5Gi"}})
    carrier = with_annotation(device_class("nic"), '{"requests": {"bandwidth": "5Gi"}}')
    for obj in (field, carrier):
        outcome = DeviceClassAdmission(gates).validate(review_request(obj))
        assert outcome.response["allowed"] is True
        assert any("drop did not run" in w for w in outcome.response["warnings"])


def test_an_escaped_capacity_value_unchanged_on_update_is_not_re_judged() -> None:
    old = with_annotation(device_class("nic"), '{"requests": {"bandwidth": "0"}}')
    new = with_annotation(device_class("nic", selectors=[]), '{"requests": {"bandwidth": "0"}}')
    outcome = DeviceClassAdmission(CAPACITY_OFF).validate(review_request(new, old))
    assert outcome.response["allowed"] is True


def test_validate_judges_a_kept_field_on_update_when_the_old_object_used_it() -> None:
    old = device_class("gpu", extendedResourceName="a.com/b")
    new = device_class("gpu", extendedResourceName="not valid")
    outcome = DeviceClassAdmission(NAME_OFF).validate(review_request(new, old))
    assert outcome.response["allowed"] is False
    assert "warnings" not in outcome.response


def test_capacity_requests_without_consumable_capacity_are_forbidden() -> None:
    obj = device_class(
        "gpu", extendedResourceName="a.com/b", extendedResourceCapacityRequests={"requests": {"s": "1"}}
    )
    outcome = DeviceClassAdmission(ON.with_overrides(DRAConsumableCapacity=False)).validate(
        review_request(obj)
    )
    assert outcome.cause_types == ["FieldValueForbidden"]


def test_beta_versions_are_handled_like_v1() -> None:
    outcome = DeviceClassAdmission(ON).validate(
        review_request(device_class("gpu", selectors=[{}]), version="v1beta2")
    )
    assert outcome.handled
    assert outcome.response["allowed"] is False


FOREIGN: dict[str, dict[str, Any]] = {
    "other-kind": {
        **review_request(device_class("x", selectors=[{}])),
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
    },
    "other-group": {
        **review_request(device_class("x", selectors=[{}])),
        "kind": {"group": "example.com", "version": "v1", "kind": "DeviceClass"},
    },
    "unknown-version": review_request(device_class("x", selectors=[{}]), version="v2"),
    "delete": review_request(device_class("x", selectors=[{}]), operation="DELETE"),
    "connect": review_request(device_class("x", selectors=[{}]), operation="CONNECT"),
    "missing-object": {k: v for k, v in review_request(device_class("x")).items() if k != "object"},
    "object-not-a-mapping": review_request(["not", "an", "object"]),
    "subresource": {**review_request(device_class("x", selectors=[{}])), "subResource": "status"},
    "kind-missing-resource-foreign": {
        k: v
        for k, v in review_request(device_class("x", selectors=[{}])).items()
        if k not in ("kind", "resource")
    },
}


@pytest.mark.parametrize("case", sorted(FOREIGN))
@pytest.mark.parametrize("endpoint", ["validate", "mutate"])
def test_foreign_reviews_are_allowed_unhandled(case: str, endpoint: str) -> None:
    outcome = getattr(DeviceClassAdmission(ON), endpoint)(FOREIGN[case])
    assert outcome.response == {"uid": "uid-1", "allowed": True}
    assert outcome.handled is False


MISTYPED: dict[str, tuple[str, Any]] = {
    # (member of the request, value): the envelope rejects these with 400; the handler must not raise.
    "kind.version-array": ("kind", {"group": "resource.k8s.io", "version": [], "kind": "DeviceClass"}),
    "kind.kind-object": ("kind", {"group": "resource.k8s.io", "version": "v1", "kind": {}}),
    "kind.group-number": ("kind", {"group": 1, "version": "v1", "kind": "DeviceClass"}),
    "kind-string": ("kind", "DeviceClass"),
    "resource.version-array": ("resource", {"group": "resource.k8s.io", "version": ["v1"], "resource": 1}),
    "operation-array": ("operation", ["CREATE"]),
    "operation-object": ("operation", {"CREATE": True}),
    "subResource-array": ("subResource", ["status"]),
    "name-array": ("name", ["x"]),
    "object-string": ("object", "x"),
    "oldObject-array": ("oldObject", [1]),
    "dryRun-string": ("dryRun", "yes"),
}


@pytest.mark.parametrize("case", sorted(MISTYPED))
@pytest.mark.parametrize("endpoint", ["validate", "mutate"])
def test_mistyped_request_members_get_an_answer_never_an_exception(case: str, endpoint: str) -> None:
    key, value = MISTYPED[case]
    request = {**review_request(device_class("x", selectors=[{}])), key: value}
    if key == "kind":
        del request["resource"]  # so that `kind` alone decides
    outcome = getattr(DeviceClassAdmission(ON), endpoint)(request)
    assert outcome.response["uid"] == "uid-1"
    assert isinstance(outcome.response["allowed"], bool)
    assert isinstance(outcome.operation, str) and isinstance(outcome.name, str)


def test_update_without_old_object_is_judged_as_a_create() -> None:
    outcome = DeviceClassAdmission(ON).validate(review_request(device_class("gpu"), operation="UPDATE"))
    assert outcome.response["allowed"] is True


@pytest.mark.parametrize(
    "obj",
    [
        {"metadata": "nope", "spec": []},
        {"metadata": {"name": 5}, "spec": {"selectors": "x", "config": {"a": 1}}},
        {
            "spec": {
                "selectors": [None, 1, {"cel": "x"}, {"cel": {"expression": 3}}],
                "config": [1, {"opaque": 1}],
            }
        },
        {"metadata": {"name": "gpu", "annotations": {ANNOTATION: 7}}},
        {"spec": {"extendedResourceName": 3, "extendedResourceCapacityRequests": {"requests": {"a": [1]}}}},
    ],
)
def test_malformed_objects_are_rejected_never_raised(obj: dict[str, Any]) -> None:
    outcome = DeviceClassAdmission(ON).validate(review_request(obj))
    assert outcome.response["allowed"] is False
    assert outcome.response["status"]["code"] == 422


def test_all_warnings_fit_in_120_characters() -> None:
    long_name = "a" * 253
    obj = with_annotation(
        device_class(
            long_name,
            extendedResourceCapacityRequests={"requests": {"shares": "1", f"{'b' * 63}/shares": "1"}},
        ),
        "{}",
    )
    obj["spec"]["extendedResourceName"] = "c.com/d"
    outcome = DeviceClassAdmission(NAME_OFF).validate(review_request(obj))
    notes = outcome.response["warnings"]
    assert len(notes) == 4
    assert all(len(n) <= MAX_WARNING_LENGTH for n in notes)


def test_warm_up_builds_the_cel_environment() -> None:
    DeviceClassAdmission(ON).warm_up()
