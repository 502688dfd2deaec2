"""Quantities as kube-apiserver 1.37 prints and reads them in validation messages, where Go's representation
shows through: `String()` (and the JSON of a quantity) and `Value()`.

`ParseQuantity` keeps an int64 mantissa and scale when the text is short (its fast path) and an `inf.Dec`
rounded up to nano otherwise. On the fast path it keeps the text itself when it deems it canonical, and
`String()` returns that text as written (`1E-3`, `+1`, `5.`). Otherwise `String()` is the canonical form,
except that v1.37.2 drops the suffix of a DecimalSI value past `E` (`2000E` prints `2`;
resourceapi/machinery/quantity.py prints `2e21`, as newer releases do). `Value()` wraps around int64 in ways
that
depend on the representation (a duplicate valid value above 2^63 is printed with it).

The one home of these texts: claims (a capacity request in a duplicate's JSON), slices (counters, capacity
policies: `GoQuantity`) and claim status all print quantities through it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from resourceapi.machinery.quantity import (
    MAX_INT64,
    MIN_INT64,
    Format,
    Quantity,
    QuantityError,
    coerce_quantity,
)

_NUMBER = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_DECIMAL_EXPONENTS = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT = re.compile(r"[eE]([-+]?[0-9]+)")
_MAX_INT64_FACTORS = 18
_NANO = 10**9


@dataclass(frozen=True)
class _Fast:
    """The int64 representation of ParseQuantity's fast path: `value * 10^scale`, and whether the parsed
    text is kept as the quantity's string."""

    value: int
    scale: int
    kept: bool


def _text(raw: Any) -> str:
    """The text Go parsed: a JSON string's content (space trimmed), or a JSON number as written."""
    return raw.strip() if isinstance(raw, str) else json.dumps(raw)


