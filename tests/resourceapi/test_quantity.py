"""`Quantity` behaves as `resource.Quantity`; tables ported from apimachinery's quantity_test.go."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from fractions import Fraction

import pydantic
import pytest
from support.quantities import q

from resourceapi.machinery.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    ERR_TOO_LARGE,
    MAX_INT64,
    Format,
    Quantity,
    QuantityError,
    QuantityField,
)

DSI, BSI, DEXP = Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT


def dec(mantissa: int, exponent: int) -> Fraction:
    """Go's `dec(i, exponent)`: i * 10^exponent."""
    return Fraction(mantissa) * Fraction(10) ** exponent


# TestQuantityParse: input -> (value, format).
PARSE_TABLE: list[tuple[str, Fraction, Format]] = [
    ("0", dec(0, 0), DSI),
    ("0n", dec(0, 0), DSI),
    ("0u", dec(0, 0), DSI),
    ("0m", dec(0, 0), DSI),
    ("0Ki", dec(0, 0), BSI),
    ("0k", dec(0, 0), DSI),
    ("0Mi", dec(0, 0), BSI),
    ("0M", dec(0, 0), DSI),
    ("0Gi", dec(0, 0), BSI),
    ("0G", dec(0, 0), DSI),
    ("0Ti", dec(0, 0), BSI),
    ("0T", dec(0, 0), DSI),
    # Quantity less numbers are allowed
    ("1", dec(1, 0), DSI),
    # Binary suffixes
    ("1Ki", dec(1024, 0), BSI),
    ("8Ki", dec(8 * 1024, 0), BSI),
    ("7Mi", dec(7 * 1024**2, 0), BSI),
    ("6Gi", dec(6 * 1024**3, 0), BSI),
    ("5Ti", dec(5 * 1024**4, 0), BSI),
    ("4Pi", dec(4 * 1024**5, 0), BSI),
    ("3Ei", dec(3 * 1024**6, 0), BSI),
    ("10Ti", dec(10 * 1024**4, 0), BSI),
    ("100Ti", dec(100 * 1024**4, 0), BSI),
    # Decimal suffixes
    ("5n", dec(5, -9), DSI),
    ("4u", dec(4, -6), DSI),
    ("3m", dec(3, -3), DSI),
    ("9", dec(9, 0), DSI),
    ("8k", dec(8, 3), DSI),
    ("50k", dec(5, 4), DSI),
    ("7M", dec(7, 6), DSI),
    ("6G", dec(6, 9), DSI),
    ("5T", dec(5, 12), DSI),
    ("40T", dec(4, 13), DSI),
    ("300T", dec(3, 14), DSI),
    ("2P", dec(2, 15), DSI),
    ("1E", dec(1, 18), DSI),
    # Decimal exponents
    ("1E-3", dec(1, -3), DEXP),
    ("1e3", dec(1, 3), DEXP),
    ("1E6", dec(1, 6), DEXP),
    ("1e9", dec(1, 9), DEXP),
    ("1E12", dec(1, 12), DEXP),
    ("1e15", dec(1, 15), DEXP),
    ("1E18", dec(1, 18), DEXP),
    # Nonstandard but still parsable
    ("1e14", dec(1, 14), DEXP),
    ("1e13", dec(1, 13), DEXP),
    ("100.035k", dec(100035, 0), DSI),
    # Things that look like floating point
    ("0.001", dec(1, -3), DSI),
    ("0.0005k", dec(5, -1), DSI),
    ("0.005", dec(5, -3), DSI),
    ("0.05", dec(5, -2), DSI),
    ("0.5", dec(5, -1), DSI),
    ("0.00050k", dec(5, -1), DSI),
    ("0.00500", dec(5, -3), DSI),
    ("0.05000", dec(5, -2), DSI),
    ("0.50000", dec(5, -1), DSI),
    ("0.5e0", dec(5, -1), DEXP),
    ("0.5e-1", dec(5, -2), DEXP),
    ("0.5e-2", dec(5, -3), DEXP),
    ("10.035M", dec(10035, 3), DSI),
    ("1.2e3", dec(12, 2), DEXP),
    ("1.3E+6", dec(13, 5), DEXP),
    ("1.40e9", dec(14, 8), DEXP),
    ("1.53E12", dec(153, 10), DEXP),
    ("1.6e15", dec(16, 14), DEXP),
    ("1.7E18", dec(17, 17), DEXP),
    ("9.01", dec(901, -2), DSI),
    ("8.1k", dec(81, 2), DSI),
    ("7.123456M", dec(7123456, 0), DSI),
    ("6.987654321G", dec(6987654321, 0), DSI),
    ("5.444T", dec(5444, 9), DSI),
    ("40.1T", dec(401, 11), DSI),
    ("300.2T", dec(3002, 11), DSI),
    ("2.5P", dec(25, 14), DSI),
    ("1.01E", dec(101, 16), DSI),
    # Things that saturate/round
    ("3.001n", dec(4, -9), DSI),
    ("1.1E-9", dec(2, -9), DEXP),
    ("0.0000000001", dec(1, -9), DSI),
    ("0.0000000005", dec(1, -9), DSI),
    ("0.00000000050", dec(1, -9), DSI),
    ("0.5e-9", dec(1, -9), DEXP),
    ("0.9n", dec(1, -9), DSI),
    ("0.00000012345", dec(124, -9), DSI),
    ("0.00000012354", dec(124, -9), DSI),
    ("9Ei", Fraction(MAX_INT64), BSI),
    ("9223372036854775807Ki", Fraction(MAX_INT64), BSI),
    ("12E", dec(12, 18), DSI),
    # We'll accept fractional binary stuff, too.
    ("100.035Ki", dec(10243584, -2), BSI),
    ("0.5Mi", dec(512 * 1024, 0), BSI),
    ("0.05Gi", dec(536870912, -1), BSI),
    ("0.025Ti", dec(274877906944, -1), BSI),
    # Things written by trolls
    ("0.000000000001Ki", dec(2, -9), DSI),  # rounds up, changes format
    (".001", dec(1, -3), DSI),
    (".0001k", dec(100, -3), DSI),
    ("1.", dec(1, 0), DSI),
    ("1.G", dec(1, 9), DSI),
]


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE)
def test_parse_gives_upstream_value_and_format(text: str, value: Fraction, fmt: Format) -> None:
    got = q(text)
    assert (got.value, got.format) == (value, fmt)


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE)
def test_parse_with_minus_sign_negates_value_and_keeps_format(
    text: str, value: Fraction, fmt: Format
) -> None:
    got = q("-" + text)
    assert (got.value, got.format) == (-value, fmt)


