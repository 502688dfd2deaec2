"""Bad values that apimachinery prints with `json.Marshal`: a nil (`null`), a list, a struct.

`field.Error.ErrorBody` prints strings quoted, numbers and booleans bare, and anything else as its JSON.
`GoJSON` carries that JSON text, so `render_value` prints it as it is. A struct prints with its Go field
names when the type has no json tags (the internal types of pkg/apis/..., which handwritten rules report),
and with its json tags and `omitempty` when it is a versioned type (resource.k8s.io/v1, which declarative
rules report). Map keys are sorted, as Go sorts them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from resourceapi.quantity import QuantityError, coerce_quantity
from resourceapi.rawjson import compact_bytes


class GoJSON:
    """A bad value that prints as this JSON text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"GoJSON({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoJSON) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


NULL = GoJSON("null")


def marshal(value: Any) -> GoJSON:
    """`json.Marshal(value)` of plain JSON data (dict order as given: build structs in field order)."""
    try:
        return GoJSON(compact_bytes(value).decode("utf-8", errors="replace"))
    except (TypeError, ValueError):
        return GoJSON(str(value))


def quantity_text(raw: Any) -> str:
    """A decoded quantity as `Quantity.String()` (and its JSON) prints it: the text as written when
    `ParseQuantity` keeps it (`_kept`), else the canonical form; the raw text when it does not parse (the
    decode stage refuses such a body first)."""
    try:
        q = coerce_quantity(raw)
    except (QuantityError, TypeError, ValueError):
        return str(raw)
    text = raw.strip() if isinstance(raw, str) else json.dumps(raw)
    return text if _kept(text) else str(q)


_NUMBER = re.compile(r"([+-]?)0*([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_DECIMAL_EXPONENTS = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_EXPONENT = re.compile(r"[eE]([-+]?[0-9]+)")
_MAX_INT64 = (1 << 63) - 1
_MAX_INT64_FACTORS = 18


def _kept(text: str) -> bool:
    """Whether `ParseQuantity` keeps the string it parsed (its fast path, "if the number is in canonical
    form, reuse the string"), which `String()` then returns as it is: `1E-3`, `+1` and `5.` print so."""
    if text == "0":
        return True
    m = _NUMBER.fullmatch(text)
    if m is None:
        return False
    num, denom, suffix = m.group(2) or "0", m.group(3) or "", m.group(4)
    if suffix in _DECIMAL_EXPONENTS or _EXPONENT.fullmatch(suffix):
        binary = False
        exp = m2.group(1) if (m2 := _EXPONENT.fullmatch(suffix)) else None
        scale = int(exp) if exp is not None else _DECIMAL_EXPONENTS[suffix]
        mantissa = 1
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif suffix in _BINARY_EXPONENTS:
        binary = True
        exponent = _BINARY_EXPONENTS[suffix]
        scale = 0
        if denom:
            return False
        mantissa = 1 << exponent
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
    else:
        return False
    if precision < 0:
        return False
    scale -= len(denom)
    if scale < -9:
        return False
    shifted = num + denom
    value = int(shifted)
    if value > _MAX_INT64 or value * mantissa > _MAX_INT64:
        return False
    if binary:
        return value & 0x07 != 0  # every binary suffix is a multiple of 2^10
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


def sorted_map(value: Any, item: Any) -> dict[str, Any]:
    """A Go map as json.Marshal writes it: keys sorted, each value converted by `item`."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): item(value[k]) for k in sorted(value, key=str)}


def counters_json(counters: Any) -> dict[str, Any]:
    """`map[string]Counter`: each `{"value": "<quantity>"}`."""
    return sorted_map(
        counters, lambda c: {"value": quantity_text(c.get("value", "0") if isinstance(c, Mapping) else "0")}
    )
