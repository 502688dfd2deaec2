"""Quantities as kube-apiserver v1.37.2 prints and reads them in validation messages (each value measured
against the real server through a valid value's message or a duplicate's key: tests/differential)."""

from __future__ import annotations

from typing import Any

import pytest

from resourceapi.machinery.goquantity import go_canonical, go_value, quantity_text
from resourceapi.machinery.quantity import Quantity


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("-1E-3", "-1E-3"),  # the parsed text is kept on the fast path
        ("100E-3", "100E-3"),
        ("1Mi", "1Mi"),
        ("+1", "+1"),
        ("5.", "5."),
        ("1e03", "1e03"),
        ("1.5", "1500m"),  # otherwise canonical
        ("1000", "1k"),
        ("1024Ki", "1Mi"),
        ("1024Mi", "1Gi"),
        ("0.001Gi", "1073741824m"),
        ("1e-12", "1e-9"),
        ("2000E", "2"),  # v1.37.2 drops the suffix past E
        ("1000000P", "1"),
        ("1000000E", "1"),
        ("1e21", "1e21"),  # DecimalExponent keeps its exponent
        ("1024Ei", "9223372036854775807"),  # BinarySI is capped at parse
        (10**20, "100E"),
        (1.5, "1500m"),
    ],
)
def test_string_is_what_the_server_prints(raw: Any, text: str) -> None:
    assert quantity_text(raw) == text


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("3.25e3", 3250),
        ("0.001Gi", 1073742),
        ("9.9", 10),
        ("100E", 0),  # int64 mantissa, scale 18: the digit-by-digit multiplication gives 0 on overflow
        ("1e19", 0),
        ("1000000P", 0),
        ("1e400", 0),
        ("123456789012345678901", -5670419503621182411),  # inf.Dec: the low 64 bits
        ("999999999999999999999Ei", 9223372036854775807),
    ],
)
def test_value_wraps_as_go_does(raw: Any, value: int) -> None:
    assert go_value(raw) == value


def test_canonical_sums_drop_the_suffix_past_e_too() -> None:
    assert go_canonical(Quantity.parse("1000E") + Quantity.parse("1000E")) == "2"
    assert go_canonical(Quantity.parse("1Mi") + Quantity.parse("1")) == "1048577"


@pytest.mark.parametrize(
    ("raw", "before", "from_1_38"),
    [("1000000P", "1", "1e21"), ("1000000E", "1", "1e24"), ("-1000E", "-1", "-1e21"), ("1E", "1E", "1E")],
)
def test_past_e_a_decimal_quantity_keeps_its_exponent_from_1_38(
    raw: str, before: str, from_1_38: str
) -> None:
    """apimachinery v0.38.0-beta.0 `CanonicalizeBytes` falls back to `e` notation where v0.37.2 drops it;
    measured against kube-apiserver v1.38.0-beta.0 (`1000000P` shown as `1e21`)."""
    assert quantity_text(raw) == before
    assert quantity_text(raw, e_notation=True) == from_1_38