@pytest.mark.parametrize(("text", "value", "fmt"), PARSE_TABLE)
def test_parse_with_plus_sign_is_the_same_quantity(text: str, value: Fraction, fmt: Format) -> None:
    got = q("+" + text)
    assert (got.value, got.format) == (value, fmt)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT_WRONG),
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("0.1mi", ERR_SUFFIX),
        ("0.1am", ERR_FORMAT_WRONG),
        ("aoeu", ERR_FORMAT_WRONG),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("-3.01i", ERR_SUFFIX),
        ("-3.01e-", ERR_SUFFIX),
        ("1e4294967297", ERR_SUFFIX),  # exponent outside int32 is rejected, not truncated
        ("1E-2147483648", ERR_SUFFIX),
        (" 1", ERR_FORMAT_WRONG),
        ("1 ", ERR_FORMAT_WRONG),
        ("1\n", ERR_FORMAT_WRONG),
        ("Non-Numeric", ERR_FORMAT_WRONG),
        ("1K", ERR_SUFFIX),
        ("1Ki5", ERR_SUFFIX),
        ("1Ee5", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("１", ERR_FORMAT_WRONG),  # non-ASCII digits are not digits
    ],
)
def test_parse_rejects_malformed_input_with_upstream_message(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as exc:
        q(text)
    assert str(exc.value) == message


def test_format_wrong_message_quotes_upstream_regular_expression() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize("text", ["+", "-", ".", "-.", "00"])
def test_parse_of_a_bare_sign_or_dot_is_zero_as_upstream(text: str) -> None:
    assert q(text).value == 0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("-.484785E-7466", dec(-1, -9)),
        (".484785E-7466", dec(1, -9)),
        ("1e-2147483647", dec(1, -9)),
    ],
)
def test_parse_rounds_tiny_values_away_from_zero_to_one_nano(text: str, value: Fraction) -> None:
    assert q(text).value == value


def test_parse_rejects_magnitudes_beyond_ten_to_the_thousand() -> None:
    with pytest.raises(QuantityError) as exc:
        q("1e1001")
    assert str(exc.value) == ERR_TOO_LARGE


def test_parse_accepts_ten_to_the_thousand() -> None:
    assert str(q("1e1000")) == "10e999"


