"""Kubernetes `resource.Quantity` with exact semantics: parsing, canonical formatting, arithmetic, comparison.

Values are exact `Fraction`s, so there is no int64/inf.Dec split as in Go; what Go does on either path
(rounding below 1n up, capping BinarySI at 2^63-1, the canonical suffix choice) is reproduced on the value.
Mirrors `k8s.io/apimachinery/pkg/api/resource` (quantity.go, suffix.go, amount.go).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler
    from pydantic_core import CoreSchema

# Upstream's error texts (quantity.go ErrFormatWrong / ErrNumeric / ErrSuffix).
SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = "quantities must match the regular expression '" + SPLIT_RE_STRING + "'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"
# Ours, for inputs Go would spend unbounded time or memory on (see docs/divergences.md).
ERR_TOO_LARGE = "quantity is too large: its magnitude must not exceed 10^1000"

MAX_INT64 = (1 << 63) - 1
MIN_INT64 = -(1 << 63)
_MAX_INT32 = (1 << 31) - 1
_MAX_DECIMAL_SCALE = 1000  # largest base-10 exponent of a parsed value we compute (divergence: Go has none)
_MAX_DIGITS = 4000  # below Python's int/str conversion limit (4300 digits)
_NANO = 10**9
_ONE_NANO = Fraction(1, _NANO)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is upstream's."""


