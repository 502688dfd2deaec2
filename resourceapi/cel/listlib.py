"""The Kubernetes CEL lists library, 1.37's version (apiserver `pkg/cel/library/lists.go`).

`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on evaluation-time lists (Python lists). Equality
is CEL's (numbers across int/double compare by value; a bool equals only a bool); `includes` lives in env.py.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from resourceapi.machinery.quantity import MAX_INT64 as _INT64_MAX
from resourceapi.machinery.quantity import MIN_INT64 as _INT64_MIN


def same(a: Any, b: Any) -> bool:
    """CEL `==` on runtime values: a bool equals only a bool; numbers compare by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    try:
        return bool(a == b)
    except TypeError:
        return False


def is_sorted(items: list[Any]) -> bool:
    return all(not items[i] > items[i + 1] for i in range(len(items) - 1))


def _summer(zero: Any) -> Callable[[list[Any]], Any]:
    def total(items: list[Any]) -> Any:
        acc = zero
        for item in items:
            acc = item if acc is None else acc + item
            if isinstance(acc, int) and not _INT64_MIN <= acc <= _INT64_MAX:
                raise ValueError("integer overflow")
        return 0 if acc is None else acc

    return total


sum_any = _summer(None)  # the element type is known only at runtime: an empty list sums to int 0
sum_int = _summer(0)
sum_double = _summer(0.0)
sum_duration = _summer(datetime.timedelta(0))


def list_min(items: list[Any]) -> Any:
    if not items:
        raise ValueError("min called on empty list")
    return min(items)


def list_max(items: list[Any]) -> Any:
    if not items:
        raise ValueError("max called on empty list")
    return max(items)


def index_of(items: list[Any], value: Any) -> int:
    return next((i for i, item in enumerate(items) if same(item, value)), -1)


def last_index_of(items: list[Any], value: Any) -> int:
    return next((i for i in range(len(items) - 1, -1, -1) if same(items[i], value)), -1)