# TestQuantityString: (value, format) -> canonical, alternate spelling that canonicalizes to it.
STRING_TABLE: list[tuple[Fraction, Format, str, str]] = [
    (dec(1024**3, 0), BSI, "1Gi", "1024Mi"),
    (dec(300 * 1024**2, 0), BSI, "300Mi", "307200Ki"),
    (dec(6 * 1024, 0), BSI, "6Ki", ""),
    (dec(1001 * 1024**3, 0), BSI, "1001Gi", "1025024Mi"),
    (dec(1024**4, 0), BSI, "1Ti", "1024Gi"),
    (dec(5, 0), BSI, "5", "5000m"),
    (dec(500, -3), BSI, "500m", "0.5"),
    (dec(1, 9), DSI, "1G", "1000M"),
    (dec(1000, 6), DSI, "1G", "0.001T"),
    (dec(1000000, 3), DSI, "1G", ""),
    (dec(1000000000, 0), DSI, "1G", ""),
    (dec(1, -3), DSI, "1m", "1000u"),
    (dec(80, -3), DSI, "80m", ""),
    (dec(1080, -3), DSI, "1080m", "1.08"),
    (dec(108, -2), DSI, "1080m", "1080000000n"),
    (dec(10800, -4), DSI, "1080m", ""),
    (dec(300, 6), DSI, "300M", ""),
    (dec(1, 12), DSI, "1T", ""),
    (dec(1, 18), DSI, "1E", ""),
    (dec(1, 21), DSI, "1e21", "1000E"),
    (dec(5, 21), DSI, "5e21", "5000E"),
    (dec(1, 24), DSI, "1e24", "1000000E"),
    (dec(1, 70), BSI, "10e69", ""),
    (dec(2, 70), BSI, "20e69", ""),
    (dec(1, 72), BSI, "1e72", ""),
    (dec(1234567, 6), DSI, "1234567M", ""),
    (dec(1234567, -3), BSI, "1234567m", ""),
    (dec(3, 3), DSI, "3k", ""),
    (dec(1025, 0), BSI, "1025", ""),
    (dec(0, 0), DSI, "0", ""),
    (dec(0, 0), BSI, "0", ""),
    (dec(1, 9), DEXP, "1e9", ".001e12"),
    (dec(1, -3), DEXP, "1e-3", "0.001e0"),
    (dec(1, -9), DEXP, "1e-9", "1000e-12"),
    (dec(80, -3), DEXP, "80e-3", ""),
    (dec(300, 6), DEXP, "300e6", ""),
    (dec(1, 12), DEXP, "1e12", ""),
    (dec(1, 3), DEXP, "1e3", ""),
    (dec(3, 3), DEXP, "3e3", ""),
    (dec(0, 0), DEXP, "0", "00"),
    (dec(1, -9), DSI, "1n", ""),
    (dec(80, -9), DSI, "80n", ""),
    (dec(1080, -9), DSI, "1080n", ""),
    (dec(108, -8), DSI, "1080n", ""),
    (dec(10800, -10), DSI, "1080n", ""),
    (dec(1, -6), DSI, "1u", ""),
    (dec(80, -6), DSI, "80u", ""),
    (dec(1080, -6), DSI, "1080u", ""),
]


@pytest.mark.parametrize(("value", "fmt", "canonical", "alternate"), STRING_TABLE)
def test_str_is_upstream_canonical_form(value: Fraction, fmt: Format, canonical: str, alternate: str) -> None:
    assert str(Quantity.from_fraction(value, fmt)) == canonical


@pytest.mark.parametrize(("value", "fmt", "canonical", "alternate"), STRING_TABLE)
def test_canonical_form_parses_back_to_the_same_value(
    value: Fraction, fmt: Format, canonical: str, alternate: str
) -> None:
    assert q(canonical).value == value


@pytest.mark.parametrize(("value", "fmt", "canonical", "alternate"), [row for row in STRING_TABLE if row[3]])
def test_alternate_spelling_canonicalizes(
    value: Fraction, fmt: Format, canonical: str, alternate: str
) -> None:
    assert str(q(alternate)) == canonical


@pytest.mark.parametrize(
    ("value", "fmt", "canonical", "alternate"), [row for row in STRING_TABLE if row[0] != 0]
)
def test_negative_value_prints_with_a_minus_sign(
    value: Fraction, fmt: Format, canonical: str, alternate: str
) -> None:
    assert str(Quantity.from_fraction(-value, fmt)) == "-" + canonical


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        # TestQuantityParseEmit
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        # the brief's examples
        ("2Gi", "2Gi"),
        ("500m", "500m"),
        ("1000", "1k"),
        ("1500M", "1500M"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1.5", "1500m"),
        ("1536", "1536"),
        ("1.5E-3", "1500e-6"),
        ("9Ei", "9223372036854775807"),
        ("100.035Ki", "102435840m"),
    ],
)
def test_parse_then_str_emits_canonical_form(text: str, canonical: str) -> None:
    assert str(q(text)) == canonical
    if canonical != "0":
        assert str(q("-" + text)) == "-" + canonical


