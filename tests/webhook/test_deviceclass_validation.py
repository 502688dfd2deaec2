"""DeviceClass validation rules, mirroring upstream's validation_deviceclass_test.go (TestValidateClass and
TestValidateClassUpdate), plus the webhook's item-level ratcheting on UPDATE."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.deviceclasses import ANNOTATION, VALID_CONFIG, VALID_SELECTOR, device_class

from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import Path
from resourceapi.validation.device import compile_errors
from webhook.deviceclass.validation import validate_device_class, validate_parameters_raw

GATES = FeatureGates.defaults()
DNS1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1123_SUBDOMAIN_CASELESS = (
    "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'Example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
NO_DOMAIN = "a name must be a domain-prefixed path, such as 'example.com/my-prop'"
NO_SUCH_VAR = "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar'"
MAX = 10 * 1024


def errors_of(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in validate_device_class(obj, old, GATES).errors]


def params_of_size(n: int) -> dict[str, Any]:
    """Parameters whose compact JSON encoding (`{"str":"xx..."}`) is exactly `n` bytes."""
    return {"str": "x" * (n - len('{"str":""}'))}


def config(driver: str = "foo", **opaque: Any) -> dict[str, Any]:
    return {"opaque": {"driver": driver, **opaque}}


def padded(items: list[dict[str, Any]], filler: dict[str, Any], size: int = 32) -> list[dict[str, Any]]:
    return items + [filler] * (size - len(items))


CREATE_CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "good-class": (device_class("foo"), []),
    "missing-name": (device_class(""), ["metadata.name: Required value: name or generateName is required"]),
    "bad-name": (device_class("!@#$%^"), [f'metadata.name: Invalid value: "!@#$%^": {DNS1123_SUBDOMAIN}']),
    "generate-name": (
        {**device_class("foo"), "metadata": {"name": "foo", "generateName": "pvc-"}},
        [],
    ),
    "generate-name-only": ({**device_class(""), "metadata": {"generateName": "gpu-"}}, []),
    "generate-name-is-not-judged-when-a-name-is-set": (
        {**device_class("foo"), "metadata": {"name": "foo", "generateName": "Bad_"}},
        [],
    ),
    "generate-name-only-is-judged-as-the-name-it-generates": (
        {**device_class(""), "metadata": {"generateName": "Bad_"}},
        [f'metadata.generateName: Invalid value: "Bad_": {DNS1123_SUBDOMAIN}'],
    ),
    "generate-name-ending-in-a-dot-generates-a-valid-name": (
        {**device_class(""), "metadata": {"generateName": "gpu."}},
        [],
    ),
    "long-generate-name-is-cut-to-58-bytes-as-the-generator-does": (
        {**device_class(""), "metadata": {"generateName": "a" * 300}},
        [],
    ),
    "metadata-bookkeeping-fields": (
        {
            **device_class("foo"),
            "metadata": {
                "name": "foo",
                "uid": "ac051fac-2ead-46d9-b8b4-4e0fbeb7455d",
                "resourceVersion": "1",
                "generation": 100,
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionGracePeriodSeconds": 10,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "pod",
                        "name": "foo",
                        "uid": "ac051fac-2ead-46d9-b8b4-4e0fbeb7455d",
                    }
                ],
                "finalizers": ["example.com/foo"],
                "managedFields": [
                    {
                        "fieldsType": "FieldsV1",
                        "operation": "Apply",
                        "apiVersion": "apps/v1",
                        "manager": "foo",
                    }
                ],
                "labels": {"apps.kubernetes.io/name": "test"},
                "annotations": {"foo": "bar"},
            },
        },
        [],
    ),
    "good-labels": (
        {**device_class("foo"), "metadata": {"name": "foo", "labels": {"apps.kubernetes.io/name": "test"}}},
        [],
    ),
    "bad-labels": (
        {**device_class("foo"), "metadata": {"name": "foo", "labels": {"hello-world": "spaces not allowed"}}},
        [
            'metadata.labels: Invalid value: "spaces not allowed": a valid label must be an empty string '
            "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
            "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ],
    ),
    "good-annotations": (
        {**device_class("foo"), "metadata": {"name": "foo", "annotations": {"foo": "bar"}}},
        [],
    ),
    "bad-annotations": (
        {**device_class("foo"), "metadata": {"name": "foo", "annotations": {"!@#$%^": "hello world"}}},
        [
            'metadata.annotations: Invalid value: "!@#$%^": name part must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ],
    ),
    "annotations-too-large": (
        {**device_class("foo"), "metadata": {"name": "foo", "annotations": {"a": "x" * 256 * 1024}}},
        ["metadata.annotations: Too long: may not be more than 262144 bytes"],
    ),
    "annotation-values-must-be-strings": (
        {**device_class("foo"), "metadata": {"name": "foo", "annotations": {"a": [1], ANNOTATION: 7}}},
        [
            'metadata.annotations: Invalid value: "array": must be of type string',
            'metadata.annotations: Invalid value: "number": must be of type string',
        ],
    ),
    "namespace-is-cleared-by-the-api-server-not-rejected": (
        {**device_class("foo"), "metadata": {"name": "foo", "namespace": "default"}},
        [],
    ),
    "name-too-long": (
        device_class("a" * 254),
        [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 bytes'],
    ),
    "good-extended-resource-name": (device_class(extendedResourceName="example.com/gpu"), []),
    "bad-extended-resource-name": (
        device_class(extendedResourceName="example.com"),
        [f'spec.extendedResourceName: Invalid value: "example.com": {NO_DOMAIN}'],
    ),
    "implicit-extended-resource-name-is-rejected": (
        device_class(extendedResourceName="deviceclass.resource.kubernetes.io/foo"),
        [
            'spec.extendedResourceName: Invalid value: "deviceclass.resource.kubernetes.io/foo": '
            'must not have "kubernetes.io/" domain'
        ],
    ),
    "too-many-selectors": (
        device_class(selectors=[VALID_SELECTOR] * 33),
        ["spec.selectors: Too many: 33: must have at most 32 items"],
    ),
    "too-many-configs": (
        device_class(config=[VALID_CONFIG] * 33),
        ["spec.config: Too many: 33: must have at most 32 items"],
    ),
    "configuration": (
        device_class(
            config=padded(
                [
                    VALID_CONFIG,
                    {"opaque": {}},
                    config(parameters="hello-world"),
                    config(parameters=None),
                    {},
                    config(parameters=params_of_size(MAX)),
                    config(parameters=params_of_size(MAX + 1)),
                ],
                VALID_CONFIG,
            )
        ),
        [
            "spec.config[1].opaque.parameters: Required value",
            'spec.config[2].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object',
            "spec.config[3].opaque.parameters: Required value",
            "spec.config[4].opaque: Required value",
            "spec.config[6].opaque.parameters: Too long: may not be more than 10240 bytes",
            # 1.37 validates the driver declaratively: reported after every handwritten error
            "spec.config[1].opaque.driver: Required value",
        ],
    ),
    "driver-uppercase-is-lowercased-first": (
        device_class(config=[config("GPU.Example.COM", parameters={})]),
        [],
    ),
    "driver-too-long": (
        device_class(config=[config("a" * 64, parameters={})]),
        ["spec.config[0].opaque.driver: Too long: may not be more than 63 characters"],
    ),
    "driver-not-dns": (
        device_class(config=[config("-gpu", parameters={})]),
        [f'spec.config[0].opaque.driver: Invalid value: "-gpu": {DNS1123_SUBDOMAIN_CASELESS}'],
    ),
    "expression-too-long-is-not-compiled": (
        device_class(selectors=[{"cel": {"expression": "x" * (MAX + 1)}}]),
        ["spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"],
    ),
    "expression-length-counts-utf8-bytes": (
        device_class(selectors=[{"cel": {"expression": '"' + "é" * 5200 + '" != ""'}}]),
        ["spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"],
    ),
    "all-errors-in-one-list": (
        {
            **device_class("Bad_Name", selectors=[{}], config=[{}], extendedResourceName="x"),
            "metadata": {"name": "Bad_Name", "namespace": "ns"},
        },
        [  # kube-apiserver 1.37's order: the handwritten rules, then the declarative ones
            "spec.selectors[0].cel: Required value",
            "spec.config[0].opaque: Required value",
            f'metadata.name: Invalid value: "Bad_Name": {DNS1123_SUBDOMAIN}',
            f'spec.extendedResourceName: Invalid value: "x": {NO_DOMAIN}',
        ],
    ),
    "wrong-json-types-are-type-invalid": (
        {"metadata": "gpu", "spec": {"selectors": "true", "config": [{"opaque": []}]}},
        [
            'metadata: Invalid value: "string": must be of type object',
            "metadata.name: Required value: name or generateName is required",
            'spec.config[0].opaque: Invalid value: "array": must be of type object',
            'spec.selectors: Invalid value: "string": must be of type array',
        ],
    ),
    "kep-field-errors-follow-upstream-errors": (
        device_class(
            "foo",
            selectors=[{}],
            extendedResourceName="x",
            extendedResourceCapacityRequests={"requests": {"shares": "0"}},
        ),
        [
            "spec.selectors[0].cel: Required value",
            f'spec.extendedResourceName: Invalid value: "x": {NO_DOMAIN}',
            'spec.extendedResourceCapacityRequests.requests[shares]: Invalid value: "0": '
            "must be greater than zero",
        ],
    ),
    "annotation-errors-come-last": (
        {
            **device_class("foo", config=[{}], extendedResourceName="a.com/b"),
            "metadata": {"name": "foo", "annotations": {ANNOTATION: '{"requests": {"shares": "-1"}}'}},
        },
        [
            "spec.config[0].opaque: Required value",
            f'metadata.annotations[{ANNOTATION}]: Invalid value: "-1": must be greater than zero',
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(CREATE_CASES))
def test_validate_class(case: str) -> None:
    obj, want = CREATE_CASES[case]
    assert errors_of(obj) == want


def test_selectors_report_missing_cel_and_compile_errors_in_order() -> None:
    obj = device_class(
        selectors=padded([VALID_SELECTOR, {}, {"cel": {"expression": "noSuchVar"}}], VALID_SELECTOR)
    )
    errors = validate_device_class(obj, None, GATES).errors
    assert [e.field for e in errors] == ["spec.selectors[1].cel", "spec.selectors[2].cel.expression"]
    assert str(errors[0]) == "spec.selectors[1].cel: Required value"
    assert errors[1].bad_value == "noSuchVar"
    assert errors[1].detail.startswith(NO_SUCH_VAR)
    assert errors[1].detail.endswith("\n | noSuchVar\n | ^")


def test_selector_must_evaluate_to_bool() -> None:
    errors = errors_of(device_class(selectors=[{"cel": {"expression": "1"}}]))
    assert errors == [
        'spec.selectors[0].cel.expression: Invalid value: "1": '
        "must evaluate to bool or the unknown type, not int"
    ]


def test_selector_over_the_cost_limit_is_forbidden() -> None:
    nested = "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    nested += "device.attributes.all(d, device.attributes.all(e, true)))))"
    assert errors_of(device_class(selectors=[{"cel": {"expression": nested}}])) == [
        "spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"
    ]


def test_allow_multiple_allocations_needs_consumable_capacity() -> None:
    obj = device_class(selectors=[{"cel": {"expression": "device.allowMultipleAllocations"}}])
    off = GATES.with_overrides(DRAConsumableCapacity=False)
    assert validate_device_class(obj, None, GATES).errors == []
    errors = [str(e) for e in validate_device_class(obj, None, off).errors]
    assert len(errors) == 1
    assert "undefined field 'allowMultipleAllocations'" in errors[0]


def test_kep_story_selector_is_rejected_with_no_matching_overload() -> None:
    expr = 'device.capacity["shares"].isGreaterThan(quantity("0"))'
    errors = errors_of(device_class(selectors=[{"cel": {"expression": expr}}]))
    assert len(errors) == 1
    assert (
        "compilation failed: ERROR: <input>:1:40: found no matching overload for 'isGreaterThan'" in errors[0]
    )


class _Issue:
    def __init__(self, kind: str, detail: str) -> None:
        self.kind = kind
        self.detail = detail


class _Result:
    def __init__(self, *issues: _Issue) -> None:
        self.issues = list(issues)


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        ("invalid", 'p: Invalid value: "e": bad'),
        ("forbidden", "p: Forbidden: bad"),
        ("required", "p: Required value: bad"),
        ("internal", "p: Internal error: bad"),
    ],
)
def test_cel_issue_kinds_map_to_field_error_types(kind: str, want: str) -> None:
    def compiler(expr: str, gates: FeatureGates) -> Any:
        return _Result(_Issue(kind, "bad"))

    assert [str(e) for e in compile_errors("e", Path("p"), GATES, compiler)] == [want]


RAW_PARAMETER_CASES: dict[str, tuple[bytes, list[str]]] = {
    "object": (b'{"foo":42}', []),
    "empty": (b"", ["p: Required value"]),
    "null": (b"null", ["p: Required value"]),
    "not-json": (
        b"xxx",
        [
            'p: Invalid value: "<value omitted>": error parsing data as JSON: '
            "invalid character 'x' looking for beginning of value"
        ],
    ),
    "not-object": (b'"hello-world"', ['p: Invalid value: "<value omitted>": must be a valid JSON object']),
    "max-size": (b'{"str": "' + b"x" * (MAX - 11) + b'"}', []),
    "too-large-not-parsed": (b"x" * (MAX + 1), ["p: Too long: may not be more than 10240 bytes"]),
}


@pytest.mark.parametrize("case", sorted(RAW_PARAMETER_CASES))
def test_raw_parameters_follow_validate_raw_extension(case: str) -> None:
    raw, want = RAW_PARAMETER_CASES[case]
    assert [str(e) for e in validate_parameters_raw(raw, Path("p"))] == want


# --- UPDATE ---


def _large_config(size: int) -> dict[str, Any]:
    return device_class(config=[config(parameters=params_of_size(size))])


UPDATE_CASES: dict[str, tuple[dict[str, Any], dict[str, Any], list[str]]] = {
    "valid-no-op-update": (device_class(), device_class(), []),
    "valid-config-large": (device_class(), _large_config(MAX), []),
    "invalid-config-too-large": (
        device_class(),
        _large_config(MAX + 1),
        ["spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"],
    ),
    "too-large-config-valid-if-stored": (_large_config(MAX + 1), _large_config(MAX + 1), []),
    "name-is-immutable": (
        device_class("foo"),
        device_class("bar"),
        ['metadata.name: Invalid value: "bar": field is immutable'],
    ),
    "unchanged-oversize-selector-list-is-not-recounted": (
        device_class(selectors=[VALID_SELECTOR] * 33),
        {**device_class(selectors=[VALID_SELECTOR] * 33), "metadata": {"name": "foo", "labels": {"a": "b"}}},
        [],
    ),
    "growing-a-valid-list-past-the-limit-is-counted": (
        device_class(selectors=[VALID_SELECTOR] * 32),
        device_class(selectors=[VALID_SELECTOR] * 33),
        ["spec.selectors: Too many: 33: must have at most 32 items"],
    ),
    "stored-invalid-selector-does-not-block-a-new-one": (
        device_class(selectors=[{"cel": {"expression": "1"}}]),
        device_class(selectors=[{"cel": {"expression": "1"}}, {}]),
        ["spec.selectors[1].cel: Required value"],
    ),
    "reordered-stored-items-are-not-revalidated": (
        device_class(selectors=[{"cel": {"expression": "1"}}, VALID_SELECTOR]),
        device_class(selectors=[VALID_SELECTOR, {"cel": {"expression": "1"}}]),
        [],
    ),
    "stored-invalid-config-does-not-block-other-changes": (
        device_class(config=[{}]),
        device_class(config=[{}], extendedResourceName="example.com/gpu"),
        [],
    ),
    "unchanged-invalid-extended-resource-name": (
        device_class(extendedResourceName="example.com"),
        device_class(extendedResourceName="example.com", selectors=[VALID_SELECTOR]),
        [],
    ),
    "changed-invalid-extended-resource-name": (
        device_class(extendedResourceName="example.com/gpu"),
        device_class(extendedResourceName="example.com"),
        [f'spec.extendedResourceName: Invalid value: "example.com": {NO_DOMAIN}'],
    ),
}


@pytest.mark.parametrize("case", sorted(UPDATE_CASES))
def test_validate_class_update(case: str) -> None:
    old, new, want = UPDATE_CASES[case]
    assert errors_of(copy.deepcopy(new), old) == want
