"""Quantity semantics that the parse and format tables of test_quantity.py leave open: exact values with
long decimal forms, order at equal values, hashing by value, negation, the exponent's int32 bound, non-string
inputs, and the pydantic field (validated from a string or a JSON number, always serialized canonically)."""

from __future__ import annotations

from fractions import Fraction

import pydantic
import pytest
from support.quantities import q

from resourceapi.machinery.quantity import (
    ERR_FORMAT_WRONG,
    ERR_SUFFIX,
    ERR_TOO_LARGE,
    Format,
    Quantity,
    QuantityError,
    coerce_quantity,
)


def test_a_value_with_a_finite_decimal_form_stays_exact_however_long() -> None:
    tiny = Quantity.from_fraction(Fraction(1, 10**30))
    assert tiny.value == Fraction(1, 10**30)
    assert str(tiny) == "1e-30"
    assert Quantity.from_fraction(Fraction(1, 5**40)).value == Fraction(1, 5**40)


def test_a_value_without_a_finite_decimal_form_rounds_away_from_zero_to_nanos() -> None:
    assert str(Quantity.from_fraction(Fraction(1, 3))) == "333333334n"
    assert str(Quantity.from_fraction(Fraction(-1, 3))) == "-333333334n"


def test_long_decimal_forms_print_exactly() -> None:
    assert str(Quantity(Fraction(1, 5**40))) == "109951162777600e-42"
    assert str(Quantity(Fraction(1, 2**45))) == "28421709430404007434844970703125e-45"
    # a denominator with both factors, its power of five past a float's precision
    assert str(Quantity(Fraction(1, 2 * 5**40))) == "54975581388800e-42"
    assert str(Quantity(Fraction(3, 2**3 * 5**30))) == "402653184e-30"


def test_equal_values_are_neither_less_nor_greater() -> None:
    one, thousand_milli = q("1"), q("1000m")
    assert not one < thousand_milli and not one > thousand_milli
    assert one <= thousand_milli and one >= thousand_milli
    assert q("999m") < one and one > q("999m")


def test_quantities_hash_by_value() -> None:
    assert hash(q("1")) == hash(q("1000m")) == hash(Fraction(1))
    assert len({q(str(i)) for i in range(1, 101)}) == 100
    assert len({hash(q(str(i))) for i in range(1, 101)}) == 100


def test_negation_keeps_the_format() -> None:
    assert str(-q("1Gi")) == "-1Gi"
    assert (-q("1Gi")).format is Format.BINARY_SI
    assert str(-q("1e3")) == "-1e3"


def test_the_exponent_may_be_as_large_as_an_int32() -> None:
    """Exponents up to 2^31-1 are a suffix (then too large to compute); one past it is no suffix."""
    with pytest.raises(QuantityError, match=ERR_TOO_LARGE.replace("^", r"\^")):
        q("1e2147483647")
    with pytest.raises(QuantityError) as err:
        q("1e2147483648")
    assert str(err.value) == ERR_SUFFIX
    assert str(q("1e-2147483647")) == "1e-9"


@pytest.mark.parametrize("raw", [True, False, None, [1], {"a": 1}])
def test_non_numbers_are_not_quantities(raw: object) -> None:
    with pytest.raises(QuantityError) as err:
        coerce_quantity(raw)
    assert str(err.value) == ERR_FORMAT_WRONG


def test_json_numbers_and_padded_strings_are_quantities() -> None:
    assert coerce_quantity(2) == q("2")
    assert coerce_quantity(1.5) == q("1500m")
    assert coerce_quantity(" 2Gi ") == q("2Gi")
    assert coerce_quantity(coerce_quantity("3")) is coerce_quantity("3")


class _Model(pydantic.BaseModel):
    amount: Quantity


def test_a_quantity_field_validates_strings_and_json_numbers() -> None:
    assert _Model.model_validate({"amount": "2Gi"}).amount == q("2Gi")
    assert _Model.model_validate({"amount": 2}).amount == q("2")
    assert _Model.model_validate_json('{"amount": 1.5}').amount == q("1500m")
    with pytest.raises(pydantic.ValidationError):
        _Model.model_validate({"amount": "two"})


def test_a_quantity_field_always_serializes_to_its_canonical_string() -> None:
    model = _Model.model_validate({"amount": "2048Mi"})
    assert model.model_dump() == {"amount": "2Gi"}
    assert model.model_dump(mode="json") == {"amount": "2Gi"}
    assert model.model_dump_json() == '{"amount":"2Gi"}'


def test_a_quantity_fields_json_schema_accepts_a_string_or_a_number() -> None:
    assert _Model.model_json_schema()["properties"]["amount"] == {
        "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}],
        "title": "Amount",
    }


def test_a_binary_value_past_ei_prints_in_decimal_si() -> None:
    assert str(Quantity.from_int(2**70 * 1000, Format.BINARY_SI)) == "1180591620717411303424k"


def test_a_small_binary_value_prints_in_decimal_si() -> None:
    assert str(Quantity.from_int(1000, Format.BINARY_SI)) == "1k"
    assert str(Quantity.from_int(-1000, Format.BINARY_SI)) == "-1k"
    assert str(Quantity.from_int(2048, Format.BINARY_SI)) == "2Ki"


def test_an_exponent_form_with_a_zero_exponent_prints_the_bare_number() -> None:
    assert str(q("1e0")) == "1"
    assert str(q("5e0")) == "5"
    assert str(q("12e3")) == "12e3"


def test_a_binary_quantity_of_one_or_more_keeps_its_format() -> None:
    """Upstream turns a BinarySI value into DecimalSI only when it lies strictly between 0 and 1."""
    one = q("0.0009765625Ki")
    assert one.value == 1 and one.format is Format.BINARY_SI
    assert str(one + q("1023")) == "1Ki"
    one_and_a_half = q("0.00146484375Ki")
    assert one_and_a_half.value == Fraction(3, 2) and one_and_a_half.format is Format.BINARY_SI
    assert q("0.0009765624Ki").format is Format.DECIMAL_SI


def test_numbers_of_up_to_4000_digits_parse() -> None:
    assert q("1" * 4000).value == int("1" * 4000)
    with pytest.raises(QuantityError, match="unable to parse numeric part of quantity"):
        q("1" * 4001)