@pytest.mark.parametrize(
    ("value", "canonical"),
    [(dec(1, -12), "1e-12"), (dec(1, -10), "100e-12")],
)
def test_str_below_one_nano_uses_exponent_notation(value: Fraction, canonical: str) -> None:
    assert str(Quantity.from_fraction(value, DSI)) == canonical


def test_binary_value_past_ei_prints_as_exact_decimal() -> None:
    assert str(Quantity.from_int(2**70, BSI)) == "1180591620717411303424"


def test_two_to_the_63_prints_as_8ei() -> None:
    assert str(Quantity.from_int(2**63, BSI)) == "8Ei"


@pytest.mark.parametrize(
    ("value", "fmt", "canonical"),
    [
        # TestNewSet / TestMilliNewSet
        (1, DSI, "1"),
        (1000, DSI, "1k"),
        (1234000, DSI, "1234k"),
        (1024, BSI, "1Ki"),
        (1000000, DEXP, "1e6"),
        (1024 * 1024, BSI, "1Mi"),
        (-2000, BSI, "-2000"),
    ],
)
def test_from_int_prints_canonically(value: int, fmt: Format, canonical: str) -> None:
    assert str(Quantity.from_int(value, fmt)) == canonical


@pytest.mark.parametrize(
    ("millis", "fmt", "canonical"),
    [
        (1, DSI, "1m"),
        (1000, DSI, "1"),
        (1234000, DSI, "1234"),
        (1024, BSI, "1024m"),
        (1000000, DEXP, "1e3"),
        (1024 * 1024, BSI, "1048576m"),
    ],
)
def test_from_fraction_of_millis_prints_canonically(millis: int, fmt: Format, canonical: str) -> None:
    assert str(Quantity.from_fraction(Fraction(millis, 1000), fmt)) == canonical


def test_from_fraction_without_a_decimal_form_rounds_away_from_zero_to_one_nano() -> None:
    assert Quantity.from_fraction(Fraction(1, 3)).value == Fraction(333333334, 10**9)
    assert Quantity.from_fraction(Fraction(-1, 3)).value == Fraction(-333333334, 10**9)


def test_from_fraction_keeps_an_exact_decimal_finer_than_nano() -> None:
    assert Quantity.from_fraction(Fraction(1, 1024)).value == Fraction(1, 1024)


# TestQuantityCmp and semantic equality.
@pytest.mark.parametrize(
    ("x", "y", "expect"),
    [
        ("0", "0", 0),
        ("100m", "50m", 1),
        ("50m", "100m", -1),
        ("10000T", "100Gi", 1),
        ("64Gi", "65536Mi", 0),
        ("64Gi", "68719476736", 0),
        ("1k", "1e3", 0),
        ("1Ki", "1k", 1),
        ("-1", "0", -1),
        ("1n", "0", 1),
    ],
)
def test_cmp_orders_by_value(x: str, y: str, expect: int) -> None:
    assert q(x).cmp(q(y)) == expect
    assert q(y).cmp(q(x)) == -expect


def test_equality_is_semantic_across_formats() -> None:
    assert q("64Gi") == q("65536Mi") == q("68719476736")


def test_equal_quantities_hash_alike() -> None:
    assert len({q("1k"), q("1000"), q("1e3"), q("1000000m")}) == 1


def test_ordering_operators_follow_value() -> None:
    assert q("1Gi") > q("1G")
    assert q("500m") < q("1")
    assert q("1k") <= q("1e3") <= q("1000")
    assert q("2") >= q("2000m")


def test_quantity_never_equals_a_plain_number() -> None:
    assert q("1") != 1


def test_sorting_is_by_value() -> None:
    assert [str(x) for x in sorted([q("1Gi"), q("1"), q("500m"), q("1G")])] == ["500m", "1", "1G", "1Gi"]


@pytest.mark.parametrize(("text", "expect"), [("0", 0), ("-1n", -1), ("1n", 1), ("-5Gi", -1), ("3Ki", 1)])
def test_sign(text: str, expect: int) -> None:
    assert q(text).sign() == expect


