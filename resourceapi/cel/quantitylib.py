"""The Kubernetes CEL quantity library (apiserver `library/quantity.go`) for cel-expr-python.

The checker sees `kubernetes.Quantity` (a message, messages.py). At evaluation a Quantity is a tagged string
whose text orders like the number (`runtime_value`): equal values have equal strings, so `==`/`!=` are
semantic (`64Gi == 65536Mi`) at native speed, comparisons between known Quantities can run as native string
comparisons (device.py), and Python implementations receive plain strings (cel-expr-python 0.1.3 leaks
memory on every protobuf message handed to a Python function). Ordering operators are not declared.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

from resourceapi.machinery.quantity import MAX_INT64 as _INT64_MAX
from resourceapi.machinery.quantity import MIN_INT64 as _INT64_MIN
from resourceapi.machinery.quantity import Quantity, QuantityError

RUNTIME_PREFIX = "\ue000Q"  # a private-use character: no quantity-like string from an API object starts so


_E_OFFSET = 500000
_COMPLEMENT = str.maketrans("0123456789", "9876543210")
ZERO = RUNTIME_PREFIX + "1"


def _decimal_digits(m: Fraction) -> tuple[str, int]:
    """(significant digits without trailing zeros, E) with m = 0.<digits> × 10^E, for m > 0."""
    den = m.denominator
    k = 0
    while den % 10 == 0:
        den //= 10
        k += 1
    while den % 2 == 0 or den % 5 == 0:
        den //= 2 if den % 2 == 0 else 5
        k += 1
    if den != 1:  # not a finite decimal (no Quantity is): 40 significant digits, rounded up
        k = 40 - (len(str(m.numerator // m.denominator)) if m >= 1 else 0)
    n = -((-m.numerator * 10**k) // m.denominator)
    text = str(n)
    return text.rstrip("0"), len(text) - k


@functools.lru_cache(maxsize=8192)  # device capacities repeat a few values across a whole cluster
def runtime_value(value: Fraction) -> str:
    """The evaluation-time CEL value of an exact value: sign, exponent, digits, so that string order is
    numeric order (negative `0`, exponent and digits complemented, `~` end mark; zero `1`; positive `2`)."""
    if value == 0:
        return ZERO
    digits, e = _decimal_digits(abs(value))
    if value > 0:
        return f"{RUNTIME_PREFIX}2{e + _E_OFFSET:06d}{digits}"
    return f"{RUNTIME_PREFIX}0{_E_OFFSET - e:06d}{digits.translate(_COMPLEMENT)}~"


def to_runtime(q: Quantity) -> str:
    """The evaluation-time CEL value of a Quantity (device capacity values, folded literals)."""
    return runtime_value(q.value)


def is_runtime(v: Any) -> bool:
    """Is `v` an evaluation-time Quantity?"""
    return isinstance(v, str) and v.startswith(RUNTIME_PREFIX)


@functools.lru_cache(maxsize=8192)
def value_of(v: str) -> Fraction:
    """The exact value an evaluation-time Quantity holds (inverse of `runtime_value`)."""
    body = v[len(RUNTIME_PREFIX) :]
    if body == "1":
        return Fraction(0)
    if body[0] == "2":
        e, digits, sign = int(body[1:7]) - _E_OFFSET, body[7:], 1
    else:
        e, digits, sign = _E_OFFSET - int(body[1:7]), body[7:-1].translate(_COMPLEMENT), -1
    return sign * Fraction(int(digits)) * Fraction(10) ** (e - len(digits))


def _message(v: Fraction) -> str:
    return runtime_value(v)


@functools.lru_cache(maxsize=4096)
def parse_literal(s: str) -> Fraction:
    """`resource.ParseQuantity` value; raises QuantityError with upstream's message."""
    return Quantity.parse(s).value


def quantity(s: str) -> str:
    """`quantity(string)`: a parse error is a runtime error with ParseQuantity's message."""
    return _message(parse_literal(s))


def is_quantity(s: str) -> bool:
    try:
        parse_literal(s)
    except QuantityError:
        return False
    return True


def sign(q: Any) -> int:
    v = value_of(q)
    return (v > 0) - (v < 0)


def compare_to(a: Any, b: Any) -> int:
    x, y = value_of(a), value_of(b)
    return (x > y) - (x < y)


def is_greater_than(a: Any, b: Any) -> bool:
    return value_of(a) > value_of(b)


def is_less_than(a: Any, b: Any) -> bool:
    return value_of(a) < value_of(b)


def as_approximate_float(q: Any) -> float:
    v = value_of(q)
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _as_int64(v: Fraction) -> int | None:
    if v.denominator != 1 or not _INT64_MIN <= v.numerator <= _INT64_MAX:
        return None
    return v.numerator


def is_integer(q: Any) -> bool:
    """`isInteger`: the value is whole and fits an int64 (Quantity.AsInt64 succeeds)."""
    return _as_int64(value_of(q)) is not None


def as_integer(q: Any) -> int:
    n = _as_int64(value_of(q))
    if n is None:
        raise ValueError("cannot convert value to integer")
    return n


def add(a: Any, b: Any) -> str:
    """`add(Quantity)` and `add(int)`: exact."""
    other = Fraction(b) if isinstance(b, int) else value_of(b)
    return _message(value_of(a) + other)


def sub(a: Any, b: Any) -> str:
    """`sub(Quantity)` and `sub(int)`: exact."""
    other = Fraction(b) if isinstance(b, int) else value_of(b)
    return _message(value_of(a) - other)
