"""The shared device field rules read as kube-apiserver 1.37 writes them (validation.go, strfmt.go)."""

from __future__ import annotations

import pytest

from resourceapi.machinery.field import Path
from resourceapi.validation.device_fields import (
    binding_parameter_declarative,
    binding_parameter_errors,
    device_name_errors,
    pool_name_declarative,
    pool_name_errors,
    taint_declarative,
    taint_errors,
    toleration_declarative,
    toleration_errors,
    uid_declarative,
    uid_errors,
)

P = Path("p")
UID = "0b6c5f4e-2f8a-4c51-9a7e-3c2d1b0a9f8e"


def _s(errors: list) -> list[str]:
    return [str(e) for e in errors]


LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("gpu-0", []),
        ("", [f'p: Invalid value: "": {LABEL_MSG}']),  # ValidateDNS1123Label: no Required of its own
        ("GPU", [f'p: Invalid value: "GPU": {LABEL_MSG}']),
        ("a" * 64, [f'p: Invalid value: "{"a" * 64}": must be no more than 63 characters']),
    ],
)
def test_device_names_are_dns_labels_an_empty_one_too(name: str, want: list[str]) -> None:
    assert _s(device_name_errors(name, P)) == want


@pytest.mark.parametrize(
    ("uid", "want"),
    [
        (UID, []),
        ("abc", ['p: Invalid value: "abc": error validating uid: invalid UUID length: 3']),
        (
            UID.upper(),
            [
                f'p: Invalid value: "{UID.upper()}": uid must be in RFC 4122 normalized form, '
                "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"
            ],
        ),
        (
            UID.replace("-", ""),
            [
                f'p: Invalid value: "{UID.replace("-", "")}": uid must be in RFC 4122 '
                "normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase "
                "hexadecimal characters"
            ],
        ),
        ("x" * 36, [f'p: Invalid value: "{"x" * 36}": error validating uid: invalid UUID format']),
    ],
)
def test_a_uid_is_judged_by_google_uuid_then_its_normal_form(uid: str, want: list[str]) -> None:
    assert _s(uid_errors(uid, P)) == want


def test_the_declarative_uuid_format_wants_lowercase_8_4_4_4_12() -> None:
    assert uid_declarative(UID, P) == []
    for bad in (UID.upper(), UID.replace("-", ""), UID[:-1] + "g"):
        assert _s(uid_declarative(bad, P)) == [
            f'p: Invalid value: "{bad}": must be a lowercase UUID in 8-4-4-4-12 format'
        ]


def test_pool_names_are_judged_per_segment() -> None:
    assert pool_name_errors("a/b.c", P) == []
    assert _s(pool_name_errors("", P)) == ["p: Required value"]
    assert len(pool_name_errors("a//b", P)) == 1  # the empty segment fails the subdomain regex
    assert _s(pool_name_declarative("a//b", P)) == ['p: Invalid value: "a//b": segment 1: must not be empty']
    assert _s(pool_name_declarative("x" * 254, P))[0] == "p: Too long: may not be more than 253 bytes"
    assert [e.detail.split(":")[0] for e in pool_name_declarative("ok/A_", P)] == ["segment 1"]


def test_a_toleration_value_is_judged_by_its_operator_and_the_rest_declaratively() -> None:
    assert _s(toleration_errors({"operator": "Exists", "value": "v"}, P)) == [
        'p.value: Invalid value: "v": must be empty for operator `Exists`'
    ]
    assert toleration_errors({"value": "ok"}, P) == []  # operator defaults to Equal
    assert len(toleration_errors({"value": "-bad-"}, P)) == 1
    assert _s(toleration_declarative({"operator": "In", "effect": "Evict"}, P)) == [
        'p.operator: Unsupported value: "In": supported values: "Equal", "Exists"',
        'p.effect: Unsupported value: "Evict": supported values: "NoExecute", "NoSchedule", "None"',
    ]


def test_a_taint_needs_a_key_and_an_effect() -> None:
    assert taint_errors({"key": "k", "effect": "NoSchedule"}, P) == []
    assert len(taint_errors({}, P)) >= 1 and taint_errors({}, P)[0].field == "p.key"
    assert _s(taint_declarative({}, P)) == ["p.effect: Required value"]
    assert _s(taint_declarative({"effect": "x"}, P)) == [
        'p.effect: Unsupported value: "x": supported values: "NoExecute", "NoSchedule", "None"'
    ]


def test_binding_conditions_need_each_other_and_must_not_overlap() -> None:
    assert _s(binding_parameter_errors(["a"], [], P)) == [
        "p.bindingFailureConditions: Invalid value: []: "
        "bindingFailureConditions are required to use bindingConditions"
    ]
    assert _s(binding_parameter_errors(["a", "a"], ["a"], P)) == [
        'p.bindingConditions[1]: Duplicate value: "a"',
        'p.bindingFailureConditions[0]: Invalid value: "a": bindingFailureConditions must not overlap with '
        "bindingConditions",
    ]
    assert _s(binding_parameter_declarative(list("abcde"), [], P)) == [
        "p.bindingConditions: Too many: 5: must have at most 4 items"
    ]