class Format(enum.Enum):
    """How a quantity prints (`resource.Format`); parsing remembers the suffix family."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


# The scanner of `parseQuantityString`: sign, leading zeros, integer digits, optional '.' and fraction digits,
# suffix letters, optional exponent sign and digits. Anything else is ErrFormatWrong.
_SCAN = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")

# suffix -> (base, exponent, format) (`quantitySuffixer.interpret`).
_SUFFIXES: dict[str, tuple[int, int, Format]] = {
    "": (10, 0, Format.DECIMAL_SI),
    "n": (10, -9, Format.DECIMAL_SI),
    "u": (10, -6, Format.DECIMAL_SI),
    "m": (10, -3, Format.DECIMAL_SI),
    "k": (10, 3, Format.DECIMAL_SI),
    "M": (10, 6, Format.DECIMAL_SI),
    "G": (10, 9, Format.DECIMAL_SI),
    "T": (10, 12, Format.DECIMAL_SI),
    "P": (10, 15, Format.DECIMAL_SI),
    "E": (10, 18, Format.DECIMAL_SI),
    "Ki": (2, 10, Format.BINARY_SI),
    "Mi": (2, 20, Format.BINARY_SI),
    "Gi": (2, 30, Format.BINARY_SI),
    "Ti": (2, 40, Format.BINARY_SI),
    "Pi": (2, 50, Format.BINARY_SI),
    "Ei": (2, 60, Format.BINARY_SI),
}
_DECIMAL_SUFFIX: dict[int, str] = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_BINARY_SUFFIX: tuple[str, ...] = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact quantity and the format it prints in. Equality, hash and order are semantic (by value)."""

    value: Fraction
    format: Format = Format.DECIMAL_SI
    _text: str | None = field(default=None, init=False, repr=False)  # canonical string, once computed

    # --- construction -------------------------------------------------------------------------------

    @staticmethod
    def parse(s: str) -> Quantity:
        """`resource.ParseQuantity`: raises QuantityError with upstream's message."""
        if not s:
            raise QuantityError(ERR_FORMAT_WRONG)
        if s == "0":
            return Quantity(Fraction(0), Format.DECIMAL_SI)
        m = _SCAN.fullmatch(s)
        if m is None:
            raise QuantityError(ERR_FORMAT_WRONG)
        sign, num, denom, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
        interpreted = _SUFFIXES.get(suffix)
        if interpreted is None:
            interpreted = _interpret_exponent(suffix)
        base, exponent, fmt = interpreted
        digits = num + denom
        if len(digits) > _MAX_DIGITS:
            raise QuantityError(ERR_NUMERIC)
        mantissa = int(digits) if digits else 0
        if mantissa == 0:
            return Quantity(Fraction(0), fmt)
        if base == 10:
            amount = _decimal_amount(mantissa, exponent - len(denom))
        elif not denom:
            amount = Fraction(mantissa << exponent)
        else:
            amount = Fraction(mantissa << exponent, 10 ** len(denom))
            if amount.denominator != 1:
                amount = _round_up_to_nano(amount)
        if fmt is Format.BINARY_SI:
            if amount > MAX_INT64:
                amount = Fraction(MAX_INT64)  # "The max is just a simple cap" (BinarySI only)
            elif amount < 1:
                fmt = Format.DECIMAL_SI  # a positive value below 1 cannot be written in binary
        return Quantity(-amount if sign == "-" else amount, fmt)

    @staticmethod
    def from_int(n: int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """`resource.NewQuantity(n, fmt)`."""
        return Quantity(Fraction(n), fmt)

    @staticmethod
    def from_fraction(v: Fraction | int, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """An exact value; one with no finite decimal form (1/3) is rounded away from zero to 1n, as parse."""
        f = Fraction(v)
        d = f.denominator
        while d % 2 == 0:
            d //= 2
        while d % 5 == 0:
            d //= 5
        if d != 1:
            f = _round_up_to_nano(abs(f)) * (1 if f > 0 else -1)
        return Quantity(f, fmt)

    # --- formatting ---------------------------------------------------------------------------------

    def __str__(self) -> str:
        """`Quantity.String()`: the canonical form (`CanonicalizeBytes`)."""
        text = self._text
        if text is None:
            text = _canonical(self.value, self.format)
            object.__setattr__(self, "_text", text)
        return text

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    # Immutable, so a copy is the object itself: `model_copy(deep=True)` of a model holding quantities
    # (a synthesized request per placed pod) would otherwise rebuild each through pickling's protocol.
    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Quantity:
        return self

    # --- comparison ---------------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.value < other.value
        return NotImplemented

    def __le__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.value <= other.value
        return NotImplemented

    def __gt__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.value > other.value
        return NotImplemented

    def __ge__(self, other: Quantity) -> bool:
        if isinstance(other, Quantity):
            return self.value >= other.value
        return NotImplemented

    def cmp(self, other: Quantity) -> int:
        """`Quantity.Cmp`: -1, 0 or 1."""
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def sign(self) -> int:
        """`Quantity.Sign`: -1, 0 or 1 (a Fraction's sign is its numerator's: integer compares)."""
        n = self.value.numerator
        return (n > 0) - (n < 0)

    def is_zero(self) -> bool:
        return self.value == 0

    # --- arithmetic ---------------------------------------------------------------------------------

    def __add__(self, other: Quantity) -> Quantity:
        """`Quantity.Add`: exact; keeps the left format unless the left value is zero (then the right's)."""
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        """`Quantity.Sub`: exact; keeps the left format unless the left value is zero (then the right's)."""
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value - other.value, fmt)

    def __neg__(self) -> Quantity:
        """`Quantity.Neg`."""
        return Quantity(-self.value, self.format)

    # --- conversions --------------------------------------------------------------------------------

    def value_ceil(self) -> int:
        """`Quantity.Value()`: the value rounded to an integer away from zero (1.2 -> 2, -1.2 -> -2)."""
        return _away_from_zero(self.value)

    def milli_value_ceil(self) -> int:
        """`Quantity.MilliValue()`: the value in thousandths, rounded away from zero."""
        return _away_from_zero(self.value * 1000)

    def is_integer(self) -> bool:
        """`AsInt64` succeeds (CEL `isInteger`): the value is whole and fits an int64. Judged on the value,
        not on Go's internal representation (see docs/divergences.md)."""
        v = self.value
        return v.denominator == 1 and MIN_INT64 <= v.numerator <= MAX_INT64

    def as_int64(self) -> int | None:
        """`AsInt64` (CEL `asInteger`): the whole value when it fits an int64, else None."""
        return self.value.numerator if self.is_integer() else None

    def as_approximate_float(self) -> float:
        """`AsApproximateFloat64`: the nearest float (inf beyond the float range)."""
        try:
            return float(self.value)
        except OverflowError:
            return float("inf") if self.value > 0 else float("-inf")

    # --- pydantic -----------------------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """Validate from a string or a JSON number (as Go's UnmarshalJSON does); serialize canonically."""
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            coerce_quantity,
            serialization=core_schema.to_string_ser_schema(when_used="always"),
            json_schema_input_schema=core_schema.union_schema(
                [core_schema.str_schema(), core_schema.int_schema(), core_schema.float_schema()]
            ),
        )


_PARSED: dict[str, Quantity] = {}
_PARSED_MAX = 65536


