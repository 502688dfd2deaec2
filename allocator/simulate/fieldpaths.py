"""pydantic validation errors in the API server's words: a Kubernetes field path and a message."""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from resourceapi.machinery.jsontypes import json_type


def field_path(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    """A pydantic error location as a Kubernetes field path: `spec.containers[0].resources.requests[cpu]`."""
    out = ""
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(part, int) or origin is dict:
            out += f"[{part}]"
            args = typing.get_args(tp)
            tp = args[-1] if args else Any
        elif isinstance(tp, type) and issubclass(tp, BaseModel):
            out = f"{out}.{part}" if out else part
            info = next((f for name, f in tp.model_fields.items() if part in (f.alias, name)), None)
            tp = info.annotation if info else Any
        else:
            out = f"{out}.{part}" if out else part
            tp = Any
    return out


def _unwrap(tp: Any) -> Any:
    """Strip Optional / Annotated; lists become their item type only when indexed (handled by the caller)."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if args else Any
        else:
            return tp


# pydantic error types that mean "this JSON value has the wrong type", and the JSON type that was expected.
_EXPECTED_TYPES = {
    "string_type": "string",
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "list_type": "array",
}


def error_message(err: Any) -> str:
    """A pydantic error in the webhook's (and the API server's) words: `Required value`, `Invalid value:
    "boolean": must be of type string`; other errors (a bad quantity) keep their own message."""
    if err["type"] == "missing":
        return "Required value"
    expected = _EXPECTED_TYPES.get(err["type"])
    if expected is not None:
        return f'Invalid value: "{json_type(err.get("input"))}": must be of type {expected}'
    msg = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return f'Invalid value: "{value}": {msg}'
    return msg
