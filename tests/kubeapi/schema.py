"""Pruning of unknown fields, with the 1.37 schemas taken from the `kubernetes` client's models
(`openapi_types` and `attribute_map` of kubernetes 37.0.2, generated from the 1.37 OpenAPI).

kube-apiserver decodes a built-in type into its Go struct, so any field the struct lacks is dropped; with
`fieldValidation=Strict` the request fails (`strict decoding error: unknown field "spec.x"`), with `Warn`
(the server's default) each dropped field is a warning, with `Ignore` it is silent
(`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`, KEP-2885).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .resources import ResourceType

_CONTAINER = re.compile(r"(List|Dict)\[(?:str, )?(.+)\]")
_PRIMITIVES = {"str", "int", "bool", "float", "datetime", "date", "bytes", "object", "Dict[str, object]"}


@functools.cache
def _model(name: str) -> tuple[dict[str, str], dict[str, str]] | None:
    """JSON field name -> type string, for a client model class name (None: not a model)."""
    from kubernetes import client

    cls = getattr(client, name, None)
    types = getattr(cls, "openapi_types", None)
    amap = getattr(cls, "attribute_map", None)
    if not isinstance(types, dict) or not isinstance(amap, dict):
        return None
    return {amap[k]: v for k, v in types.items()}, {}


_PRIMITIVE, _LIST, _DICT, _MODEL = 0, 1, 2, 3
Path = tuple[Any, str] | None  # (parent path, "key" | "[i]"), joined only for an unknown field


@functools.cache
def _shape(type_name: str) -> tuple[int, str, dict[str, str]]:
    """What a type string is: a primitive, a list or map of an inner type, or a model with its fields."""
    if type_name in _PRIMITIVES:
        return _PRIMITIVE, "", {}
    m = _CONTAINER.fullmatch(type_name)
    if m:
        return (_LIST if m.group(1) == "List" else _DICT), m.group(2), {}
    model = _model(type_name)
    if model is None:
        return _PRIMITIVE, "", {}
    return _MODEL, "", model[0]


def _path(path: Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, segment = path
        parts.append(segment)
    out = ""
    for segment in reversed(parts):
        out += segment if segment.startswith("[") or not out else "." + segment
    return out


def _prune(type_name: str, value: Any, path: Path, unknown: list[str]) -> None:
    kind, inner, fields = _shape(type_name)
    if kind == _PRIMITIVE:
        return
    if kind == _LIST:
        if isinstance(value, list):
            for i, item in enumerate(value):
                _prune(inner, item, (path, f"[{i}]"), unknown)
        return
    if kind == _DICT:
        if isinstance(value, dict):
            for k, item in value.items():
                _prune(inner, item, (path, f"[{k}]"), unknown)
        return
    if not isinstance(value, dict):
        return
    for key in list(value):
        field = fields.get(key)
        if field is None:
            unknown.append(_path((path, key)))
            del value[key]
        else:
            _prune(field, value[key], (path, key), unknown)


def prune(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Drop the fields the 1.37 type does not have (in place); return their paths, in document order."""
    unknown: list[str] = []
    _prune(rt.client_model, obj, None, unknown)
    return unknown