def coerce_quantity(raw: object) -> Quantity:
    """A Quantity from a Quantity, a string (surrounding space trimmed, as UnmarshalJSON) or a JSON number.

    Strings are parsed once: a cluster dump repeats the same few ("4", "1", "80Gi") tens of thousands of
    times, and Quantity is immutable, so the parsed value is shared (bounded: starts over when full)."""
    if isinstance(raw, Quantity):
        return raw
    if isinstance(raw, str):
        cached = _PARSED.get(raw)
        if cached is None:
            cached = Quantity.parse(raw.strip())
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            _PARSED[raw] = cached
        return cached
    if isinstance(raw, bool):
        raise QuantityError(ERR_FORMAT_WRONG)
    if isinstance(raw, int | float):
        return Quantity.parse(repr(raw))
    raise QuantityError(ERR_FORMAT_WRONG)


# A pydantic field type: accepts "2Gi", 2 or 1.5 in JSON, serializes to the canonical string.
QuantityField = Annotated[Quantity, "kubernetes resource.Quantity"]


def _interpret_exponent(suffix: str) -> tuple[int, int, Format]:
    """`e<int>`/`E<int>` suffixes; the exponent must fit int32 and not be MinInt32 (newest upstream)."""
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        body = rest[1:] if rest[0] in "+-" else rest
        if body.isdigit() and body.isascii():
            exponent = int(rest)
            if -_MAX_INT32 <= exponent <= _MAX_INT32:
                return 10, exponent, Format.DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def _decimal_amount(mantissa: int, scale: int) -> Fraction:
    """|mantissa| * 10^scale, rounded up to a whole number of nanos."""
    if scale >= -9:
        if scale > _MAX_DECIMAL_SCALE:
            raise QuantityError(ERR_TOO_LARGE)
        if scale >= 0:
            return Fraction(mantissa * 10**scale)
        return Fraction(mantissa, 10**-scale)
    shift = -9 - scale  # digits below one nano
    if shift > len(str(mantissa)):
        return _ONE_NANO  # far below 1n: rounds up to 1n
    nanos = -(-mantissa // 10**shift)
    return Fraction(nanos, _NANO)


def _round_up_to_nano(v: Fraction) -> Fraction:
    """A non-negative value rounded up to a whole number of nanos."""
    nanos = -(-(v.numerator * _NANO) // v.denominator)
    return Fraction(nanos, _NANO)


def _away_from_zero(v: Fraction) -> int:
    n, d = v.numerator, v.denominator
    if n >= 0:
        return -(-n // d)
    return -((-n + d - 1) // d)


def _decimal_parts(v: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with v == mantissa * 10^exponent, no trailing zeros removable and the exponent a
    multiple of 3 (`AsCanonicalBytes`). v must be non-zero with a finite decimal form."""
    n, d = v.numerator, v.denominator
    exponent = 0
    if d != 1:
        twos = fives = 0
        dd = d
        while dd % 2 == 0:
            dd //= 2
            twos += 1
        while dd % 5 == 0:
            dd //= 5
            fives += 1
        k = max(twos, fives)
        n = n * (10**k // d)
        exponent = -k
    while n % 10 == 0:
        n //= 10
        exponent += 1
    r = exponent % 3
    if r:
        n *= 10**r
        exponent -= r
    return n, exponent


def _canonical(v: Fraction, fmt: Format) -> str:
    """`CanonicalizeBytes` plus the suffix, with newest upstream's fallbacks past `E`/`Ei` and below `n`."""
    if v == 0:
        return "0"
    if fmt is Format.BINARY_SI:
        if -1024 < v < 1024 or v.denominator != 1:
            fmt = Format.DECIMAL_SI  # small or fractional binary values print in decimal SI
        else:
            n = v.numerator
            power = 0
            while n % 1024 == 0:
                n //= 1024
                power += 1
            if power < len(_BINARY_SUFFIX):
                return f"{n}{_BINARY_SUFFIX[power]}"
            fmt = Format.DECIMAL_SI  # beyond Ei: exact decimal
    mantissa, exponent = _decimal_parts(v)
    if fmt is Format.DECIMAL_SI:
        suffix = _DECIMAL_SUFFIX.get(exponent)
        if suffix is not None:
            return f"{mantissa}{suffix}"
    if exponent == 0:
        return str(mantissa)
    return f"{mantissa}e{exponent}"
