"""The KEP-6406 rules of `resourceapi.capacity_requests`, called directly: the field's validation on update,
and the annotation carrier as the allocator parses it (its errors' path, non-string values, JSON null, the
echo limit of the bad value, and the quoting of unknown keys). The webhook's end-to-end texts are in
tests/webhook/test_capacity_requests.py."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from resourceapi.api.resource_v1 import CapacityRequirements
from resourceapi.capacity_requests import (
    ANNOTATION,
    ANNOTATION_ECHO_LIMIT,
    FIELD_PATH,
    OMITTED,
    parse_annotation,
    parse_carrier,
    shown_annotation,
    validate_requirements,
)
from resourceapi.machinery.quantity import Quantity

ANN = f"metadata.annotations[{ANNOTATION}]"
FIELD = "spec.extendedResourceCapacityRequests"


def rendered(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


def test_update_validates_every_changed_entry_after_an_unchanged_one() -> None:
    """An unchanged entry is skipped, and validation goes on with the entries sorted after it."""
    old = {"requests": {"alpha": "1"}}
    new = {"requests": {"alpha": "1", "beta": "0", "gamma": "-1"}}
    assert rendered(validate_requirements(new, FIELD_PATH, old)) == [
        f'{FIELD}.requests[beta]: Invalid value: "0": must be greater than zero',
        f'{FIELD}.requests[gamma]: Invalid value: "-1": must be greater than zero',
    ]


def test_update_revalidates_an_entry_whose_value_changed() -> None:
    old = {"requests": {"alpha": "0"}}
    assert rendered(validate_requirements({"requests": {"alpha": "00"}}, FIELD_PATH, old)) == [
        f'{FIELD}.requests[alpha]: Invalid value: "0": must be greater than zero'
    ]


def test_update_with_an_old_value_that_is_not_an_object_validates_everything() -> None:
    for old in (None, "x", {"requests": ["alpha"]}):
        assert rendered(validate_requirements({"requests": {"alpha": "0"}}, FIELD_PATH, old)) == [
            f'{FIELD}.requests[alpha]: Invalid value: "0": must be greater than zero'
        ]


def test_a_bad_key_and_a_bad_value_of_one_entry_are_both_reported() -> None:
    errors = rendered(validate_requirements({"requests": {"bad-key": "x"}}, FIELD_PATH))
    assert len(errors) == 2
    assert errors[0].startswith(f'{FIELD}.requests[bad-key]: Invalid value: "bad-key": a valid C identifier')
    assert errors[1].startswith(f'{FIELD}.requests[bad-key]: Invalid value: "x": quantities must match')


def test_flat_errors_are_all_at_the_given_path() -> None:
    errors = rendered(validate_requirements({"requests": {"bad-key": "0"}}, FIELD_PATH, flat=True))
    assert len(errors) == 2
    assert errors[0].startswith(f'{FIELD}: Invalid value: "bad-key": a valid C identifier')
    assert errors[1] == f'{FIELD}: Invalid value: "0": must be greater than zero'


def test_non_string_quantities_are_checked_like_strings() -> None:
    assert rendered(validate_requirements({"requests": {"a": 2, "b": 0, "c": True}}, FIELD_PATH)) == [
        f'{FIELD}.requests[b]: Invalid value: "0": must be greater than zero',
        f"{FIELD}.requests[c]: Invalid value: true: "
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ]


def test_carrier_errors_are_at_the_annotation_path() -> None:
    parsed, errors = parse_carrier('{"requests": {"shares": "0"}}')
    assert parsed is None
    assert [e.field for e in errors] == [ANN]
    assert rendered(errors) == [f'{ANN}: Invalid value: "0": must be greater than zero']


def test_carrier_shape_errors_are_at_the_annotation_path_with_the_annotation_shown() -> None:
    text = '{"requests": 1, "x": 2}'
    _, errors = parse_carrier(text)
    assert rendered(errors) == [
        f'{ANN}: Invalid value: "{{\\"requests\\": 1, \\"x\\": 2}}": unknown field "x"',
        f'{ANN}: Invalid value: "{{\\"requests\\": 1, \\"x\\": 2}}": must be a valid JSON object',
    ]


def test_carrier_that_is_not_a_string_is_invalid() -> None:
    for value in (5, None, {"requests": {}}):
        parsed, errors = parse_carrier(value)
        assert parsed is None
        assert rendered(errors) == [f'{ANN}: Invalid value: "{OMITTED}": must be a string']


def test_annotation_that_is_not_a_string_is_invalid() -> None:
    assert rendered(parse_annotation(["x"])[1]) == [f'{ANN}: Invalid value: "{OMITTED}": must be a string']


def test_carrier_holding_json_null_is_required() -> None:
    parsed, errors = parse_carrier("null")
    assert parsed is None
    assert rendered(errors) == [f"{ANN}: Required value"]


def test_valid_carrier_parses_to_the_requirements() -> None:
    parsed, errors = parse_carrier('{"requests": {"shares": "2", "example.com/mem": "1Gi"}}')
    assert errors == []
    assert parsed is not None
    assert parsed.requests == {"shares": Quantity.parse("2"), "example.com/mem": Quantity.parse("1Gi")}


def test_empty_carrier_object_parses_to_no_requests() -> None:
    parsed, errors = parse_carrier("{}")
    assert errors == [] and parsed is not None and parsed.requests is None


def test_annotation_values_up_to_the_echo_limit_are_shown() -> None:
    assert ANNOTATION_ECHO_LIMIT == 64
    at_limit = "x" * 64
    assert shown_annotation(at_limit) == at_limit
    assert shown_annotation(at_limit + "x") == OMITTED
    assert shown_annotation(5) == OMITTED


def test_carrier_error_echoes_a_64_character_value_and_omits_a_65_character_one() -> None:
    short = '{"x": 1}' + " " * 56
    long = short + " "
    assert len(short) == 64
    assert rendered(parse_carrier(short)[1]) == [
        f'{ANN}: Invalid value: "{{\\"x\\": 1}}{" " * 56}": unknown field "x"'
    ]
    assert rendered(parse_carrier(long)[1]) == [f'{ANN}: Invalid value: "{OMITTED}": unknown field "x"']


def test_unknown_keys_are_quoted_with_quotes_and_backslashes_escaped() -> None:
    errors = validate_requirements({'a"b\\c': 1}, FIELD_PATH, shown="v")
    assert rendered(errors) == [
        'spec.extendedResourceCapacityRequests: Invalid value: "v": unknown field "a\\"b\\\\c"'
    ]


def test_json_syntax_error_is_reported_in_go_words_at_the_annotation_path() -> None:
    parsed, errors = parse_annotation("{")
    assert parsed is None
    assert rendered(errors) == [
        f'{ANN}: Invalid value: "{{": error parsing data as JSON: unexpected end of JSON input'
    ]


def test_list_and_object_quantities_are_invalid_values_not_a_crash() -> None:
    errors = validate_requirements({"requests": {"a": ["1"], "b": {"x": 1}}}, FIELD_PATH)
    assert [(e.field, e.bad_value) for e in errors] == [
        (f"{FIELD}.requests[a]", ["1"]),
        (f"{FIELD}.requests[b]", {"x": 1}),
    ]
    assert all(e.detail.startswith("quantities must match the regular expression") for e in errors)


def test_a_carrier_the_model_still_rejects_is_invalid_at_the_annotation_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Defence in depth: should the API model ever reject what the checks above accept, the carrier is
    unusable with the model's message at the annotation path (never a ValidationError escaping)."""
    import resourceapi.capacity_requests as module

    class Stricter(CapacityRequirements):
        @pydantic.field_validator("requests")
        @classmethod
        def _no_shares(cls, value: Any) -> Any:
            if value and "shares" in value:
                raise ValueError("shares are not accepted here")
            return value

    monkeypatch.setattr(module, "CapacityRequirements", Stricter)
    parsed, errors = parse_carrier('{"requests": {"shares": "1"}}')
    assert parsed is None
    assert rendered(errors) == [
        f'{ANN}: Invalid value: "{{\\"requests\\": {{\\"shares\\": \\"1\\"}}}}": '
        "Value error, shares are not accepted here"
    ]
    long = '{"requests": {"shares": "1"}}' + " " * 64
    assert rendered(parse_carrier(long)[1]) == [
        f'{ANN}: Invalid value: "{OMITTED}": Value error, shares are not accepted here'
    ]
