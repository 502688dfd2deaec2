"""Bad values that apimachinery renders with `json.Marshal` (a nil value, a struct): shown unquoted."""

from __future__ import annotations

from dataclasses import dataclass

from resourceapi.quantity import Format, Quantity
from resourceapi.rawjson import compact_bytes


@dataclass(frozen=True)
class GoJSON:
    """A bad value rendered as Go's `json.Marshal` renders it (`null`, `{"name":"a"}`), not as a string."""

    text: str

    def __str__(self) -> str:
        return self.text


NULL = GoJSON("null")


def go_json(value: object) -> GoJSON:
    """`value` (JSON-shaped, keys in the Go struct's field order) as `json.Marshal` renders it: compact,
    with `<`, `>` and `&` escaped."""
    return GoJSON(compact_bytes(value).decode("utf-8"))


_SUFFIX_OF_EXPONENT = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64_MAX = 2**63 - 1


def kept_quantity_text(text: str) -> bool:
    """Whether `resource.ParseQuantity` keeps `text` as the quantity's string (it is already canonical: a
    multiple-of-3 decimal scale with no trailing `000` and no leading zero, or a binary suffix on an odd-ish
    number), so that `json.Marshal` shows it as written (`100E-3` stays `100E-3`)."""
    if text == "0":
        return True
    body = text[1:] if text[:1] in "+-" else text
    i = 0
    while i < len(body) and body[i] == "0":
        i += 1
    j = i
    while j < len(body) and body[j].isdigit():
        j += 1
    num = body[i:j] or "0"
    denom = ""
    if j < len(body) and body[j] == ".":
        k = j + 1
        while k < len(body) and body[k].isdigit():
            k += 1
        denom, j = body[j + 1 : k], k
    suffix = body[j:]
    if suffix in _DECIMAL_SUFFIXES:
        decimal, exponent = True, _DECIMAL_SUFFIXES[suffix]
    elif suffix in _BINARY_SUFFIXES:
        decimal, exponent = False, _BINARY_SUFFIXES[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        try:
            decimal, exponent = True, int(suffix[1:])
        except ValueError:
            return False
    else:
        return False
    if decimal:
        scale, mantissa = exponent, 1
        precision = 18 - (len(num) + len(denom))
    elif not denom:
        scale, mantissa = 0, 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    else:
        return False
    scale -= len(denom)
    if precision < 0 or scale < -9:
        return False
    shifted = num + denom
    value = int(shifted)
    if value > _INT64_MAX or value * mantissa > _INT64_MAX:
        return False
    if decimal:
        return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return exponent % 10 == 0 and value & 0x07 != 0


def quantity_text(q: Quantity) -> str:
    """`Quantity.String()` as apimachinery v0.37 builds it: past `E` (or below `n`) a decimal SI value and
    past `Ei` a binary one lose their suffix (`1000000E` prints `1`); `str(q)` follows newer upstream."""
    v = q.value
    if v == 0:
        return "0"
    fmt = q.format
    if fmt is Format.BINARY_SI:
        if -1024 < v < 1024 or v.denominator != 1:
            fmt = Format.DECIMAL_SI
        else:
            n, power = v.numerator, 0
            while n % 1024 == 0:
                n //= 1024
                power += 1
            return f"{n}{('', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei')[power] if power <= 6 else ''}"
    exponent = 0
    while v.denominator != 1:  # a quantity is a whole number of nanos: this ends
        v *= 10
        exponent -= 1
    n = v.numerator
    while n % 10 == 0:
        n //= 10
        exponent += 1
    r = exponent % 3
    if r:
        n *= 10**r
        exponent -= r
    if fmt is Format.DECIMAL_SI:
        return f"{n}{_SUFFIX_OF_EXPONENT.get(exponent, '')}"
    return str(n) if exponent == 0 else f"{n}e{exponent}"
