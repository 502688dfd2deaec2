"""JSON type names of decoded values, for messages that say what was found instead of what was expected."""

from __future__ import annotations

from typing import Any


def json_type(value: Any) -> str:
    """`null`, `boolean`, `number`, `string`, `array` or `object`; other values: their Python type name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


_PHRASES = {
    "array": "a list",
    "object": "an object",
    "string": "a string",
    "boolean": "a boolean",
    "number": "a number",
}


def json_type_phrase(value: Any) -> str:
    """The type in words, as the manifest reader's messages say it (`a list`, `a string`, ...); other values
    as `json_type` names them."""
    kind = json_type(value)
    return _PHRASES.get(kind, kind)
