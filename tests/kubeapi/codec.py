"""JSON in and out of the TEST DOUBLE, and copies of stored objects, through orjson: `copy.deepcopy` and the
standard `json` module were most of the double's CPU per request.

Everything the double stores or sends is plain JSON data (dicts, lists, str, int, float, bool, None), so a
JSON round trip is an exact copy. Anything else (a datetime or a tuple from a test's seed, an integer beyond
64 bits) falls back to the standard library, which keeps its behavior for those values.
"""

from __future__ import annotations

import copy
import json
from typing import Any, TypeVar, cast

import orjson

# Values orjson would silently turn into something else (datetime -> str, dataclass -> dict) raise instead.
T = TypeVar("T")
_STRICT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def clone(value: T) -> T:
    """A deep copy of JSON data."""
    if isinstance(value, (dict, list)):
        try:
            return cast(T, orjson.loads(orjson.dumps(value, option=_STRICT)))
        except TypeError:
            pass
    return copy.deepcopy(value)


def dumps(value: Any) -> bytes:
    """Compact JSON (the standard library's for what orjson refuses)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    """Parsed JSON; raises ValueError with the standard library's message when it is not valid JSON (the
    standard library also reads what orjson refuses: NaN, integers beyond 64 bits)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
