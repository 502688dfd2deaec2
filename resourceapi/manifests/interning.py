"""One validated model per distinct value of a small sub-object that a cluster repeats on every device.

A 5,000-node dump holds 80,000 device capacities, nearly all of them one of a few values (`{"value": "4",
"requestPolicy": {...}}`); validating and keeping each one apart costs time and memory (what the pools are
worth end to end: docs/internals.md, "simulate on big dumps"). `interned` validates a map's values once per
distinct JSON text and shares the model, so it suits models that are never modified after validation (the
device capacity model); with `whole`, equal maps are shared too (one lookup per device). `interned_items` does
the same for a list's items (owner references). `raw_objects` keeps a map of objects as it was read (device
attributes: resourceapi.api.resource_v1.AttributeMap).

What is validated, the result and the errors (with their locations) are exactly those of the plain map: a
value not seen before is validated as the plain map validates each value (its model's `model_validate`),
only values that validated are remembered, and a map with any value that fails goes to the plain map's
validator, whose errors are the answer."""

from __future__ import annotations

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


class _WholeMapPool(_Pool):
    """The same, and whole maps too: the devices of a cluster's GPUs advertise equal capacity maps (their
    attribute maps differ, by the uuid at least), so the map itself is validated once per distinct JSON
    text and shared (never modify one): one lookup per device instead of one per entry."""

    def __init__(self, model: type[BaseModel]) -> None:
        super().__init__(model)
        self.maps: dict[bytes, dict[str, Any]] = {}

    def __call__(self, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if value.__class__ is not dict or not value:
            return handler(value)
        key = json_key(value)
        if key is None:
            return super().__call__(value, handler)
        out = self.maps.get(key)
        if out is None:
            out = super().__call__(value, handler)  # raises with the plain map's errors
            if len(self.maps) >= MAX_ENTRIES:
                self.maps.clear()
            self.maps[key] = out
        return out


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


def json_key(raw: Any, finite: bool = False) -> bytes | None:
    """The JSON text of a raw value, a key that tells apart every two values a check could tell apart (`1`,
    `1.0` and `true` differ); None when it has none: not JSON (an integer beyond 64 bits, a key that is not a
    string), or holding NaN or an infinity, which orjson writes as `null` (a text with `null` is looked at
    again for them: a pending pod's status holds `"lastProbeTime": null`), unless `finite` says the value
    holds none (resourceapi.manifests.documents.Document.finite: its reader saw every number) and holds
    lists, not
    tuples."""
    try:
        text = orjson.dumps(raw)
    except (TypeError, orjson.JSONEncodeError):
        return None
    # NaN and the infinities read back as None, so the text is not the value's: compared in C (a walk in
    # Python cost more than the encoding); a tuple, which reads back as a list, is then not shared either
    return None if not finite and b"null" in text and orjson.loads(text) != raw else text


def interned(model: type[BaseModel], whole: bool = False) -> WrapValidator:
    """The annotation: `Annotated[dict[str, Model], interned(Model)]`, one pool per use; `whole`: the maps
    themselves are shared too (for maps that repeat whole, as device capacities do)."""
    return WrapValidator(_WholeMapPool(model) if whole else _Pool(model))


def _raw_objects(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A map of string to object, its objects kept as they are (no model per object: the map is a copy, the
    model's own, and its values are the input's objects); anything else goes to the plain
    `dict[str, dict[str, Any]]` validator, whose errors and locations are the answer."""
    if value.__class__ is dict and set(map(type, value)) <= _STR and set(map(type, value.values())) <= _DICT:
        return dict(value)
    return handler(value)


_STR = {str}
_DICT = {dict}


def raw_objects() -> WrapValidator:
    """The annotation: `Annotated[dict[str, dict[str, Any]], raw_objects()]`."""
    return WrapValidator(_raw_objects)


def interned_items(model: type[BaseModel]) -> WrapValidator:
    """The annotation: `Annotated[list[Model], interned_items(Model)]`, one pool per use (the list itself is
    the object's own; its items are shared)."""
    return WrapValidator(_ListPool(model))
