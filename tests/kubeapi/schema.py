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


def _prune(type_name: str, value: Any, path: str, unknown: list[str]) -> None:
    if type_name in _PRIMITIVES:
        return
    m = _CONTAINER.fullmatch(type_name)
    if m:
        kind, inner = m.group(1), m.group(2)
        if kind == "List" and isinstance(value, list):
            for i, item in enumerate(value):
                _prune(inner, item, f"{path}[{i}]", unknown)
        elif kind == "Dict" and isinstance(value, dict):
            for k, item in value.items():
                _prune(inner, item, f"{path}[{k}]", unknown)
        return
    model = _model(type_name)
    if model is None or not isinstance(value, dict):
        return
    fields = model[0]
    for key in list(value):
        sub = f"{path}.{key}" if path else key
        if key not in fields:
            unknown.append(sub)
            del value[key]
        else:
            _prune(fields[key], value[key], sub, unknown)


def prune(rt: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Drop the fields the 1.37 type does not have (in place); return their paths, in document order."""
    unknown: list[str] = []
    _prune(rt.client_model, obj, "", unknown)
    return unknown
