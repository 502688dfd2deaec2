"""Field errors with apimachinery's exact rendering (`k8s.io/apimachinery/pkg/util/validation/field`).

An error renders as `<path>: <Type>[: <badValue>][: <detail>]`; the StatusCause carries the type name
(`FieldValueInvalid` ...), the field path and the body without the path.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


class ErrorType(enum.Enum):
    """apimachinery's `field.ErrorType`: value is (StatusCause type, rendered text)."""

    NOT_FOUND = ("FieldValueNotFound", "Not found")
    REQUIRED = ("FieldValueRequired", "Required value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    INTERNAL = ("InternalError", "Internal error")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")

    @property
    def cause_type(self) -> str:
        return self.value[0]

    @property
    def text(self) -> str:
        return self.value[1]


class _Omit:
    """Marker for a bad value that is not rendered (`field.OmitValueType`)."""

    def __repr__(self) -> str:
        return "<omitted>"


OMIT = _Omit()

# Types whose bad value is never rendered (apimachinery ErrorBody).
_NO_VALUE_TYPES = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


def go_quote(s: str) -> str:
    """Go's `strconv.Quote` (`%q`): printable runes kept, the rest escaped as Go escapes them."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append(
                {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[
                    ch
                ]
            )
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def render_value(value: Any) -> str:
    """How apimachinery's `ErrorBody` prints a bad value: %v for ints, floats and booleans, %q for strings,
    anything else as its `json.Marshal` (a nil is `null`, unquoted; validation/gojson.py's `GoJSON` carries
    that text for lists and structs)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    return str(value)


@dataclass(frozen=True)
class Path:
    """A field path such as `spec.selectors[2].cel.expression`, built like apimachinery's `field.Path`."""

    text: str = ""

    @staticmethod
    def root(name: str) -> Path:
        return Path(name)

    def child(self, name: str, *more: str) -> Path:
        text = self.text
        for part in (name, *more):
            text = f"{text}.{part}" if text else part
        return Path(text)

    def index(self, i: int) -> Path:
        return Path(f"{self.text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self.text}[{k}]")

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class FieldError:
    """One validation error (apimachinery `field.Error`)."""

    type: ErrorType
    field: str
    bad_value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        """`ErrorBody()`: the text without the field path; this is a StatusCause's message."""
        if self.type in _NO_VALUE_TYPES or self.bad_value is OMIT:
            s = self.type.text
        else:
            s = f"{self.type.text}: {render_value(self.bad_value)}"
        if self.detail:
            s += f": {self.detail}"
        return s

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        """The metav1.StatusCause for this error."""
        return {"reason": self.type.cause_type, "field": self.field, "message": self.body()}


def required(path: Path | str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, str(path), OMIT, detail)


def invalid(path: Path | str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, str(path), value, detail)


def forbidden(path: Path | str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, str(path), OMIT, detail)


def too_long(path: Path | str, max_length: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, str(path), OMIT, f"may not be more than {max_length} bytes")


def too_many(path: Path | str, actual: int, max_items: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, str(path), actual, f"must have at most {max_items} items")


def duplicate(path: Path | str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, str(path), value)


def not_supported(path: Path | str, value: str, supported: Sequence[str]) -> FieldError:
    """`field.NotSupported`: the value, then `supported values: "a", "b"` in the order given."""
    return FieldError(
        ErrorType.NOT_SUPPORTED,
        str(path),
        value,
        "supported values: " + ", ".join(go_quote(v) for v in supported),
    )


def internal(path: Path | str, detail: str) -> FieldError:
    return FieldError(ErrorType.INTERNAL, str(path), OMIT, detail)


@dataclass
class ErrorList:
    """An ordered list of field errors (`field.ErrorList`)."""

    errors: list[FieldError] = field(default_factory=list)

    def add(self, *errs: FieldError) -> None:
        self.errors.extend(errs)

    def extend(self, errs: Iterable[FieldError]) -> None:
        self.errors.extend(errs)

    def __iter__(self) -> Iterator[FieldError]:
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def deduplicated(self) -> list[FieldError]:
        """Errors with identical text removed, first occurrence kept (`ErrorList.ToAggregate`)."""
        seen: set[str] = set()
        out: list[FieldError] = []
        for e in self.errors:
            s = str(e)
            if s not in seen:
                seen.add(s)
                out.append(e)
        return out

    def aggregate_message(self) -> str:
        """`utilerrors.Aggregate.Error()`: one message bare, several as `[a, b]`."""
        msgs = [str(e) for e in self.deduplicated()]
        if not msgs:
            return ""
        if len(msgs) == 1:
            return msgs[0]
        return "[" + ", ".join(msgs) + "]"
