"""One validated model per distinct value of a small sub-object that a cluster repeats on every device.

A 5,000-node dump holds 400,000 device attributes and 80,000 capacities, nearly all of them one of a few
dozen values (`{"string": "Hopper"}`, `{"value": "4", "requestPolicy": {...}}`); validating each one again
is most of the cost of modelling the ResourceSlices, and keeping each one apart most of their memory.
`Interned` validates a map's values once per distinct JSON text and shares the model, so it suits models
that are never modified after validation (the device attribute and capacity models).

What is validated, the result and the errors (with their locations) are exactly those of the plain map: a
value not seen before goes through the plain validator, and only values that validated are remembered.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidatorFunctionWrapHandler, WrapValidator

MAX_ENTRIES = 1 << 16  # per map type; the pool starts over when full (a bound, never a correctness matter)


class _Pool:
    """Validated values of one map type, by the JSON text of their input."""

    def __init__(self) -> None:
        self.models: dict[bytes, Any] = {}

    def __call__(self, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if value.__class__ is not dict or not value:
            return handler(value)
        models = self.models
        out: dict[str, Any] = {}
        keys: dict[str, bytes | None] = {}
        missing: dict[Any, Any] | None = None
        for name, raw in value.items():
            key = _key(raw) if name.__class__ is str else None
            model = models.get(key) if key is not None else None
            if model is None:
                if missing is None:
                    missing = {}
                missing[name] = raw
                keys[name] = key
            out[name] = model
        if missing is None:
            return out
        validated = handler(missing)  # raises with the plain map's errors and locations
        if len(models) + len(validated) > MAX_ENTRIES:
            models.clear()
        for name, model in validated.items():
            key = keys.get(name)
            if key is not None:
                models[key] = model
        if len(validated) == len(value):
            return validated
        return {name: validated[name] if name in missing else model for name, model in out.items()}


def _key(raw: Any) -> bytes | None:
    """The JSON text of a raw object (`json_key`), None for anything but an object."""
    if raw.__class__ is not dict:
        return None
    return json_key(raw)


def json_key(raw: Any) -> bytes | None:
    """The JSON text of a raw value, a key that tells apart every two values a check could tell apart (`1`,
    `1.0` and `true` differ); None when it has none: not JSON (an integer beyond 64 bits, a key that is not a
    string), or holding `null`, which orjson also writes for NaN and infinities."""
    try:
        text = orjson.dumps(raw)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return None if b"null" in text else text


def interned() -> WrapValidator:
    """The annotation: `Annotated[dict[str, Model], interned()]`, one pool per use."""
    return WrapValidator(_Pool())
