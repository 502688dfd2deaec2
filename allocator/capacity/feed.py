"""Raw API objects, one watch event at a time, into a `CapacityView`: the informers' handlers.

Each handler has the informer's signature `(event type, old, new)` and parses only what changed and matters:
a Node heartbeat, a pod's status condition or a claim whose allocation is unchanged cost a comparison of
two dicts, not a model. An object the models refuse is skipped (counted in `skipped`), as the binder skips
it. All updates and reads go through `lock`, so informer threads and a reader (a scrape, a redraw) never see
half a change.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from allocator.capacity.view import CapacityView
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import AllocationResult, DeviceClass, ResourceSlice

Obj = dict[str, Any]
M = TypeVar("M", bound=BaseModel)
_TERMINAL = ("Succeeded", "Failed")
log = logging.getLogger("dra_capacity.capacity")
Handler = Callable[["ObjectFeed", str, "Obj | None", "Obj | None"], None]


def _safely(handler: Handler) -> Handler:
    """A handler never raises into the informer that calls it: a failure is logged and counted."""

    @functools.wraps(handler)
    def run(self: ObjectFeed, kind: str, old: Obj | None, new: Obj | None) -> None:
        try:
            handler(self, kind, old, new)
        except Exception:
            self.failures += 1
            log.exception(
                "capacity view: %s of %s %s/%s failed", kind, handler.__name__, *_key(new or old or {})
            )

    return run


class HandlerHost(Protocol):
    """What `attach` needs of an informer: its handler list."""

    @property
    def handlers(self) -> list[Any]: ...


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def _node_view(obj: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What placement reads of a Node: labels, taints, unschedulable, allocatable."""
    if obj is None:
        return ()
    spec = obj.get("spec") or {}
    return (
        (obj.get("metadata") or {}).get("labels"),
        spec.get("taints"),
        spec.get("unschedulable"),
        (obj.get("status") or {}).get("allocatable"),
    )


def _pod_view(obj: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What the view reads of a Pod: its spec, whether it is finished or being deleted."""
    if obj is None:
        return ()
    return (
        obj.get("spec"),
        (obj.get("status") or {}).get("phase") in _TERMINAL,
        bool((obj.get("metadata") or {}).get("deletionTimestamp")),
        (obj.get("metadata") or {}).get("labels"),
    )


def _allocation(obj: Mapping[str, Any] | None) -> Any:
    return ((obj or {}).get("status") or {}).get("allocation")


class ObjectFeed:
    """Informer events into a view, under one lock."""

    def __init__(self, view: CapacityView, lock: threading.RLock | None = None) -> None:
        self.view = view
        self.lock = lock if lock is not None else threading.RLock()
        self.skipped = 0
        self.failures = 0
        self.changes = 0

    def attach(
        self,
        *,
        classes: HandlerHost,
        slices: HandlerHost,
        nodes: HandlerHost,
        claims: HandlerHost,
        pods: HandlerHost,
    ) -> None:
        """Register the handlers on the five informers."""
        classes.handlers.append(self.on_class)
        slices.handlers.append(self.on_slice)
        nodes.handlers.append(self.on_node)
        claims.handlers.append(self.on_claim)
        pods.handlers.append(self.on_pod)

    def _parse(self, model: type[M], obj: Mapping[str, Any]) -> M | None:
        try:
            return model.model_validate(obj)
        except ValidationError:
            self.skipped += 1
            return None

    @_safely
    def on_class(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if (
            new is not None
            and old is not None
            and new.get("spec") == old.get("spec")
            and (new.get("metadata") or {}).get("annotations")
            == (old.get("metadata") or {}).get("annotations")
        ):
            return
        parsed = self._parse(DeviceClass, new) if new is not None else None
        with self.lock:
            self.changes += 1
            if parsed is not None:
                self.view.upsert_class(parsed)
            elif old is not None or new is not None:
                self.view.delete_class(_key(new if new is not None else old or {})[1])

    @_safely
    def on_slice(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if new is not None and old is not None and new.get("spec") == old.get("spec"):
            return
        parsed = self._parse(ResourceSlice, new) if new is not None else None
        with self.lock:
            self.changes += 1
            if parsed is not None:
                self.view.upsert_slice(parsed)
            else:
                self.view.delete_slice(_key(new if new is not None else old or {})[1])

    @_safely
    def on_node(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if new is not None and old is not None and _node_view(new) == _node_view(old):
            return
        parsed = self._parse(Node, new) if new is not None else None
        with self.lock:
            self.changes += 1
            if parsed is not None:
                self.view.upsert_node(parsed)
            else:
                self.view.delete_node(_key(new if new is not None else old or {})[1])

    @_safely
    def on_claim(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        raw = _allocation(new)
        if old is not None and new is not None and raw == _allocation(old):
            return
        allocation = self._parse(AllocationResult, raw) if raw else None
        key = _key(new if new is not None else old or {})
        with self.lock:
            self.changes += 1
            self.view.set_allocation(key, allocation)

    @_safely
    def on_pod(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if new is not None and old is not None and _pod_view(new) == _pod_view(old):
            return
        parsed = self._parse(Pod, new) if new is not None else None
        key = _key(new if new is not None else old or {})
        with self.lock:
            self.changes += 1
            if parsed is not None:
                self.view.upsert_pod(parsed)
            else:
                self.view.delete_pod(key)
