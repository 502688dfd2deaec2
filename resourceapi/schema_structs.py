"""The field schema (resourceapi/schemas/fields.json) compiled to msgspec Struct types: a proof, in one pass
in C, that an object holds nothing the field-schema walk (resourceapi.apischema) would report.

The walk visits every field in Python, about the cost of parsing the JSON again; nearly every object of a
cluster dump is clean. `proves_clean` converts the object with `msgspec.convert(..., strict=True)` against
Structs that forbid unknown fields and spell the walk's rules exactly:

* a string field takes a string or a number (quantities are either on the wire), never a boolean;
* an integer field takes an integer (not a float, not a boolean), a boolean field a boolean, a number field
  an integer or a float, a free-form field anything;
* `null` is taken anywhere, as if the field were absent, but for a required field (one that is not an
  integer or a boolean), which must hold a value; nothing under a top-level `status` is required.

When the conversion succeeds the walk has nothing to say, so it is skipped; when it fails, for whatever
reason (msgspec also refuses map keys that are not strings, which the walk takes), the walk runs and its
report is the answer. So the fast path never changes a report, only its cost;
tests/resourceapi/test_schema_structs.py checks the two agree on generated objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, ForwardRef, Optional, Union

import msgspec

# The walk's scalar types (resourceapi.apischema._SCALARS) as msgspec annotations.
_SCALARS: dict[str, Any] = {
    "s": Union[str, int, float],  # noqa: UP007 - a runtime type expression for msgspec
    "i": int,
    "b": bool,
    "n": Union[int, float],  # noqa: UP007
    "o": Any,
}
# A required free-form field: any JSON value but null.
_VALUE = Union[dict[str, Any], list[Any], str, int, float, bool]  # noqa: UP007

_REQUIRED, _RELAXED = "required", "relaxed"  # the two variants of a model: below a top-level status, relaxed


class _Compiler:
    def __init__(self, types: dict[str, Any]) -> None:
        self.types = types
        self.structs: dict[tuple[str, str, bool, frozenset[str]], Any] = {}

    def annotation(self, tp: Any, variant: str, required: bool) -> Any:
        if isinstance(tp, str):
            return _VALUE if (tp == "o" and required) else _SCALARS[tp]
        if tp[0] == "m":
            return self.struct(tp[1], variant)
        item: Any = Optional[self.annotation(tp[1], variant, False)]  # noqa: UP045 - null items are skipped
        return list[item] if tp[0] == "l" else dict[str, item]

    def struct(self, name: str, variant: str, top: bool = False, apart: frozenset[str] = frozenset()) -> Any:
        """The Struct of model `name`; `top`: it is an object's root (its `status` is relaxed);
        `apart`: fields of the root taken as they come (the caller proves them apart)."""
        key = (name, variant, top, apart)
        found = self.structs.get(key)
        if found is not None:
            return found
        spec = self.types[name]
        raw: dict[str, Any] = spec["fields"]
        required = set()
        if variant == _REQUIRED:
            required = {k for k in spec["required"] if raw[k] not in ("i", "b")}
        # Recursive types (JSONSchemaProps-like) need the name before the fields: a forward reference.
        ident = f"S{len(self.structs)}"
        self.structs[key] = ForwardRef(ident)
        fields: list[tuple[Any, ...]] = []
        for field_name, tp in raw.items():
            below = _RELAXED if (top and field_name == "status") else variant
            if field_name in apart:
                fields.append((field_name, Any, None))
            elif field_name in required:
                fields.append((field_name, self.annotation(tp, below, True)))
            else:
                fields.append((field_name, Optional[self.annotation(tp, below, False)], None))  # noqa: UP045
        fields.sort(key=len)  # msgspec: required fields (no default) first
        struct = msgspec.defstruct(ident, fields, forbid_unknown_fields=True, module=__name__)
        globals()[ident] = struct  # the forward references above resolve in this module
        self.structs[key] = struct
        return struct


@cache
def _compiler() -> tuple[dict[str, str], _Compiler]:
    from resourceapi.apischema import schema_document  # which imports this module

    doc = schema_document()
    return doc["kinds"], _Compiler(doc["types"])


@cache
def _root(kind_key: str, parts: frozenset[str]) -> Any:
    kinds, compiler = _compiler()
    return compiler.struct(kinds[kind_key], _REQUIRED, top=True, apart=parts)


@cache
def _part(kind_key: str, field_name: str) -> Any:
    kinds, compiler = _compiler()
    tp = compiler.types[kinds[kind_key]]["fields"][field_name]
    return compiler.annotation(tp, _RELAXED if field_name == "status" else _REQUIRED, False)


PROVEN_MAX = 4096  # parts remembered as clean; starts over when full
_PROVEN: set[tuple[str, str, bytes]] = set()


def _converts(value: Any, tp: Any) -> bool:
    try:
        msgspec.convert(value, tp, strict=True)
    except (msgspec.ValidationError, TypeError, OverflowError, RecursionError):
        return False
    return True


def proves_clean(kind_key: str, obj: dict[str, Any], parts: Mapping[str, bytes] | None = None) -> bool:
    """True only if the walk of `obj` (an `apiVersion/kind` in the schema) reports no unknown field and no
    problem. `parts`: top-level fields with the JSON text of their value, as for the walk (the pods of one
    ReplicaSet share their spec and status); each distinct one is proved once, the rest of the object
    every time."""
    if not parts:
        return _converts(obj, _root(kind_key, frozenset()))
    if not _converts(obj, _root(kind_key, frozenset(parts))):
        return False
    for name, text in parts.items():
        memo = (kind_key, name, text)
        if memo in _PROVEN:
            continue
        if not _converts(obj[name], _part(kind_key, name)):
            return False
        if len(_PROVEN) >= PROVEN_MAX:
            _PROVEN.clear()
        _PROVEN.add(memo)
    return True
