"""Bad values that apimachinery prints with `json.Marshal`: a nil (`null`), a list, a struct.

`field.Error.ErrorBody` prints strings quoted, numbers and booleans bare, and anything else as its JSON.
`GoJSON` carries that JSON text, so `render_value` prints it as it is. A struct prints with its Go field
names when the type has no json tags (the internal types of pkg/apis/..., which handwritten rules report),
and with its json tags and `omitempty` when it is a versioned type (resource.k8s.io/v1, which declarative
rules report). Map keys are sorted, as Go sorts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from resourceapi.machinery.goquantity import quantity_text
from resourceapi.machinery.rawjson import compact_bytes


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
