"""Name formats give upstream's verdicts and messages; tables follow apimachinery's validation_test.go and the
DRA validation tests."""

from __future__ import annotations

import pytest
from support.name_messages import C_IDENTIFIER_MSG, LABEL_MSG

from resourceapi.machinery.field import OMIT, ErrorType, FieldError, Path
from resourceapi.machinery.names import (
    extended_resource_name_messages,
    is_c_identifier,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_dns1123_subdomain_content,
    is_extended_resource_name,
    is_qualified_name,
    validate_driver_name,
    validate_extended_resource_name,
    validate_fully_qualified_name,
    validate_object_name,
    validate_opaque_driver_name,
    validate_qualified_name,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_KEY_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

FULLY_QUALIFIED_DETAIL = "a fully qualified name must be a domain and a name separated by a slash"

PATH = Path("spec.x")


def rendered(errs: list[FieldError]) -> list[str]:
    return [str(e) for e in errs]


# --- DNS-1123 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
        "a.a",
        "ab.a",
        "abc.a",
        "a1.a",
        "a-1.a",
        "a--1--2--b.a",
        "a.1",
        "ab.1",
        "0.a",
        "01.a",
        "1-a.1",
        "a.b.c.d.e",
        "aa.bb.cc.dd.ee",
        "1.2.3.4.5",
        "11.22.33.44.55",
        "a" * 253,
    ],
)
def test_dns1123_subdomain_accepts(value: str) -> None:
    assert is_dns1123_subdomain(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a..b",
        "1.",
        ".1",
        "1..2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
        "A.a",
        "aB.a",
        "ab.A",
        "A1.a",
        "a1.A",
        "A.1",
        "aB.1",
        "A1.1",
        "1A.1",
        "0.A",
        "01.A",
        "012.A",
        "1A.a",
        "1a.A",
        "A.B.C.D.E",
        "AA.BB.CC.DD.EE",
        "a.B.c.d.e",
        "aa.bB.cc.dd.ee",
        "a@b",
        "a,b",
        "a_b",
        "a;b",
        "a:b",
        "a%b",
        "a?b",
        "a$b",
        "é",
    ],
)
def test_dns1123_subdomain_rejects_with_regex_message(value: str) -> None:
    assert is_dns1123_subdomain(value) == [SUBDOMAIN_MSG]


def test_dns1123_subdomain_too_long_reports_characters_then_nothing_else_when_well_formed() -> None:
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_content_dns1123_subdomain_reports_bytes() -> None:
    assert is_dns1123_subdomain_content("a" * 254) == ["must be no more than 253 bytes"]


def test_subdomain_length_counts_utf8_bytes_as_go_len() -> None:
    assert is_dns1123_subdomain("é" * 127)[0] == "must be no more than 253 characters"


@pytest.mark.parametrize(
    "value", ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "a" * 63]
)
def test_dns1123_label_accepts(value: str) -> None:
    assert is_dns1123_label(value) == []


@pytest.mark.parametrize(
    "value", ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "_", "a_b", " ", "a b"]
)
def test_dns1123_label_rejects_with_regex_message(value: str) -> None:
    assert is_dns1123_label(value) == [LABEL_MSG]


def test_dns1123_label_with_dots_says_so() -> None:
    assert is_dns1123_label("a.b") == ["must not contain dots"]


def test_dns1123_label_too_long() -> None:
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


# --- qualified names (label keys) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
        "a" * 63,
        "a" * 253 + "/" + "b" * 63,
    ],
)
def test_qualified_name_accepts(value: str) -> None:
    assert is_qualified_name(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@",
        "cantendwithadash-",
        "-cantstartwithadash-",
        "only/one/slash",
        "Example.com/abc",
        "example_com/abc",
        "example.com/",
        "/simple",
        "a" * 64,
        "a" * 254 + "/abc",
    ],
)
def test_qualified_name_rejects(value: str) -> None:
    assert is_qualified_name(value) != []


@pytest.mark.parametrize(
    ("value", "messages"),
    [
        ("cantendwithadash-", [LABEL_KEY_NAME_MSG]),
        ("example.com/", ["name part must be non-empty", LABEL_KEY_NAME_MSG]),
        ("/simple", ["prefix part must be non-empty"]),
        ("a" * 64, ["name part must be no more than 63 bytes"]),
        ("Example.com/abc", ["prefix part " + SUBDOMAIN_MSG]),
        ("a" * 254 + "/abc", ["prefix part must be no more than 253 bytes"]),
        (
            "only/one/slash",
            [
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
                "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
                "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
        ),
    ],
)
def test_qualified_name_messages_are_upstream(value: str, messages: list[str]) -> None:
    assert is_qualified_name(value) == messages


# --- C identifiers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "a",
        "ab",
        "abc",
        "a1",
        "_a",
        "a_",
        "a_b",
        "a_1",
        "a__1__2__b",
        "__abc_123",
        "A",
        "AB",
        "AbC",
        "A1",
        "_A",
        "A_",
        "A_B",
        "A_1",
    ],
)
def test_c_identifier_accepts(value: str) -> None:
    assert is_c_identifier(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "",
        "1",
        "123",
        "1a",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "1_",
        "1_2",
        ".",
        "a.",
        ".a",
        "a.b",
        " ",
        "a ",
        " a",
        "a b",
        "#a#",
        "é",
    ],
)
def test_c_identifier_rejects_with_upstream_message(value: str) -> None:
    assert is_c_identifier(value) == [C_IDENTIFIER_MSG]


