"""Read-only accessors for the parts of a decoded DeviceClass (a JSON dict) that admission looks at.

Each returns an empty mapping (or "") when the part is absent or of the wrong JSON type, so callers never
have to type-check before reading; reporting a wrong type is validation's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a JSON object, else an empty mapping."""
    return value if isinstance(value, dict) else {}


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
