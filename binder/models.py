"""Informer JSON to the API models the allocator core reads; an object that does not parse is skipped with a
warning naming it (the binder keeps running on the rest)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

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


class ParseCache(Generic[M]):
    """Parsed models of API objects by uid and resourceVersion, for a caller that reads many of them on every
    attempt (preemption's victims and their claims): an unchanged object is not validated again. What one
    pass (`end_pass`) did not read is dropped after the next; callers must not change a model in ways that
    differ between passes."""

    def __init__(self, model: type[M]) -> None:
        self.model: type[M] = model
        self._prev: dict[tuple[str, str], M] = {}
        self._cur: dict[tuple[str, str], M] = {}

    def parse(self, obj: dict[str, Any]) -> M | None:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        if not key[0] or not key[1]:
            return parse(self.model, obj)
        hit = self._cur.get(key)
        if hit is None:
            hit = self._prev.get(key)
            if hit is None:
                hit = parse(self.model, obj)
                if hit is None:
                    return None
            self._cur[key] = hit
        return hit

    def end_pass(self) -> None:
        self._prev, self._cur = self._cur, {}
