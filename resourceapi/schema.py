"""Fields an object has that its API type lacks, derived from the pydantic models (the one schema).

The API server's strict field validation names such fields (`spec.selectors[0].cell`); the models here list
every field of the types whose unknown fields matter to us. A model that sets `free_form = True` is left to
rules of its own (the KEP-6406 requests report an unknown key themselves); `Any` fields and map values of
non-model types are free form.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel


def unknown_fields(model: type[BaseModel], value: Any, path: str = "") -> list[str]:
    """Paths of the fields of `value` that `model` does not declare, in document order."""
    out: list[str] = []
    _walk(model, value, path, out)
    return out


def _walk(model: type[BaseModel], value: Any, path: str, out: list[str]) -> None:
    if not isinstance(value, dict) or getattr(model, "free_form", False):
        return
    fields = _fields_by_alias(model)
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        annotation = fields.get(key)
        if annotation is None:
            if key not in fields:
                out.append(where)
            continue
        _walk_value(annotation, item, where, out)


def _walk_value(annotation: Any, value: Any, path: str, out: list[str]) -> None:
    tp = _unwrap_optional(annotation)
    origin = typing.get_origin(tp)
    if origin is list and isinstance(value, list):
        (item_type,) = typing.get_args(tp) or (Any,)
        for i, item in enumerate(value):
            _walk_value(item_type, item, f"{path}[{i}]", out)
    elif origin is dict and isinstance(value, dict):
        args = typing.get_args(tp)
        item_type = args[1] if len(args) == 2 else Any
        for key, item in value.items():
            _walk_value(item_type, item, f"{path}[{key}]", out)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        _walk(tp, value, path, out)


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    if origin is typing.Annotated:
        return _unwrap_optional(typing.get_args(annotation)[0])
    return annotation


_CACHE: dict[type[BaseModel], dict[str, Any]] = {}


def _fields_by_alias(model: type[BaseModel]) -> dict[str, Any]:
    """API field name -> annotation (None for free-form fields), computed once per model."""
    cached = _CACHE.get(model)
    if cached is None:
        cached = {}
        for name, info in model.model_fields.items():
            annotation = info.annotation
            free = annotation is Any or annotation is None
            cached[info.alias or name] = None if free else annotation
        _CACHE[model] = cached
    return cached
