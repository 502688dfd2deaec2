"""A pytest plugin that records the objects the project's validation tests judge, so the differential can
send them to the real API server too:

    DRA_DIFFERENTIAL_RECORD=out.jsonl pytest -p differential.record tests/webhook ...

Every DeviceClass the webhook's validation judges on create (`validate_device_class`, old object None) and
every ResourceClaim, ResourceClaimTemplate and ResourceSlice simulate's input checks read (`check_fields`) is
written once, as `{"test": node id, "object": ...}`. tests/differential/corpus.py reads the result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

KINDS = ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
_state: dict[str, Any] = {"test": "", "seen": set(), "out": None}


def _write(obj: Any) -> None:
    out = _state["out"]
    if out is None or not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        return
    try:
        text = json.dumps(obj, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return
    if text in _state["seen"]:
        return
    _state["seen"].add(text)
    out.write(json.dumps({"test": _state["test"], "object": obj}, sort_keys=True) + "\n")


def _wrap_class_validation(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(obj: Any, old: Any, *args: Any, **kwargs: Any) -> Any:
        if old is None:
            _write(obj)
        return fn(obj, old, *args, **kwargs)

    return wrapper


def _wrap_check_fields(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(api_version: str, kind: str, obj: Any, *args: Any, **kwargs: Any) -> Any:
        _write(obj)
        return fn(api_version, kind, obj, *args, **kwargs)

    return wrapper


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get("DRA_DIFFERENTIAL_RECORD")
    if not path:
        return
    import allocator.simulate.inputs as inputs
    import webhook.deviceclass.admission as admission
    import webhook.deviceclass.validation as validation

    _state["out"] = open(path, "a")  # noqa: SIM115 - closed in pytest_unconfigure
    wrapped = _wrap_class_validation(validation.validate_device_class)
    validation.validate_device_class = wrapped  # type: ignore[assignment]
    admission.validate_device_class = wrapped  # type: ignore[assignment]
    inputs.check_fields = _wrap_check_fields(inputs.check_fields)  # type: ignore[assignment]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    _state["test"] = item.nodeid
    return (yield)


def pytest_unconfigure(config: pytest.Config) -> None:
    out = _state["out"]
    if out is not None:
        out.close()
        _state["out"] = None
