"""One validated model per distinct value of a small sub-object that a cluster repeats on every device.

A 5,000-node dump holds 400,000 device attributes and 80,000 capacities, nearly all of them one of a few
dozen values (`{"string": "Hopper"}`, `{"value": "4", "requestPolicy": {...}}`); validating each one again
is most of the cost of modelling the ResourceSlices, and keeping each one apart most of their memory.
`interned` validates a map's values once per distinct JSON text and shares the model, so it suits models
that are never modified after validation (the device attribute and capacity models); `interned_items` does
the same for a list's items (owner references).

What is validated, the result and the errors (with their locations) are exactly those of the plain map: a
value not seen before is validated as the plain map validates each value (its model's `model_validate`),
only values that validated are remembered, and a map with any value that fails goes to the plain map's
validator, whose errors are the answer.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

MAX_ENTRIES = 1 << 16  # per map type; the pool starts over when full (a bound, never a correctness matter)


class _Pool:
    """Validated values of one map type, by the JSON text of their input; an object of one scalar field
    (`{"string": "Hopper"}`, `{"int": 3}`) by the field, the value and its class (the class tells `1` from
    `true`, which compare equal)."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.models: dict[Hashable, Any] = {}
        self.validate = model.model_validate  # what the plain map does to each of its values

    def __call__(self, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if value.__class__ is not dict or not value:
            return handler(value)
        models = self.models
        out: dict[str, Any] = {}
        for name, raw in value.items():
            if name.__class__ is not str:
                return handler(value)  # the plain map's error
            key: Hashable | None = None
            if raw.__class__ is dict:
                if len(raw) == 1:  # the common shape, `{"string": "Hopper"}`: keyed without encoding
                    ((field, item),) = raw.items()
                    kind = item.__class__
                    key = (field, kind, item) if kind is str or kind is int or kind is bool else json_key(raw)
                else:
                    key = json_key(raw)
            model = models.get(key) if key is not None else None
            if model is None:
                model = self.remember(raw, key)
                if model is None:
                    return handler(value)  # raises with the plain map's errors and locations
            out[name] = model
        return out

    def remember(self, raw: Any, key: Hashable | None) -> Any:
        """A value not seen before, validated as the plain container validates each of its values, and kept
        under `key` (if it has one); None if it fails (the container's handler then gives the errors)."""
        try:
            model = self.validate(raw)
        except ValidationError:
            return None
        if key is not None:
            if len(self.models) >= MAX_ENTRIES:
                self.models.clear()
            self.models[key] = model
        return model


class _ListPool(_Pool):
    """The same for the items of a list (the owner references that the pods of one ReplicaSet repeat)."""

    def __call__(self, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if value.__class__ is not list or not value:
            return handler(value)
        models = self.models
        out: list[Any] = []
        for raw in value:
            key = json_key(raw) if raw.__class__ is dict else None
            model = models.get(key) if key is not None else None
            if model is None:
                model = self.remember(raw, key)
                if model is None:
                    return handler(value)  # raises with the plain list's errors and locations
            out.append(model)
        return out


def json_key(raw: Any) -> bytes | None:
    """The JSON text of a raw value, a key that tells apart every two values a check could tell apart (`1`,
    `1.0` and `true` differ); None when it has none: not JSON (an integer beyond 64 bits, a key that is not a
    string), or holding NaN or an infinity, which orjson writes as `null` (a text with `null` is looked at
    again for them: a pending pod's status holds `"lastProbeTime": null`)."""
    try:
        text = orjson.dumps(raw)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return None if b"null" in text and not _finite(raw) else text


def _finite(raw: Any) -> bool:
    """No float in `raw` is NaN or infinite."""
    kind = raw.__class__
    if kind is float:
        return math.isfinite(raw)
    if kind is dict:
        return all(_finite(v) for v in raw.values())
    if kind is list:
        return all(_finite(v) for v in raw)
    return True


def interned(model: type[BaseModel]) -> WrapValidator:
    """The annotation: `Annotated[dict[str, Model], interned(Model)]`, one pool per use."""
    return WrapValidator(_Pool(model))


def interned_items(model: type[BaseModel]) -> WrapValidator:
    """The annotation: `Annotated[list[Model], interned_items(Model)]`, one pool per use (the list itself is
    the object's own; its items are shared)."""
    return WrapValidator(_ListPool(model))
