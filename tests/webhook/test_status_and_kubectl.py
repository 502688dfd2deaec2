"""The 422 Status (apierrors.NewInvalid) and how kubectl prints it."""

from __future__ import annotations

from dra_capacity.kubectl import render_status, render_success, render_warnings
from resourceapi.machinery.field import invalid, required
from webhook.server.status import invalid_status

ONE = [required("spec.selectors[1].cel")]
TWO = [
    required("spec.selectors[1].cel"),
    invalid("spec.extendedResourceName", "x", "must be a valid extended resource name"),
]


def test_invalid_status_has_the_new_invalid_shape() -> None:
    assert invalid_status("gpu", TWO) == {
        "status": "Failure",
        "message": 'DeviceClass.resource.k8s.io "gpu" is invalid: [spec.selectors[1].cel: Required value, '
        'spec.extendedResourceName: Invalid value: "x": must be a valid extended resource name]',
        "reason": "Invalid",
        "details": {
            "name": "gpu",
            "group": "resource.k8s.io",
            "kind": "DeviceClass",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "field": "spec.selectors[1].cel",
                    "message": "Required value",
                },
                {
                    "reason": "FieldValueInvalid",
                    "field": "spec.extendedResourceName",
                    "message": 'Invalid value: "x": must be a valid extended resource name',
                },
            ],
        },
        "code": 422,
    }


def test_invalid_status_message_is_bare_for_one_error() -> None:
    assert invalid_status("gpu", ONE)["message"] == (
        'DeviceClass.resource.k8s.io "gpu" is invalid: spec.selectors[1].cel: Required value'
    )


def test_invalid_status_deduplicates_message_and_causes_as_kube_apiserver_does() -> None:
    # kube-apiserver v1.37.2 answers one cause for two equal errors (measured by tests/differential)
    status = invalid_status("gpu", ONE + ONE)
    assert (
        status["message"]
        == 'DeviceClass.resource.k8s.io "gpu" is invalid: spec.selectors[1].cel: Required value'
    )
    assert len(status["details"]["causes"]) == 1


def test_kubectl_prints_one_cause_inline() -> None:
    assert render_status(invalid_status("gpu", ONE)) == (
        'The DeviceClass "gpu" is invalid: spec.selectors[1].cel: Required value'
    )


def test_kubectl_prints_several_causes_as_a_list() -> None:
    assert render_status(invalid_status("gpu", TWO)).split("\n") == [
        'The DeviceClass "gpu" is invalid: ',
        "* spec.selectors[1].cel: Required value",
        '* spec.extendedResourceName: Invalid value: "x": must be a valid extended resource name',
    ]


def test_kubectl_skips_duplicate_causes() -> None:
    assert render_status(invalid_status("gpu", ONE + ONE)) == (
        'The DeviceClass "gpu" is invalid: spec.selectors[1].cel: Required value'
    )


def test_kubectl_prints_other_reasons_as_error_from_server() -> None:
    status = {"reason": "InternalError", "message": "Internal error occurred: boom", "code": 500}
    assert render_status(status) == "Error from server (InternalError): Internal error occurred: boom"


def test_kubectl_success_and_warning_lines() -> None:
    assert render_success("gpu", update=False) == "deviceclass.resource.k8s.io/gpu created"
    assert render_success("gpu", update=True) == "deviceclass.resource.k8s.io/gpu configured"
    assert render_warnings(["a", "b"]) == ["Warning: a", "Warning: b"]
