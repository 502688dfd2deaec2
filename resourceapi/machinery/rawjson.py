"""Raw JSON as Go's encoding/json sees it: byte length after re-serialization, and syntax-error text.

Upstream measures `runtime.RawExtension` bytes (the apiserver's compact, HTML-escaped re-encoding) and reports
`json.Unmarshal` errors verbatim; Python's decoder words its errors differently, so the common ones are
translated to Go's wording (`invalid character 'x' looking for beginning of value`).
"""

from __future__ import annotations

import json
from typing import Any

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


class GoJSONError(ValueError):
    """A JSON syntax error worded as Go's encoding/json words it."""


def compact_bytes(value: Any) -> bytes:
    """The value as the apiserver re-serializes it: compact, UTF-8, with `<`, `>`, `&` escaped.

    Raises ValueError for values JSON cannot carry (NaN, infinities).
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if any(c in text for c in _HTML_ESCAPES):
        text = "".join(_HTML_ESCAPES.get(c, c) for c in text)
    return text.encode("utf-8")


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def loads(text: str) -> Any:
    """Parse like Go's `json.Unmarshal`; raises GoJSONError with Go's message on a syntax error."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise GoJSONError(_go_message(text, exc.msg, exc.pos)) from None
    except ValueError as exc:  # NaN / Infinity: not JSON for Go
        pos = text.find(str(exc))
        raise GoJSONError(_go_message(text, "Expecting value", max(pos, 0))) from None


def _quote_char(c: str) -> str:
    """Go's `quoteChar`: `'x'`, with `'` and `"` special-cased and the rest as strconv.Quote escapes it."""
    if c == "'":
        return "'\\''"
    if c == '"':
        return "'\"'"
    quoted = json.dumps(c)
    return "'" + quoted[1:-1] + "'"


def _innermost_container(text: str, pos: int) -> str:
    """`{` or `[` enclosing `pos` (strings skipped), to word a missing-comma error as Go does."""
    stack: list[str] = []
    in_string = escaped = False
    for c in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            stack.append(c)
        elif c in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def _go_message(text: str, msg: str, pos: int) -> str:
    if msg.startswith("Unterminated string") or pos >= len(text):
        return "unexpected end of JSON input"
    c = _quote_char(text[pos])
    if msg.startswith("Expecting value"):
        return f"invalid character {c} looking for beginning of value"
    if msg.startswith("Extra data"):
        return f"invalid character {c} after top-level value"
    if msg.startswith("Expecting property name"):
        return f"invalid character {c} looking for beginning of object key string"
    if msg.startswith("Expecting ':'"):
        return f"invalid character {c} after object key"
    if msg.startswith("Expecting ','"):
        where = "object key:value pair" if _innermost_container(text, pos) == "{" else "array element"
        return f"invalid character {c} after {where}"
    if msg.startswith("Invalid control character"):
        return f"invalid character {c} in string literal"
    if msg.startswith("Invalid \\escape"):
        bad = _quote_char(text[pos + 1]) if pos + 1 < len(text) else c
        return f"invalid character {bad} in string escape code"
    return msg
