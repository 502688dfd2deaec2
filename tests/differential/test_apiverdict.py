"""The library entry behind the differential (dra_capacity/apiverdict.py): what dra-capacity says the API
server answers to a create, without a server."""

from __future__ import annotations

from typing import Any

from dra_capacity.apiverdict import Cause, Judge, simulate_object, status_update

API = "resource.k8s.io/v1"


def device_class(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": spec}


def test_a_valid_device_class_is_created() -> None:
    verdict = Judge().judge(device_class(selectors=[{"cel": {"expression": "true"}}]))
    assert (verdict.allowed, verdict.code, verdict.causes) == (True, 201, ())


def test_native_rules_are_422_causes() -> None:
    verdict = Judge().judge(device_class(extendedResourceName="gpu"))
    assert (verdict.allowed, verdict.code) == (False, 422)
    assert verdict.causes == (
        Cause(
            "spec.extendedResourceName",
            "FieldValueInvalid",
            "Invalid value: \"gpu\": a name must be a domain-prefixed path, such as 'example.com/my-prop'",
        ),
    )


def test_unknown_fields_are_400_as_strict_decoding_says() -> None:
    verdict = Judge().judge(device_class(selector=[]))
    assert (verdict.code, verdict.causes) == (400, ())
    assert verdict.message == (
        'DeviceClass in version "v1" cannot be handled as a DeviceClass: strict decoding error: '
        'unknown field "spec.selector"'
    )


def test_a_wrong_json_type_is_a_400_without_causes() -> None:
    verdict = Judge().judge(device_class(extendedResourceName=5))
    assert (verdict.allowed, verdict.code, verdict.causes) == (False, 400, ())


def test_a_number_for_a_string_is_a_400_in_every_kind() -> None:
    """Go's decoder refuses a JSON number for a plain string field (`json: cannot unmarshal number into Go
    struct field DeviceAttribute.spec.devices.attributes.string of type string`); a quantity takes one."""
    device: dict[str, Any] = {"name": "d", "attributes": {"a": {"string": 1}}}
    slice_: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"driver": "example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n"},
    }
    slice_["spec"]["devices"] = [device]
    verdict = simulate_object("ResourceSlice", slice_)
    assert (verdict.allowed, verdict.code, verdict.causes) == (False, 400, ())
    device["attributes"] = {"a": {"string": "x"}}
    device["capacity"] = {"m": {"value": 1.5}}
    assert simulate_object("ResourceSlice", slice_).allowed
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": 7}}]}},
    }
    verdict = simulate_object("ResourceClaim", claim)
    assert (verdict.allowed, verdict.code, verdict.causes) == (False, 400, ())
    claim["spec"]["devices"]["requests"][0]["exactly"] = {
        "deviceClassName": "g",
        "capacity": {"requests": {"m": 2}},
    }
    assert simulate_object("ResourceClaim", claim).allowed


def test_a_wrong_type_is_reported_before_unknown_fields() -> None:
    """Go decodes first; strict field validation names unknown fields only of a body that decoded."""
    verdict = Judge().judge(device_class(extendedResourceName=5, typo=1))
    assert (verdict.code, verdict.causes) == (400, ())
    assert "strict decoding error" not in verdict.message
    assert "spec.extendedResourceName" in verdict.message


def test_kep_6406_carriers_are_not_native_causes() -> None:
    obj = device_class(
        extendedResourceName="example.com/gpu", extendedResourceCapacityRequests={"requests": {"x": "0"}}
    )
    assert Judge().judge(obj).allowed  # the field's own rule refuses it in `validate`, not the API server


def test_claims_are_judged_by_simulates_input_checks() -> None:
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "a"}]}},
    }
    verdict = simulate_object("ResourceClaim", claim)
    assert (verdict.code, verdict.causes) == (
        422,
        (
            Cause(
                "spec.devices.requests[0]",
                "FieldValueRequired",
                "Required value: exactly one of `exactly` or `firstAvailable` is required",
            ),
        ),
    )


def test_a_bad_quantity_is_a_400_that_names_no_field() -> None:
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "a",
                        "exactly": {"deviceClassName": "g", "capacity": {"requests": {"x": "1 Gi"}}},
                    }
                ]
            }
        },
    }
    verdict = simulate_object("ResourceClaim", claim)
    assert verdict.code == 400
    assert verdict.message.startswith(
        'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: quantities must match'
    )


def test_a_ported_kind_reports_every_cause_in_upstream_order() -> None:
    # ResourceSlices: upstream's whole validation (resourceapi/validation/slice.py), every cause in order
    slice_: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"driver": "-bad", "pool": {"name": "p", "resourceSliceCount": 0}, "nodeName": "n"},
    }
    verdict = simulate_object("ResourceSlice", slice_)
    assert [c.field for c in verdict.causes] == ["spec.driver", "spec.pool.resourceSliceCount"]


def test_a_claim_named_by_generate_name_is_judged_by_the_name_the_api_server_would_generate() -> None:
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"generateName": "c-", "namespace": "default"},
        "spec": {"devices": {"requests": []}},
    }
    assert simulate_object("ResourceClaim", claim).causes == ()
    claim["metadata"] = {"generateName": "Bad-", "namespace": "default"}
    # the prefix (its trailing dash masked), then the generated name, both at metadata.generateName
    assert [(c.field, c.message.split(": ")[1]) for c in simulate_object("ResourceClaim", claim).causes] == [
        ("metadata.generateName", '"Bad-"'),
        ("metadata.generateName", '"Bad-"'),
    ]


def test_a_create_does_not_judge_the_claims_status_which_the_api_server_wipes() -> None:
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": []}},
        "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
    }
    assert simulate_object("ResourceClaim", claim).allowed
    update = status_update(claim, {k: v for k, v in claim.items() if k != "status"})
    assert update.causes == (
        Cause(
            "status.reservedFor",
            "FieldValueForbidden",
            "Forbidden: may not be specified when `allocated` is not set",
        ),
    )


def test_a_bad_quantity_in_a_status_update_is_a_400_worded_as_the_decoder_words_it() -> None:
    # measured: kube-apiserver 1.37.2 answers `--1` with the suffix error, naming neither field nor value
    claim: dict[str, Any] = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": []}},
    }
    result = {"request": "a", "driver": "d", "pool": "p", "device": "x", "consumedCapacity": {"m": "--1"}}
    verdict = status_update({**claim, "status": {"allocation": {"devices": {"results": [result]}}}}, claim)
    assert (verdict.code, verdict.message) == (
        400,
        'ResourceClaim in version "v1" cannot be handled as a ResourceClaim: '
        "unable to parse quantity's suffix",
    )