def _fast(text: str) -> _Fast | None:
    """ParseQuantity's fast path for `text` (a valid quantity), or None when it takes the inf.Dec path."""
    if text == "0":
        return _Fast(0, 0, True)
    m = _NUMBER.fullmatch(text)
    if m is None:
        return None
    negative = m.group(1) == "-"
    num, denom, suffix = m.group(2) or "0", m.group(3) or "", m.group(4)
    exponent_match = _EXPONENT.fullmatch(suffix)
    if suffix in _DECIMAL_EXPONENTS or exponent_match:
        binary = False
        scale = int(exponent_match.group(1)) if exponent_match else _DECIMAL_EXPONENTS[suffix]
        mantissa = 1
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif suffix in _BINARY_EXPONENTS:
        binary = True
        exponent = _BINARY_EXPONENTS[suffix]
        scale = 0
        if denom:
            return None
        mantissa = 1 << exponent
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
    else:
        return None
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    shifted = num + denom
    value = int(shifted)
    result = value * mantissa
    if value > MAX_INT64 or result > MAX_INT64:
        return None
    # every binary suffix is a multiple of 2^10
    kept = (
        (value & 0x07 != 0)
        if binary
        else (scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0")
    )
    return _Fast(-result if negative else result, scale, kept)


def go_canonical(q: Quantity, e_notation: bool = False) -> str:
    """`String()` of a quantity that keeps no text (canonical). Past E a DecimalSI quantity has no suffix:
    v1.37.2 writes its mantissa alone (`1000000P` as `1`); with `e_notation` (apimachinery v0.38
    `CanonicalizeBytes`, resourceapi/releases.py `Validation.quantity_e_notation`) it falls back to an
    exponent (`1e21`)."""
    text = str(q)
    if q.format is Format.DECIMAL_SI and "e" in text and not e_notation:
        return text[: text.index("e")]  # no suffix past E: the mantissa alone
    return text


def quantity_text(raw: Any, e_notation: bool = False) -> str:
    """A decoded quantity as `String()` (and its JSON) prints it: as written when ParseQuantity keeps the
    text, else canonical (`go_canonical`); the raw text when it does not parse (the decode stage refuses
    such a body first)."""
    try:
        q = coerce_quantity(raw)
    except (QuantityError, TypeError, ValueError):
        return str(raw)
    text = _text(raw)
    fast = _fast(text)
    return text if fast is not None and fast.kept else go_canonical(q, e_notation)


def _wrap(n: int) -> int:
    """Go's two's complement int64 arithmetic."""
    n &= (1 << 64) - 1
    return n - (1 << 64) if n > MAX_INT64 else n


def _big_int64(n: int) -> int:
    """`big.Int.Int64()`: the low 64 bits of |n| as an int64, negated when n is negative."""
    v = _wrap(abs(n))
    return _wrap(-v) if n < 0 else v


def _go_div(a: int, b: int) -> tuple[int, int]:
    """Go's truncated int64 division and remainder."""
    q = abs(a) // abs(b)
    q = -q if (a < 0) != (b < 0) else q
    return q, a - q * b


def go_value(raw: Any) -> int:
    """`Quantity.Value()` of a decoded quantity, int64 overflow and rounding quirks included."""
    q = quantity_or_zero(raw)
    fast = _fast(_text(raw)) if raw is not None else _Fast(0, 0, True)
    if fast is not None:
        return _fast_value(fast.value, fast.scale)
    v = q.value
    if v == 0:
        return 0
    if q.format is Format.BINARY_SI and abs(v) >= MAX_INT64:
        return MAX_INT64 if v > 0 else -MAX_INT64  # capped at parse
    unscaled = abs(v) * _NANO
    unscaled_int = -(-unscaled.numerator // unscaled.denominator)  # rounded up to nano
    if v < 0:
        unscaled_int = -unscaled_int
    if unscaled_int < MAX_INT64:  # `scaledValue`'s int64 fast path (any negative takes it)
        result, mod = _go_div(_big_int64(unscaled_int), _NANO)
        return _wrap(result + 1) if mod != 0 else result
    quotient, remainder = divmod(unscaled_int, _NANO)  # Euclidean for a positive divisor
    return _wrap(_big_int64(quotient) + 1) if remainder else _big_int64(quotient)


def _fast_value(value: int, scale: int) -> int:
    """`int64Amount.AsScaledInt64(0)`."""
    if scale < 0:  # negativeScaleInt64: away from zero
        divisor = 10**-scale
        quotient, remainder = _go_div(value, divisor)
        if remainder == 0:
            return quotient
        return quotient + (1 if value > 0 else -1)
    if scale == 0:
        return value
    if scale in (1, 2, 3, 6, 9):  # the multiplications that return the wrapped product
        if value == MIN_INT64:
            return 0
        return _wrap(value * 10**scale)
    result = value
    for _ in range(scale):  # one digit at a time: 0 on overflow
        product = result * 10
        if result not in (0, 1) and (result == MIN_INT64 or product != _wrap(product)):
            return 0
        result = product
    return result


def quantity_or_zero(raw: Any) -> Quantity:
    """A decoded quantity; an absent one is Go's zero Quantity (the decode stage refuses a malformed one)."""
    if raw is None:
        return Quantity(Fraction(0))
    try:
        return coerce_quantity(raw)
    except (QuantityError, TypeError, ValueError):
        return Quantity(Fraction(0))


@dataclass(frozen=True)
class GoQuantity:
    """A decoded quantity and the text Go prints for it (`String()`: as written or canonical)."""

    q: Quantity
    text: str
    value: int  # `Value()`

    def __str__(self) -> str:
        return self.text


def go_quantity(raw: Any, e_notation: bool = False) -> GoQuantity:
    """A decoded quantity (None: Go's zero Quantity) with its `String()` (`quantity_text`) and `Value()`."""
    text = "0" if raw is None else quantity_text(raw, e_notation)
    return GoQuantity(quantity_or_zero(raw), text, go_value(raw))
