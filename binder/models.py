"""Informer JSON to the API models the allocator core reads; an object that does not parse is skipped with a
warning naming it (the binder keeps running on the rest)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import ValidationError

from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.policy_v1 import PodDisruptionBudget
from resourceapi.api.resource_v1 import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice

log = logging.getLogger("dra_capacity.binder")

M = TypeVar("M", DeviceClass, DeviceTaintRule, ResourceSlice, Node, Pod, ResourceClaim, PodDisruptionBudget)


def parse(model: type[M], obj: dict[str, Any]) -> M | None:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        meta = obj.get("metadata") or {}
        log.warning("%s %s/%s skipped: %s", model.__name__, meta.get("namespace"), meta.get("name"), exc)
        return None


def parse_all(model: type[M], objs: Iterable[dict[str, Any]]) -> list[M]:
    out: list[M] = []
    for o in objs:
        parsed = parse(model, o)
        if parsed is not None:
            out.append(parsed)
    return out
