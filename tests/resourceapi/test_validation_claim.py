"""ResourceClaim and ResourceClaimTemplate create validation, from upstream's table tests
(pkg/apis/resource/validation/validation_resourceclaim_test.go, ..._resourceclaimtemplate_test.go), in the
order kube-apiserver 1.37 reports them: handwritten rules first, then the declarative ones."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.name_messages import C_IDENTIFIER_MSG, LABEL_MSG

from resourceapi.cel import compile_selector
from resourceapi.gates import DRA_CONSUMABLE_CAPACITY, DRA_PRIORITIZED_LIST, FeatureGates
from resourceapi.validation.claim import validate_resource_claim, validate_resource_claim_template
from resourceapi.validation.objects import validate_create

GATES = FeatureGates.defaults()
FQN_MSG = "a fully qualified name must be a domain and a name separated by a slash"
REF_MSG = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
BAD = "%$!#"
PARAMS = {"kind": "foo", "apiVersion": "dra.example.com/v1"}


def claim(**devices: Any) -> dict[str, Any]:
    spec = {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "class"}}], **devices}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim", "namespace": "kube-system"},
        "spec": {"devices": spec},
    }


def errors(obj: dict[str, Any], gates: FeatureGates = GATES, **kw: Any) -> list[str]:
    return [str(e) for e in validate_resource_claim(obj, gates, **kw)]


def test_a_good_claim_has_no_errors() -> None:
    assert errors(claim()) == []
    assert validate_create("ResourceClaim", claim()) == []


def test_bad_name_and_generated_name() -> None:
    obj = claim()
    obj["metadata"] = {"name": "Bad", "namespace": "default"}
    assert errors(obj) == [
        'metadata.name: Invalid value: "Bad": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
        "[a-z0-9])?)*')"
    ]
    obj["metadata"] = {"namespace": "default"}
    assert errors(obj) == ["metadata.name: Required value: name or generateName is required"]
    obj["metadata"] = {"generateName": "claim-", "namespace": "default"}
    assert errors(obj) == []


def test_invalid_spec_reports_handwritten_rules_then_the_attribute_formats() -> None:
    obj = claim(
        constraints=[
            {"requests": ["req-0", BAD], "matchAttribute": "missing-domain"},
            {"matchAttribute": ""},
            {},
        ],
        config=[{"requests": ["req-0", BAD], "opaque": {"driver": "dra.example.com", "parameters": PARAMS}}],
    )
    c = "spec.devices.constraints"
    assert errors(obj) == [
        f'{c}[0].requests[1]: Invalid value: "{BAD}": {LABEL_MSG}',
        f'{c}[0].requests[1]: Invalid value: "{BAD}": {REF_MSG}',
        f'{c}[2]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, but '
        "multiple fields are set",
        f'spec.devices.config[0].requests[1]: Invalid value: "{BAD}": {LABEL_MSG}',
        f'spec.devices.config[0].requests[1]: Invalid value: "{BAD}": {REF_MSG}',
        # declarative (1.37): validate.ResourceFullyQualifiedName
        f'{c}[0].matchAttribute: Invalid value: "missing-domain": {C_IDENTIFIER_MSG}',
        f'{c}[0].matchAttribute: Invalid value: "missing-domain": {FQN_MSG}',
        f'{c}[1].matchAttribute: Invalid value: "": {C_IDENTIFIER_MSG}',
        f'{c}[1].matchAttribute: Invalid value: "": {FQN_MSG}',
    ]
    # without consumable capacity, a constraint without an attribute misses its matchAttribute
    gates = GATES.with_overrides(**{DRA_CONSUMABLE_CAPACITY: False})
    assert f"{c}[2].matchAttribute: Required value" in errors(obj, gates)


def test_allocation_mode_count_and_duplicate_request() -> None:
    good = {
        "name": "foo",
        "exactly": {"deviceClassName": "class", "allocationMode": "ExactCount", "count": 1},
    }
    reqs = [copy.deepcopy(good) for _ in range(6)]
    reqs[1]["name"], reqs[1]["exactly"]["allocationMode"], reqs[1]["exactly"]["count"] = "foo2", "All", 0
    reqs[2]["name"], reqs[2]["exactly"]["count"] = "foo3", -1
    reqs[3]["name"], reqs[3]["exactly"]["allocationMode"] = "foo4", "other"
    reqs[4]["name"], reqs[4]["exactly"]["allocationMode"], reqs[4]["exactly"]["count"] = "foo5", "All", 2
    obj = claim(requests=reqs)
    r = "spec.devices.requests"
    assert errors(obj) == [
        f"{r}[2].exactly.count: Invalid value: -1: must be greater than zero",
        f"{r}[4].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
        # declarative: the whole request as json.Marshal renders it, defaults applied
        f'{r}[5]: Duplicate value: {{"name":"foo","exactly":{{"deviceClassName":"class",'
        f'"allocationMode":"ExactCount","count":1}}}}',
        f'{r}[3].exactly.allocationMode: Unsupported value: "other": supported values: "All", "ExactCount"',
    ]


def test_defaults_apply_before_validation() -> None:
    assert errors(claim(requests=[{"name": "a", "exactly": {"deviceClassName": "c", "count": 0}}])) == []
    assert (
        errors(claim(requests=[{"name": "a", "exactly": {"deviceClassName": "c", "allocationMode": "All"}}]))
        == []
    )


def test_lists_over_their_limits_are_one_too_many_each_and_nothing_else() -> None:
    obj = claim(
        requests=[{"name": f"r{i}", "exactly": {"deviceClassName": "Bad_Class"}} for i in range(33)],
        constraints=[{"matchAttribute": "bad"}] * 33,
        config=[{}] * 33,
    )
    assert errors(obj) == [
        "spec.devices.requests: Too many: 33: must have at most 32 items",
        "spec.devices.constraints: Too many: 33: must have at most 32 items",
        "spec.devices.config: Too many: 33: must have at most 32 items",
    ]


def test_prioritized_list() -> None:
    r = "spec.devices.requests"
    both = {
        "name": "r",
        "exactly": {"deviceClassName": "c"},
        "firstAvailable": [{"name": "s", "deviceClassName": "c"}],
    }
    assert errors(claim(requests=[both])) == [
        f"{r}[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but "
        "multiple fields are set"
    ]
    assert errors(claim(requests=[{"name": "r", "firstAvailable": []}])) == [
        f"{r}[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"
    ]
    subs = [{"name": "s", "deviceClassName": "c"}, {"name": "s", "deviceClassName": ""}]
    assert errors(claim(requests=[{"name": "r", "firstAvailable": subs}])) == [
        f'{r}[0].firstAvailable[1]: Duplicate value: {{"name":"s","deviceClassName":"",'
        f'"allocationMode":"ExactCount","count":1}}',
        f"{r}[0].firstAvailable[1].deviceClassName: Required value",
    ]
    nine = [{"name": f"s{i}", "deviceClassName": "c"} for i in range(9)]
    assert errors(claim(requests=[{"name": "r", "firstAvailable": nine}])) == [
        f"{r}[0].firstAvailable: Too many: 9: must have at most 8 items"
    ]
    # a disabled gate drops firstAvailable first: the request then has neither
    gates = GATES.with_overrides(**{DRA_PRIORITIZED_LIST: False})
    assert errors(claim(requests=[{"name": "r", "firstAvailable": subs[:1]}]), gates) == [
        f"{r}[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"
    ]


@pytest.mark.parametrize(
    ("ref", "want"),
    [
        ("req-1/sub-0", []),
        ("req-1", []),
        ("req-1/sub-9", [("req-1/sub-9", REF_MSG)]),
        ("req-0/sub-0", [("req-0/sub-0", REF_MSG)]),  # req-0 has no subrequests
        ("a/b/c", [("a/b/c", REF_MSG)]),
        ("Req/sub-0", [("Req", LABEL_MSG), ("Req/sub-0", REF_MSG)]),  # each segment is a request name
    ],
)
def test_request_references_name_a_request_or_a_subrequest(ref: str, want: list[tuple[str, str]]) -> None:
    requests = [
        {"name": "req-0", "exactly": {"deviceClassName": "c"}},
        {"name": "req-1", "firstAvailable": [{"name": "sub-0", "deviceClassName": "c"}]},
    ]
    obj = claim(
        requests=requests, config=[{"requests": [ref], "opaque": {"driver": "a.b", "parameters": {}}}]
    )
    assert errors(obj) == [f'spec.devices.config[0].requests[0]: Invalid value: "{v}": {m}' for v, m in want]


def test_tolerations() -> None:
    tolerations = [
        {"key": "example.com/taint", "operator": "Exists", "value": "x"},
        {"key": "bad key", "value": "-a"},  # the operator defaults to Equal
        {"operator": "In", "effect": "Sometimes"},
    ]
    t = "spec.devices.requests[0].exactly.tolerations"
    got = errors(
        claim(requests=[{"name": "r", "exactly": {"deviceClassName": "c", "tolerations": tolerations}}])
    )
    assert got[0] == f'{t}[0].value: Invalid value: "x": must be empty for operator `Exists`'
    assert got[1].startswith(f'{t}[1].value: Invalid value: "-a": a valid label must be an empty string')
    assert got[2].startswith(f'{t}[1].key: Invalid value: "bad key": name part must consist of')
    assert got[3:] == [
        f'{t}[2].operator: Unsupported value: "In": supported values: "Equal", "Exists"',
        f'{t}[2].effect: Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"',
    ]


def test_admin_access_needs_a_labeled_namespace_and_is_reported_first() -> None:
    obj = claim(requests=[{"name": "Bad", "exactly": {"deviceClassName": "c", "adminAccess": True}}])
    got = errors(obj)
    assert got[0] == (
        "spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label on the containing namespace"
    )
    assert got[1].startswith('spec.devices.requests[0].name: Invalid value: "Bad"')
    assert errors(obj, admin_namespace=True) == got[1:]


def test_opaque_configuration() -> None:
    obj = claim(
        config=[
            {"opaque": {"driver": "dra.example.com", "parameters": "hello-world"}},
            {"opaque": {"driver": "", "parameters": {}}},
            {},
        ]
    )
    assert errors(obj) == [
        'spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON '
        "object",
        "spec.devices.config[2].opaque: Required value",
        "spec.devices.config[1].opaque.driver: Required value",
    ]


def test_a_template_is_judged_as_its_claim_under_spec_spec() -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {
            "metadata": {"labels": {"a": "b"}, "name": "x", "finalizers": ["a/b"]},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": ""}}]}},
        },
    }
    assert [str(e) for e in validate_resource_claim_template(template, GATES)] == [
        "spec.metadata.name: Forbidden: cannot be set",
        "spec.metadata.finalizers: Forbidden: cannot be set",
        "spec.spec.devices.requests[0].exactly.deviceClassName: Required value",
    ]


def test_three_nested_attribute_loops_are_too_complex_as_for_kube_apiserver() -> None:
    # kube-apiserver v1.37.2 estimates this selector at 1,025,315 (too complex): its `!` costs 1 in the loop
    # condition of each of the 32 x 32 x 32 innermost iterations
    loop = 'device.attributes.exists(dom, dom == "x" && ({}))'
    expression = loop.format(loop.format(loop.format("[1, 2].reverse().isSorted()")))
    assert compile_selector(expression, GATES).cost == 1_025_315
    obj = claim(
        requests=[
            {
                "name": "r",
                "exactly": {"deviceClassName": "c", "selectors": [{"cel": {"expression": expression}}]},
            }
        ]
    )
    field = "spec.devices.requests[0].exactly.selectors[0].cel.expression"
    assert errors(obj) == [f"{field}: Forbidden: too complex, exceeds cost limit"]


def test_owner_references_and_finalizers() -> None:
    obj = claim()
    owner = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u", "controller": True}
    obj["metadata"]["ownerReferences"] = [owner, dict(owner), {"apiVersion": "a/b/c", "controller": True}]
    obj["metadata"]["finalizers"] = ["custom", "example.com/f"]
    event = '{"apiVersion":"v1","kind":"Event","name":"e","uid":"u","controller":true}'
    other = '{"apiVersion":"a/b/c","kind":"","name":"","uid":"","controller":true}'
    refs = "metadata.ownerReferences"
    assert errors(obj) == [  # the repeated reference is dropped before validation
        f"{refs}[0]: Invalid value: {event}: /v1, Kind=Event is disallowed from being an owner",
        f'{refs}[1].apiVersion: Invalid value: "a/b/c": must be <group>/<version> or <version>',
        f"{refs}[1].kind: Required value: must not be empty",
        f"{refs}[1].name: Required value: must not be empty",
        f"{refs}[1].uid: Required value: must not be empty",
        f"{refs}: Invalid value: [{event},{other}]: Only one reference can have Controller set to true. "
        'Found "true" in references for Event/e and /',
        'metadata.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is '
        "it fully qualified",
    ]