# TestAdd / TestSub: the result keeps the left format, or the right one when the left is zero.
@pytest.mark.parametrize(
    ("a", "b", "value", "fmt"),
    [
        (Quantity.from_int(10), Quantity.from_int(10), dec(20, 0), DSI),
        (Quantity.from_int(10), Quantity.from_int(1, BSI), dec(11, 0), DSI),
        (Quantity.from_int(10, BSI), Quantity.from_int(1), dec(11, 0), BSI),
        (Quantity.from_int(0), Quantity.from_int(50), dec(50, 0), DSI),
        (Quantity.from_int(50), Quantity.from_int(0), dec(50, 0), DSI),
        (Quantity.from_int(0), Quantity.from_int(0), dec(0, 0), DSI),
        (Quantity.from_int(0), Quantity.from_int(1024, BSI), dec(1024, 0), BSI),
    ],
)
def test_add_is_exact_and_keeps_left_format(a: Quantity, b: Quantity, value: Fraction, fmt: Format) -> None:
    got = a + b
    assert (got.value, got.format) == (value, fmt)


@pytest.mark.parametrize(
    ("a", "b", "value", "fmt"),
    [
        (Quantity.from_int(10), Quantity.from_int(10), dec(0, 0), DSI),
        (Quantity.from_int(10), Quantity.from_int(1, BSI), dec(9, 0), DSI),
        (Quantity.from_int(10, BSI), Quantity.from_int(1), dec(9, 0), BSI),
        (Quantity.from_int(0), Quantity.from_int(50), dec(-50, 0), DSI),
        (Quantity.from_int(50), Quantity.from_int(0), dec(50, 0), DSI),
        (Quantity.from_int(0), Quantity.from_int(0), dec(0, 0), DSI),
        (Quantity.from_int(0), Quantity.from_int(-(2**63), BSI), dec(2**63, 0), BSI),
    ],
)
def test_sub_is_exact_and_keeps_left_format(a: Quantity, b: Quantity, value: Fraction, fmt: Format) -> None:
    got = a - b
    assert (got.value, got.format) == (value, fmt)


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_adding_zero_on_either_side_preserves_the_suffix(text: str) -> None:
    zero = q("0")
    assert str(q(text) + zero) == text
    assert str(zero + q(text)) == text


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_subtracting_from_zero_gives_the_negated_suffix(text: str) -> None:
    assert str(q(text) - q("0")) == text
    assert str(q("0") - q(text)) == "-" + text


def test_one_minus_most_negative_int64_does_not_wrap() -> None:
    assert str(Quantity.from_int(1) - Quantity.from_int(-(2**63))) == "9223372036854775809"


def test_add_sub_round_trip_across_scales_cancels() -> None:
    rng = random.Random(7)
    total = Quantity.from_int(0)
    parts = [Quantity.from_fraction(dec(rng.randrange(2**63), rng.randrange(-9, 11))) for _ in range(100)]
    for p in parts:
        total = total + p
    for p in parts:
        total = total - p
    assert total.is_zero()


def test_arithmetic_with_a_non_quantity_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        _ = q("1") + 1  # type: ignore[operator]


def test_negation_keeps_format() -> None:
    got = -Quantity.from_fraction(dec(901, -2))
    assert str(got) == "-9010m"


# TestNegativeValueRoundsAwayFromZero: Value() and MilliValue().
@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("-.484785E-7466", -1, -1),
        (".484785E-7466", 1, 1),
        ("-.484785E-1", -1, -49),
        (".484785E-1", 1, 49),
        ("-0.0005", -1, -1),
        ("0.0005", 1, 1),
        ("-1500m", -2, -1500),
        ("1500m", 2, 1500),
        ("-9.5000000001Gi", -10200547329, -10200547328108),
        ("9.5000000001Gi", 10200547329, 10200547328108),
        ("-1", -1, -1000),
        ("1", 1, 1000),
        ("0", 0, 0),
        ("1n", 1, 1),
        ("2Gi", 2147483648, 2147483648000),
    ],
)
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    got = q(text)
    assert (got.value_ceil(), got.milli_value_ceil()) == (value, milli)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("1", True),
        ("0", True),
        ("1500m", False),
        ("1k", True),
        ("1n", False),
        ("-3Gi", True),
        ("1e-3", False),
        ("9223372036854775807", True),
        ("-9223372036854775808", True),
        ("9223372036854775808", False),  # beyond int64: AsInt64 fails
        ("1000m", True),  # divergence: Go's AsInt64 fails on its int64Amount{1000, -3} form
        ("100Ti", True),  # divergence: Go's AsInt64 fails on its inf.Dec form
    ],
)
def test_is_integer_means_whole_and_within_int64(text: str, expect: bool) -> None:
    assert q(text).is_integer() is expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [("10", 10), ("-2Ki", -2048), ("1500m", None), ("1e19", None), ("0", 0)],
)
def test_as_int64(text: str, expect: int | None) -> None:
    assert q(text).as_int64() == expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("2Ki", 2048.0),
        ("1.1Ki", 1126.4),
        ("1Mi", 1.048576e06),
        ("2Gi", 2.147483648e09),
        ("12E", 1.2e19),
        ("9Ei", 9223372036854775807.0),
        ("0", 0.0),
        ("12e500", float("inf")),
        ("-12e500", float("-inf")),
    ],
)
def test_as_approximate_float(text: str, expect: float) -> None:
    assert q(text).as_approximate_float() == expect