# --- metadata names ---------------------------------------------------------------------------------


def test_object_name_invalid_renders_like_upstream_test() -> None:
    assert rendered(validate_object_name("!@#$%^", Path("metadata.name"))) == [
        'metadata.name: Invalid value: "!@#$%^": ' + SUBDOMAIN_MSG
    ]


def test_object_name_too_long_uses_the_bytes_wording() -> None:
    assert rendered(validate_object_name("a" * 254, Path("metadata.name"))) == [
        'metadata.name: Invalid value: "' + "a" * 254 + '": must be no more than 253 bytes'
    ]


@pytest.mark.parametrize("value", ["gpu.example.com", "a", "a" * 253, "my-class"])
def test_object_name_accepts_subdomains(value: str) -> None:
    assert validate_object_name(value, Path("metadata.name")) == []


# --- driver names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["dra.example.com", "GPU.Example.COM", "a", "a" * 63, "x-y.z"])
def test_driver_name_accepts_dns_subdomains_in_any_case(value: str) -> None:
    assert validate_driver_name(value, PATH) == []


def test_empty_driver_name_is_only_required() -> None:
    assert rendered(validate_driver_name("", PATH)) == ["spec.x: Required value"]


def test_long_driver_name_is_too_long() -> None:
    assert rendered(validate_driver_name("a" * 64, PATH)) == [
        "spec.x: Too long: may not be more than 63 bytes"
    ]


def test_invalid_driver_name_keeps_the_original_spelling_in_the_error() -> None:
    assert rendered(validate_driver_name("Foo_Bar", PATH)) == [
        'spec.x: Invalid value: "Foo_Bar": ' + SUBDOMAIN_MSG
    ]


def test_driver_name_too_long_and_malformed_reports_both() -> None:
    value = "-" + "a" * 63
    assert rendered(validate_driver_name(value, PATH)) == [
        "spec.x: Too long: may not be more than 63 bytes",
        f'spec.x: Invalid value: "{value}": ' + SUBDOMAIN_MSG,
    ]


# --- DRA qualified names (attribute and capacity keys) ----------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["shares", "memory", "_x", "dra.example.com/shares", "GPU.example.com/Mem_1", "a" * 32, "d/" + "a" * 32],
)
def test_dra_qualified_name_accepts(value: str) -> None:
    assert validate_qualified_name(value, PATH) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ['spec.x: Invalid value: "": ' + C_IDENTIFIER_MSG]),
        ("test-capacity", ['spec.x: Invalid value: "test-capacity": ' + C_IDENTIFIER_MSG]),
        ("1gpu", ['spec.x: Invalid value: "1gpu": ' + C_IDENTIFIER_MSG]),
        ("a" * 33, ["spec.x: Too long: may not be more than 32 bytes"]),
        (
            "-" + "a" * 32,
            [
                "spec.x: Too long: may not be more than 32 bytes",
                'spec.x: Invalid value: "-' + "a" * 32 + '": ' + C_IDENTIFIER_MSG,
            ],
        ),
        ("/shares", ['spec.x: Invalid value: "": the domain must not be empty']),
        ("example.com/", ['spec.x: Invalid value: "": the name must not be empty']),
        (
            "/",
            [
                'spec.x: Invalid value: "": the domain must not be empty',
                'spec.x: Invalid value: "": the name must not be empty',
            ],
        ),
        ("a/b/c", ['spec.x: Invalid value: "a/b/c": must not contain more than one slash']),
        ("Foo_Bar/x", ['spec.x: Invalid value: "Foo_Bar": ' + SUBDOMAIN_MSG]),
        ("a" * 64 + "/x", ["spec.x: Too long: may not be more than 63 bytes"]),
        ("example.com/with-dash", ['spec.x: Invalid value: "with-dash": ' + C_IDENTIFIER_MSG]),
    ],
)
def test_dra_qualified_name_errors(value: str, expected: list[str]) -> None:
    assert rendered(validate_qualified_name(value, PATH)) == expected


def test_dra_qualified_name_reports_at_the_given_path() -> None:
    path = Path("spec.extendedResourceCapacityRequests.requests").key("a-b")
    assert [e.field for e in validate_qualified_name("a-b", path)] == [
        "spec.extendedResourceCapacityRequests.requests[a-b]"
    ]


def test_fully_qualified_name_accepts_domain_and_identifier() -> None:
    assert validate_fully_qualified_name("dra.example.com/model", PATH) == []


