"""Field errors render exactly as apimachinery's `field.Error` and `ErrorList.ToAggregate`."""

from __future__ import annotations

import pytest

from resourceapi.machinery.field import (
    OMIT,
    ErrorList,
    ErrorType,
    FieldError,
    Path,
    duplicate,
    forbidden,
    go_quote,
    internal,
    invalid,
    required,
    too_long,
    too_many,
)


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("abc", '"abc"'),
        ("", '""'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("line\nbreak", '"line\\nbreak"'),
        ("tab\there", '"tab\\there"'),
        ("\a\b\f\r\v", '"\\a\\b\\f\\r\\v"'),
        ("\x00", '"\\x00"'),
        ("\x7f", '"\\x7f"'),
        ("é ü 日本", '"é ü 日本"'),
        ("\u00a0", '"\\u00a0"'),
        ("\u200b", '"\\u200b"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("emoji 😀", '"emoji 😀"'),
    ],
)
def test_go_quote_matches_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_invalid_string_value_is_go_quoted() -> None:
    err = invalid(Path("spec").child("selectors").index(2).child("cel", "expression"), 'a == "b"\nc', "bad")
    assert str(err) == 'spec.selectors[2].cel.expression: Invalid value: "a == \\"b\\"\\nc": bad'


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        (5, "Invalid value: 5: d"),
        (-1, "Invalid value: -1: d"),
        (True, "Invalid value: true: d"),
        (False, "Invalid value: false: d"),
        (1.5, "Invalid value: 1.5: d"),
        (None, "Invalid value: null: d"),  # ErrorBody: json.Marshal(nil)
    ],
)
def test_invalid_non_string_values_render_like_go(value: object, rendered: str) -> None:
    assert invalid("f", value, "d").body() == rendered


def test_invalid_with_omitted_value_shows_only_type_and_detail() -> None:
    assert str(FieldError(ErrorType.INVALID, "f", OMIT, "d")) == "f: Invalid value: d"


def test_too_many_renders_count_and_limit() -> None:
    assert (
        str(too_many(Path("spec.selectors"), 33, 32))
        == "spec.selectors: Too many: 33: must have at most 32 items"
    )


def test_too_long_omits_the_value() -> None:
    assert str(too_long("spec.x", 10240)) == "spec.x: Too long: may not be more than 10240 bytes"


def test_required_without_detail() -> None:
    assert str(required("spec.selectors[0].cel")) == "spec.selectors[0].cel: Required value"


def test_required_with_detail() -> None:
    assert str(required("metadata.name", "name or generateName is required")) == (
        "metadata.name: Required value: name or generateName is required"
    )


def test_forbidden_never_shows_a_value() -> None:
    err = FieldError(ErrorType.FORBIDDEN, "spec.x", "secret", "too complex, exceeds cost limit")
    assert str(err) == "spec.x: Forbidden: too complex, exceeds cost limit"


def test_forbidden_helper() -> None:
    assert str(forbidden("spec.x", "no")) == "spec.x: Forbidden: no"


def test_internal_error_never_shows_a_value() -> None:
    assert str(internal("spec.x", "boom")) == "spec.x: Internal error: boom"


def test_duplicate_shows_the_value_without_detail() -> None:
    assert str(duplicate("spec.x[1]", "a")) == 'spec.x[1]: Duplicate value: "a"'


@pytest.mark.parametrize(
    ("err", "cause_type"),
    [
        (invalid("f", "v", "d"), "FieldValueInvalid"),
        (required("f"), "FieldValueRequired"),
        (forbidden("f", "d"), "FieldValueForbidden"),
        (too_long("f", 1), "FieldValueTooLong"),
        (too_many("f", 2, 1), "FieldValueTooMany"),
        (duplicate("f", "v"), "FieldValueDuplicate"),
        (internal("f", "d"), "InternalError"),
    ],
)
def test_status_cause_type_names(err: FieldError, cause_type: str) -> None:
    assert err.cause()["reason"] == cause_type


def test_status_cause_carries_field_and_body_without_path() -> None:
    assert invalid("spec.x", "v", "d").cause() == {
        "reason": "FieldValueInvalid",
        "field": "spec.x",
        "message": 'Invalid value: "v": d',
    }


def test_path_building_matches_field_path_strings() -> None:
    path = Path.root("spec").child("extendedResourceCapacityRequests", "requests").key("example.com/shares")
    assert str(path) == "spec.extendedResourceCapacityRequests.requests[example.com/shares]"
    assert str(Path.root("metadata").child("annotations").key("a/b")) == "metadata.annotations[a/b]"
    assert str(Path("spec").child("config").index(0).child("opaque")) == "spec.config[0].opaque"


def test_aggregate_of_nothing_is_empty() -> None:
    assert ErrorList().aggregate_message() == ""


def test_aggregate_of_one_error_is_bare() -> None:
    errs = ErrorList([required("a")])
    assert errs.aggregate_message() == "a: Required value"


def test_aggregate_of_several_errors_is_bracketed() -> None:
    errs = ErrorList([required("a"), forbidden("b", "x")])
    assert errs.aggregate_message() == "[a: Required value, b: Forbidden: x]"


def test_aggregate_drops_identical_messages_keeping_first_order() -> None:
    errs = ErrorList([required("a"), forbidden("b", "x"), required("a")])
    assert errs.aggregate_message() == "[a: Required value, b: Forbidden: x]"


def test_aggregate_of_duplicates_only_is_bare() -> None:
    errs = ErrorList([required("a"), required("a")])
    assert errs.aggregate_message() == "a: Required value"


def test_error_list_add_extend_len_and_bool() -> None:
    errs = ErrorList()
    assert not errs
    errs.add(required("a"), required("b"))
    errs.extend([required("c")])
    assert len(errs) == 3
    assert [e.field for e in errs] == ["a", "b", "c"]