def test_quantity_is_immutable() -> None:
    with pytest.raises(AttributeError):
        q("1").value = Fraction(2)  # type: ignore[misc]


def test_repr_shows_canonical_string() -> None:
    assert repr(q("1.5Gi")) == "Quantity('1536Mi')"


class _Model(pydantic.BaseModel):
    amount: QuantityField


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [('"2Gi"', "2Gi"), ("2", "2"), ("1.5", "1500m"), ("1e20", "100e18"), ('" 1 "', "1"), ("-1", "-1")],
)
def test_pydantic_field_accepts_json_string_or_number(raw: str, canonical: str) -> None:
    model = _Model.model_validate_json('{"amount": ' + raw + "}")
    assert str(model.amount) == canonical


def test_pydantic_field_serializes_to_canonical_string() -> None:
    model = _Model.model_validate({"amount": "1.5Gi"})
    assert model.model_dump() == {"amount": "1536Mi"}
    assert model.model_dump_json() == '{"amount":"1536Mi"}'


@pytest.mark.parametrize("raw", ['"1Kb"', "true", "null", "[1]"])
def test_pydantic_field_rejects_non_quantities(raw: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        _Model.model_validate_json('{"amount": ' + raw + "}")


def test_pydantic_error_carries_upstream_message() -> None:
    with pytest.raises(pydantic.ValidationError) as exc:
        _Model.model_validate({"amount": "1i"})
    assert ERR_SUFFIX in str(exc.value)


def test_pydantic_json_schema_allows_string_or_number() -> None:
    schema = _Model.model_json_schema()["properties"]["amount"]
    assert {t["type"] for t in schema["anyOf"]} == {"string", "integer", "number"}


def test_parse_rejects_more_than_4000_digits_as_numeric_error() -> None:
    with pytest.raises(QuantityError) as exc:
        q("1" * 4001)
    assert str(exc.value) == ERR_NUMERIC


def test_leading_zeros_do_not_count_towards_the_digit_limit() -> None:
    assert str(q("0" * 5000 + "1")) == "1"


def test_copies_and_pickles_keep_value_and_format() -> None:
    original = q("1.5Gi")
    for copied in (copy.deepcopy(original), pickle.loads(pickle.dumps(original))):
        assert (copied.value, copied.format, str(copied)) == (original.value, BSI, "1536Mi")


def test_replacing_the_format_recomputes_the_canonical_string() -> None:
    original = q("1.5Gi")
    assert str(original) == "1536Mi"
    assert str(dataclasses.replace(original, format=DSI)) == "1610612736"


@pytest.mark.parametrize(("text", "value"), [("e3", 0), ("Ki", 0), ("m", 0)])
def test_a_bare_suffix_parses_as_zero_as_upstream(text: str, value: int) -> None:
    assert q(text).value == value


def test_coerced_strings_are_parsed_once_and_errors_every_time() -> None:
    from resourceapi.machinery.quantity import QuantityError, coerce_quantity

    assert coerce_quantity("80Gi") is coerce_quantity("80Gi")
    assert coerce_quantity(" 80Gi ") == coerce_quantity("80Gi")
    for _ in range(2):
        with pytest.raises(QuantityError):
            coerce_quantity("two")


def test_a_copy_of_a_quantity_is_the_quantity_itself() -> None:
    """Quantities are immutable: copying a model that holds one (a synthesized request) shares it."""
    import copy

    q = Quantity.parse("80Gi")
    assert copy.copy(q) is q and copy.deepcopy(q) is q