def test_fully_qualified_name_requires_a_domain() -> None:
    assert rendered(validate_fully_qualified_name("model", PATH)) == [
        'spec.x: Invalid value: "model": ' + FULLY_QUALIFIED_DETAIL
    ]


def test_fully_qualified_name_keeps_qualified_name_errors_first() -> None:
    assert rendered(validate_fully_qualified_name("1x", PATH)) == [
        'spec.x: Invalid value: "1x": ' + C_IDENTIFIER_MSG,
        'spec.x: Invalid value: "1x": ' + FULLY_QUALIFIED_DETAIL,
    ]


# --- extended resource names ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu.shared", True),
        ("example.com/my-prop", True),
        ("a/b", True),
        ("example.com", False),  # upstream test: not domain-prefixed
        ("cpu", False),
        ("kubernetes.io/gpu", False),
        ("deviceclass.resource.kubernetes.io/gpu", False),  # the implicit class name, by the substring rule
        ("example.com/kubernetes.io/x", False),  # substring anywhere
        ("requests.example.com/gpu", False),
        ("example.com/", False),
        ("/gpu", False),
        ("Example.com/gpu", False),
        ("example.com/gpu-", False),
        ("example.com/" + "a" * 63, True),
        ("example.com/" + "a" * 64, False),
        ("a/b/c", False),
        ("a" * 244 + "/x", True),  # "requests." + domain stays within 253
        ("a" * 245 + "/x", False),
    ],
)
def test_is_extended_resource_name(name: str, expected: bool) -> None:
    assert is_extended_resource_name(name) is expected


def test_invalid_extended_resource_name_renders_upstream_message() -> None:
    assert rendered(validate_extended_resource_name("example.com", Path("spec.extendedResourceName"))) == [
        'spec.extendedResourceName: Invalid value: "example.com": must be a valid extended resource name'
    ]


def test_valid_extended_resource_name_has_no_errors() -> None:
    assert validate_extended_resource_name("example.com/gpu", Path("spec.extendedResourceName")) == []


# --- declarative formats of 1.37 (measured against kube-apiserver v1.37.2 by tests/differential) ----------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("example.com/gpu", []),
        ("gpu", ["a name must be a domain-prefixed path, such as 'example.com/my-prop'"]),
        ("kubernetes.io/gpu", ['must not have "kubernetes.io/" domain']),
        ("x.kubernetes.io/gpu", ['must not have "kubernetes.io/" domain']),
        ("requests.example.com/gpu", ['must not have "requests." prefix']),
        (
            "requests.gpu",
            [
                "a name must be a domain-prefixed path, such as 'example.com/my-prop'",
                'must not have "requests." prefix',
            ],
        ),
        (
            "example.com/gpu_",
            [LABEL_KEY_NAME_MSG],
        ),
        ("example.com/" + "g" * 63, []),
        ("example.com/" + "g" * 64, ["name part must be no more than 63 bytes"]),
    ],
)
def test_extended_resource_name_format_gives_every_reason_in_order(name: str, expected: list[str]) -> None:
    assert extended_resource_name_messages(name) == expected


OPAQUE_FIELD = "spec.config[0].opaque.driver"
OPAQUE = Path(OPAQUE_FIELD)
CASELESS_SUBDOMAIN_MSG = (
    "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'Example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@pytest.mark.parametrize("name", ["gpu.example.com", "Example.COM", "a" * 63, "A" * 63])
def test_an_opaque_driver_name_is_a_caseless_subdomain_of_63_characters(name: str) -> None:
    assert validate_opaque_driver_name(name, OPAQUE) == []


def test_an_empty_opaque_driver_is_required_and_nothing_else() -> None:
    [err] = validate_opaque_driver_name("", OPAQUE)
    assert str(err) == "spec.config[0].opaque.driver: Required value"
    assert err == FieldError(ErrorType.REQUIRED, OPAQUE_FIELD, OMIT, "")
    assert err.cause() == {"reason": "FieldValueRequired", "message": "Required value", "field": OPAQUE_FIELD}


def test_an_opaque_driver_reports_the_format_then_the_length() -> None:
    bad = "a." * 40
    assert rendered(validate_opaque_driver_name(bad, OPAQUE)) == [
        f'{OPAQUE_FIELD}: Invalid value: "{bad}": {CASELESS_SUBDOMAIN_MSG}',
        f"{OPAQUE_FIELD}: Too long: may not be more than 63 characters",
    ]
    [too_long] = validate_opaque_driver_name("a" * 64, OPAQUE)
    assert too_long == FieldError(
        ErrorType.TOO_LONG, OPAQUE_FIELD, OMIT, "may not be more than 63 characters"
    )
    assert too_long.cause() == {
        "reason": "FieldValueTooLong",
        "message": "Too long: may not be more than 63 characters",
        "field": OPAQUE_FIELD,
    }
    [invalid] = validate_opaque_driver_name("-gpu", OPAQUE)
    assert str(invalid) == f'{OPAQUE_FIELD}: Invalid value: "-gpu": {CASELESS_SUBDOMAIN_MSG}'
