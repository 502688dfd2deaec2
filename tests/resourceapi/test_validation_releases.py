"""The ported validation per release (resourceapi/releases.py `Validation`): what v1.38.0-beta.0's
`pkg/apis/resource/validation` refuses that v1.37.2's accepts, and the same object on both."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.objects import make_claim, make_slice
from resourceapi.cel import compile_selector
from resourceapi.gates import FeatureGates
from resourceapi.validation.objects import validate_create

ON_137 = FeatureGates.parse("", release="1.37")
ON_138 = FeatureGates.parse("", release="1.38")


def _errors(kind: str, obj: dict[str, Any], gates: FeatureGates) -> list[str]:
    found = validate_create(kind, obj, gates)
    assert found is not None
    return [str(e) for e in found]


def _device(**fields: Any) -> dict[str, Any]:
    return {"name": "gpu-0", **fields}


def test_a_qualified_name_with_two_slashes_is_refused_from_1_38() -> None:
    obj = make_slice("node-1").devices(_device(attributes={"a.example.com/b/c": {"int": 1}})).obj()
    assert _errors("ResourceSlice", obj, ON_137) == []
    assert _errors("ResourceSlice", obj, ON_138) == [
        'spec.devices[0].attributes: Invalid value: "a.example.com/b/c": must not contain more than one slash'
    ]


def test_semver_numbers_have_at_most_18_digits_from_1_38() -> None:
    version = "1." + "9" * 19 + ".0"
    obj = make_slice("node-1").devices(_device(attributes={"fw": {"version": version}})).obj()
    assert _errors("ResourceSlice", obj, ON_137) == []
    assert _errors("ResourceSlice", obj, ON_138) == [
        f'spec.devices[0].attributes[fw].version: Invalid value: "{version}": must be a string compatible '
        "with semver.org spec 2.0.0, with at most 18 digits in numbers"
    ]
    fits = make_slice("node-1").devices(_device(attributes={"fw": {"version": "1." + "9" * 18 + ".0"}}))
    assert _errors("ResourceSlice", fits.obj(), ON_138) == []


def _per_device_slice(*devices: dict[str, Any]) -> dict[str, Any]:
    obj = make_slice("node-1").devices(*devices).spec(perDeviceNodeSelection=True).obj()
    obj["spec"].pop("nodeName", None)
    return obj


TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}


def test_a_per_device_node_selector_has_exactly_one_term_from_1_38_judged_after_every_device() -> None:
    two_terms = _device(nodeSelector={"nodeSelectorTerms": [TERM, TERM]})
    bad_name = {**_device(allNodes=True), "name": "Bad_Name"}
    obj = _per_device_slice(two_terms, bad_name)
    on_137 = _errors("ResourceSlice", obj, ON_137)
    on_138 = _errors("ResourceSlice", obj, ON_138)
    assert not any("exactly one node selector term" in e for e in on_137)
    assert on_138[-1].startswith(
        "spec.devices[0].nodeSelector.nodeSelectorTerms: Invalid value: "
    ) and on_138[-1].endswith("must have exactly one node selector term")
    assert on_138[0].startswith(
        "spec.devices[1].name"
    )  # device 1's own errors come before device 0's selection


def test_claim_capacity_requests_are_qualified_names_at_most_32_and_not_negative_from_1_38() -> None:
    bad = make_claim("c").request("gpu", "gpu.example.com", {"a/b/c": "1", "shares": "-1"}).obj()
    assert _errors("ResourceClaim", bad, ON_137) == []
    assert _errors("ResourceClaim", bad, ON_138) == [
        'spec.devices.requests[0].exactly.capacity.requests: Invalid value: "a/b/c": must not contain more '
        "than one slash",
        'spec.devices.requests[0].exactly.capacity.requests[shares]: Invalid value: "-1": must be greater '
        "than or equal to 0",
    ]
    many = {f"c{i}": "1" for i in range(33)}
    too_many = make_claim("c").request("gpu", "gpu.example.com", many).obj()
    assert _errors("ResourceClaim", too_many, ON_137) == []
    assert _errors("ResourceClaim", too_many, ON_138) == [
        "spec.devices.requests[0].exactly.capacity.requests: Too many: 33: must have at most 32 items"
    ]


@pytest.mark.parametrize("gates", [ON_137, ON_138])
def test_valid_objects_are_accepted_on_both(gates: FeatureGates) -> None:
    claim = make_claim("c").request("gpu", "gpu.example.com", {"gpu.example.com/memory": "10Gi"}).obj()
    assert _errors("ResourceClaim", claim, gates) == []
    slice_ = make_slice("node-1").devices(_device(attributes={"fw": {"version": "1.2.3"}})).obj()
    assert _errors("ResourceSlice", slice_, gates) == []


def test_a_missing_owner_reference_field_is_the_declarative_required_on_1_38() -> None:
    claim = make_claim("c").request("gpu", "gpu.example.com").obj()
    claim["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": ""}]
    assert _errors("ResourceClaim", claim, ON_137) == [
        "metadata.ownerReferences[0].uid: Required value: must not be empty"
    ]
    assert _errors("ResourceClaim", claim, ON_138) == ["metadata.ownerReferences[0].uid: Required value"]


def test_an_undeclared_reference_names_no_container_on_1_38() -> None:
    on_137 = compile_selector("noSuchVar", ON_137).issues[0].detail
    on_138 = compile_selector("noSuchVar", ON_138).issues[0].detail
    assert "undeclared reference to 'noSuchVar' (in container '')" in on_137
    assert "undeclared reference to 'noSuchVar'\n" in on_138


def test_a_constraint_attribute_with_two_slashes_is_refused_from_1_38() -> None:
    claim = make_claim("c").request("gpu", "gpu.example.com").obj()
    claim["spec"]["devices"]["constraints"] = [{"requests": ["gpu"], "matchAttribute": "a/b/c"}]
    assert _errors("ResourceClaim", claim, ON_137) == []
    assert _errors("ResourceClaim", claim, ON_138) == [
        'spec.devices.constraints[0].matchAttribute: Invalid value: "a/b/c": '
        "must not contain more than one slash"
    ]


ON_136 = FeatureGates.parse("", release="1.36")
SUBDOMAIN_136 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def test_1_36_judges_a_claims_opaque_driver_before_its_parameters() -> None:
    obj = make_claim("c").obj()
    obj["spec"] = {"devices": {"config": [{"opaque": {"driver": "x..y", "parameters": None}}]}}
    on_136 = _errors("ResourceClaim", obj, ON_136)
    assert on_136 == [
        f'spec.devices.config[0].opaque.driver: Invalid value: "x..y": {SUBDOMAIN_136}',
        "spec.devices.config[0].opaque.parameters: Required value",
    ]
    assert (
        _errors("ResourceClaim", obj, ON_137)[0] == "spec.devices.config[0].opaque.parameters: Required value"
    )


def test_1_36_reports_owner_reference_fields_unindexed_and_each_time() -> None:
    """apimachinery v0.36.3 `validateOwnerReference`: every reference's errors at the list's own path, each
    an `Invalid value` (the version through `FromAPIVersionAndKind`), a repeated one reported again."""
    obj = make_claim("c").obj()
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/", "kind": "", "name": "a", "uid": "u1"},
        {"apiVersion": "v1", "kind": "", "name": "b", "uid": "u2"},
    ]
    assert _errors("ResourceClaim", obj, ON_136) == [
        'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
    ]
    on_137 = _errors("ResourceClaim", obj, ON_137)
    expected = '[0].apiVersion: Invalid value: "apps/": must be <group>/<version> or <version>'
    assert on_137[0].endswith(expected)


def _claim(devices: dict[str, Any]) -> dict[str, Any]:
    obj = make_claim("c").obj()
    obj["spec"] = {"devices": devices}
    return obj


def test_1_36_judges_a_constraints_attribute_by_the_handwritten_qualified_name() -> None:
    """v1.36.3 validateQualifiedName: the domain is a driver name (lowercased, so `Example.com` passes), an
    empty name is `the name must not be empty`; 1.37's declarative format says `name must not be empty`."""
    devices = {
        "requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}],
        "constraints": [{"matchAttribute": "Example.com/"}],
    }
    assert _errors("ResourceClaim", _claim(devices), ON_136) == [
        'spec.devices.constraints[0].matchAttribute: Invalid value: "": the name must not be empty'
    ]
    assert 'spec.devices.constraints[0].matchAttribute: Invalid value: "": name must not be empty' in _errors(
        "ResourceClaim", _claim(devices), ON_137
    )


