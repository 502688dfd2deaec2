"""Read-only accessors for decoded JSON objects (DeviceClasses, claims, slices: JSON dicts), as admission and
validation read them.

Each returns an empty mapping, list or "" (Go's zero value) when the part is absent or of the wrong JSON type,
so callers never have to type-check before reading; reporting a wrong type is the decode stage's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a JSON object, else an empty mapping."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str:
    """`value` if it is a JSON string, else ""."""
    return value if isinstance(value, str) else ""


def text_at(obj: Mapping[str, Any], key: str) -> str:
    """`obj[key]` if it is a JSON string, else ""."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def strings(value: Any) -> list[str]:
    """The strings of a JSON array (anything else: none)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def metadata_of(obj: Any) -> Mapping[str, Any]:
    """`metadata` of an object (None or a non-object: empty)."""
    return mapping(obj.get("metadata")) if isinstance(obj, dict) else {}


def spec_of(obj: Any) -> Mapping[str, Any]:
    """`spec` of an object (None or a non-object: empty)."""
    return mapping(obj.get("spec")) if isinstance(obj, dict) else {}


def annotations_of(obj: Any) -> Mapping[str, Any]:
    """`metadata.annotations` of an object (absent or a non-object: empty)."""
    return mapping(metadata_of(obj).get("annotations"))


def display_name(obj: Any) -> str:
    """The object's name, or its generateName prefix when the name is not assigned yet ("" when neither is a
    non-empty string: a wrong type is validation's to report, not a name to show)."""
    meta = metadata_of(obj)
    for key in ("name", "generateName"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def parse_time(value: Any) -> datetime | None:
    """A metav1.Time (RFC 3339, e.g. `creationTimestamp`) as an aware datetime, UTC when it names no zone;
    None when absent, not a string, or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