def test_1_36_reports_a_subrequests_class_selectors_and_mode_by_hand_in_place() -> None:
    """v1.36.3 validateDeviceSubRequest: the class (Required, or IsDNS1123Subdomain's `253 characters`), the
    selectors' Too many, the mode's Unsupported, each in the subrequest's own place, then the Duplicates."""
    selector = {"cel": {"expression": "true"}}
    subs = [
        {"name": "a", "deviceClassName": "x" * 254},
        {"name": "b", "deviceClassName": "c", "selectors": [selector] * 33, "allocationMode": "Some"},
        {"name": "a", "deviceClassName": ""},
    ]
    first = "spec.devices.requests[0].firstAvailable"
    assert _errors(
        "ResourceClaim", _claim({"requests": [{"name": "r", "firstAvailable": subs}]}), ON_136
    ) == [
        f'{first}[0].deviceClassName: Invalid value: "{"x" * 254}": must be no more than 253 characters',
        f"{first}[1].selectors: Too many: 33: must have at most 32 items",
        f'{first}[1].allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"',
        f"{first}[2].deviceClassName: Required value",
        f'{first}[2]: Duplicate value: "a"',
    ]


def test_1_36_judges_a_toleration_key_operator_and_effect_in_its_handwritten_order() -> None:
    toleration = {"key": "bad key", "operator": "Maybe", "effect": "Later"}
    request = {"name": "r", "exactly": {"deviceClassName": "c", "tolerations": [toleration]}}
    path = "spec.devices.requests[0].exactly.tolerations[0]"
    got = _errors("ResourceClaim", _claim({"requests": [request]}), ON_136)
    assert [e.split(":")[0] for e in got] == [f"{path}.key", f"{path}.operator", f"{path}.effect"]
    assert got[1] == f'{path}.operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"'


def test_1_36_reports_an_attributes_union_by_hand() -> None:
    """v1.36.3 validateDeviceAttribute: `exactly one value must be specified` (1.37's declarative union
    says `must specify one of: ...`)."""
    obj = make_slice("node-1").devices(_device(attributes={"dra.example.com/x": {}})).obj()
    assert _errors("ResourceSlice", obj, ON_136) == [
        'spec.devices[0].attributes[dra.example.com/x]: Invalid value: "": '
        "exactly one value must be specified"
    ]


def test_1_36_judges_counter_names_as_dns_labels_in_characters() -> None:
    consumption = {"counterSet": "cs", "counters": {"x" * 64: {"value": "1"}}}
    obj = make_slice("node-1").devices(_device(consumesCounters=[consumption, consumption])).obj()
    path = "spec.devices[0].consumesCounters"
    assert _errors("ResourceSlice", obj, ON_136) == [
        f'{path}[0].counters: Invalid value: "{"x" * 64}": must be no more than 63 characters',
        f'{path}[1].counters: Invalid value: "{"x" * 64}": must be no more than 63 characters',
        f'{path}[1]: Duplicate value: "cs"',
    ]


def test_1_36_reports_a_default_below_min_at_min() -> None:
    policy = {"default": "1", "validRange": {"min": "2"}}
    capacity = {"memory": {"value": "4", "requestPolicy": policy}}
    obj = make_slice("node-1").devices(_device(allowMultipleAllocations=True, capacity=capacity)).obj()
    at = "spec.devices[0].capacity[memory].requestPolicy.validRange"
    assert _errors("ResourceSlice", obj, ON_136) == [
        f'{at}.min: Invalid value: "1": default is less than min: 2'
    ]
    assert _errors("ResourceSlice", obj, ON_137) == [
        f'{at}.default: Invalid value: "1": default is less than min: 2'
    ]


def test_a_repeated_requests_quantity_past_e_is_shown_with_its_exponent_from_1_38() -> None:
    """A `Duplicate value` shows the whole request as Go marshals it: v1.38.0-beta.0 prints `1000000P` as
    `1e21` (apimachinery v0.38 `CanonicalizeBytes`), v1.37.2 as `1` (measured: the differential's
    `ResourceClaim|message|spec.devices.requests[*]|FieldValueDuplicate`, seed 1740399943)."""
    capacity = {"/x": "1000000P", "shares": "100E-3"}
    obj = (
        make_claim("c")
        .request("gpu", "gpu.example.com", capacity)
        .request("gpu", "gpu.example.com", capacity)
    )
    shown = '{{"name":"gpu","exactly":{{"deviceClassName":"gpu.example.com","allocationMode":"ExactCount",'
    shown += '"count":1,"capacity":{{"requests":{{"/x":"{x}","shares":"100E-3"}}}}}}}}'
    duplicate = "spec.devices.requests[1]: Duplicate value: "
    assert duplicate + shown.format(x="1") in _errors("ResourceClaim", obj.obj(), ON_137)
    assert duplicate + shown.format(x="1e21") in _errors("ResourceClaim", obj.obj(), ON_138)


def test_a_repeated_subrequests_quantity_past_e_is_shown_with_its_exponent_from_1_38() -> None:
    sub = {"name": "s", "deviceClassName": "gpu", "capacity": {"requests": {"shares": "1000000E"}}}
    obj = make_claim("c").obj()
    obj["spec"]["devices"]["requests"] = [{"name": "r", "firstAvailable": [sub, dict(sub)]}]
    shown = (
        'Duplicate value: {{"name":"s","deviceClassName":"gpu","allocationMode":"ExactCount","count":1,'
        '"capacity":{{"requests":{{"shares":"{v}"}}}}}}'
    )
    path = "spec.devices.requests[0].firstAvailable[1]: "
    assert path + shown.format(v="1") in _errors("ResourceClaim", obj, ON_137)
    assert path + shown.format(v="1e24") in _errors("ResourceClaim", obj, ON_138)
