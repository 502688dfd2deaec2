"""The double's storage: one monotonic resourceVersion shared by every type (etcd's revision), the objects,
a bounded event history for watches from a resourceVersion, and the live watchers.

Like etcd behind kube-apiserver's watch cache
(`staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`):
a watch from a version older than the retained history answers `410 Expired: too old resource version`.
Thread-safe: writes come from the server's event loop, seeds from the test thread.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import statuses
from .codec import clone
from .eventsconv import from_storage, to_storage
from .resources import BY_KEY, ResourceType
from .selectors import Predicate

Obj = dict[str, Any]
ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"
# staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go
LIST_EXPIRED = "The resourceVersion for the provided list is too old."
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new "
    "list without the continue parameter, or use the continue token in this response to retrieve the "
    "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
    "that were created, modified, or deleted between the time the first chunk was returned and now may show "
    "up in the list."
)


@dataclass(frozen=True)
class Event:
    """A committed change: `obj` is the object after it (for DELETED, the last state at the delete's
    version)."""

    type: str
    rv: int
    rt: ResourceType
    obj: Obj
    prev: Obj | None


def namespace_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def name_of(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def rv_of(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return -1


def call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., object], *args: Any) -> None:
    """`loop.call_soon_threadsafe` without its wake-up write when already on the loop's thread. Both append
    to the loop's ready queue in call order, so events keep their order whichever thread wrote them."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        loop.call_soon(callback, *args)
    else:
        loop.call_soon_threadsafe(callback, *args)


@dataclass(eq=False)
class Watcher:
    """One open watch; filters and translates events as the watch cache does
    (`cacheWatcher.convertToWatchEvent`)."""

    rt: ResourceType
    namespace: str | None
    match: Predicate
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[tuple[str, Obj] | None] = field(default_factory=asyncio.Queue)

    def translate(self, ev: Event) -> tuple[str, Obj] | None:
        if ev.rt.storage_key != self.rt.storage_key or (
            self.namespace and namespace_of(ev.obj) != self.namespace
        ):
            return None
        if self.rt.storage:
            obj = from_storage(self.rt, ev.obj)
            prev = from_storage(self.rt, ev.prev) if ev.prev is not None else None
            ev = Event(ev.type, ev.rv, self.rt, obj, prev)
        cur = ev.type != DELETED and self.match(ev.obj)
        before = ev.prev is not None and self.match(ev.prev)
        if ev.type == ADDED:
            return (ADDED, ev.obj) if cur else None
        if ev.type == DELETED:
            return (DELETED, ev.obj) if self.match(ev.obj) else None
        if cur and before:
            return (MODIFIED, ev.obj)
        if cur:
            return (ADDED, ev.obj)
        if before:
            return (DELETED, ev.obj)
        return None

    def offer(self, ev: Event) -> None:
        item = self.translate(ev)
        if item is not None:
            call_soon(self.loop, self.queue.put_nowait, item)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, None)


class Store:
    """Objects by type, namespace and name, with the shared revision counter."""

    def __init__(self, history_limit: int = 10_000) -> None:
        self.lock = threading.RLock()
        self.revision = 1
        self.objects: dict[str, dict[tuple[str, str], Obj]] = collections.defaultdict(dict)
        self.history: collections.deque[Event] = collections.deque()
        self.history_limit = history_limit
        self.compacted_revision = 0
        self.watchers: set[Watcher] = set()
        self.listeners: list[Callable[[Event], None]] = []
        self.writes: collections.Counter[str] = collections.Counter()  # by storage key: cache validity

    # -- reads
    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        with self.lock:
            obj = self.objects[rt.storage_key].get((namespace if rt.namespaced else "", name))
            return from_storage(rt, clone(obj)) if obj is not None else None

    def peek(self, rt: ResourceType, namespace: str, name: str) -> Obj | None:
        """The stored object itself, for the emulated controllers: READ-ONLY, as `snapshot`."""
        with self.lock:
            obj = self.objects[rt.storage_key].get((namespace if rt.namespaced else "", name))
            return from_storage(rt, obj) if obj is not None else None

    def list(self, rt: ResourceType, namespace: str | None = None) -> tuple[list[Obj], int]:
        """Objects in etcd key order (namespace, then name), and the revision they were read at."""
        with self.lock:
            items = [
                from_storage(rt, clone(o))
                for (ns, _), o in sorted(self.objects[rt.storage_key].items())
                if not namespace or ns == namespace
            ]
            return items, self.revision

    def snapshot(self, rt: ResourceType, namespace: str | None = None) -> builtins.list[Obj]:
        """The stored objects themselves, in key order, for the emulated controllers: READ-ONLY (a caller that
        changes one goes through the registry, which works on a copy). Skips `list`'s deep copies, which made
        every write cost a copy of the whole store once the controllers ran after it."""
        with self.lock:
            return [
                from_storage(rt, o)
                for (ns, _), o in sorted(self.objects[rt.storage_key].items())
                if not namespace or ns == namespace
            ]

    def list_at(self, rt: ResourceType, namespace: str | None, revision: int) -> builtins.list[Obj]:
        """The objects as they were at `revision`, rebuilt by undoing the newer events of the history
        (what etcd serves for resourceVersionMatch=Exact and for a continue token); 410 when compacted."""
        with self.lock:
            if revision >= self.revision:
                return self.list(rt, namespace)[0]
            if revision < self.compacted_revision:
                raise statuses.resource_expired(LIST_EXPIRED)
            state = dict(self.objects[rt.storage_key])
            for ev in reversed(self.history):
                if ev.rv <= revision:
                    break
                if ev.rt.storage_key != rt.storage_key:
                    continue
                key = (namespace_of(ev.obj) if rt.namespaced else "", name_of(ev.obj))
                if ev.type == ADDED:
                    state.pop(key, None)
                elif ev.prev is not None:
                    state[key] = ev.prev
            return [
                from_storage(rt, clone(o))
                for (ns, _), o in sorted(state.items())
                if not namespace or ns == namespace
            ]

    # -- writes
    def _next(self) -> int:
        self.revision += 1
        return self.revision

    def _record(self, ev: Event) -> None:
        self.writes[ev.rt.storage_key] += 1
        self.history.append(ev)
        while len(self.history) > self.history_limit:
            self.compacted_revision = self.history.popleft().rv
        for w in list(self.watchers):
            w.offer(ev)
        for listener in list(self.listeners):
            listener(ev)

    def _put(self, rt: ResourceType, key: tuple[str, str], obj: Obj, type_: str, old: Obj | None) -> Obj:
        """Store `obj` under `key` at the next resourceVersion and record the `type_` event (lock held)."""
        stored = to_storage(rt, obj)
        rv = self._next()
        stored["metadata"]["resourceVersion"] = str(rv)
        self.objects[rt.storage_key][key] = stored
        self._record(Event(type_, rv, BY_KEY[rt.storage_key], stored, old))
        return from_storage(rt, clone(stored))

    def create(self, rt: ResourceType, obj: Obj, *, adopt: bool = False) -> Obj:
        """Store a new object; `adopt`: the caller hands `obj` over (it is stored as is, not copied)."""
        with self.lock:
            key = (namespace_of(obj) if rt.namespaced else "", name_of(obj))
            if key in self.objects[rt.storage_key]:
                raise statuses.already_exists(rt, key[1])
            return self._put(rt, key, obj if adopt else clone(obj), ADDED, None)

    def replace(self, rt: ResourceType, obj: Obj, expect_rv: int, *, adopt: bool = False) -> Obj:
        """Compare-and-swap on resourceVersion: raises the stale-object Conflict when it moved. `adopt`: as
        for `create`."""
        with self.lock:
            key = (namespace_of(obj) if rt.namespaced else "", name_of(obj))
            old = self.objects[rt.storage_key].get(key)
            if old is None:
                raise statuses.not_found(rt, key[1])
            if rv_of(old) != expect_rv:
                raise statuses.stale(rt, key[1])
            return self._put(rt, key, obj if adopt else clone(obj), MODIFIED, old)

    def remove(self, rt: ResourceType, namespace: str, name: str, expect_rv: int | None = None) -> Obj:
        with self.lock:
            key = (namespace if rt.namespaced else "", name)
            old = self.objects[rt.storage_key].get(key)
            if old is None:
                raise statuses.not_found(rt, name)
            if expect_rv is not None and rv_of(old) != expect_rv:
                raise statuses.stale(rt, name)
            del self.objects[rt.storage_key][key]
            rv = self._next()
            last = clone(old)
            last["metadata"]["resourceVersion"] = str(rv)
            self._record(Event(DELETED, rv, BY_KEY[rt.storage_key], last, old))
            return from_storage(rt, clone(last))

    # -- watches
    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        match: Predicate,
        loop: asyncio.AbstractEventLoop,
        since: int | None,
    ) -> tuple[Watcher, builtins.list[tuple[str, Obj]], int]:
        """Register a watcher and return the events it must replay first, atomically.

        `since=None`: synthetic ADDED events for the current state ("Get State and Start at Most Recent").
        `since=N`: every event after N, or 410 when N is older than the retained history.
        """
        with self.lock:
            w = Watcher(rt, namespace, match, loop)
            replay: builtins.list[tuple[str, Obj]] = []
            if since is None:
                items, _ = self.list(rt, namespace)
                replay = [(ADDED, o) for o in items if match(o)]
            else:
                if since < self.compacted_revision:
                    raise statuses.resource_expired(
                        f"too old resource version: {since} ({self.compacted_revision})"
                    )
                for ev in self.history:
                    if ev.rv > since:
                        item = w.translate(ev)
                        if item is not None:
                            replay.append(item)
            self.watchers.add(w)
            return w, replay, self.revision

    def unwatch(self, w: Watcher) -> None:
        with self.lock:
            self.watchers.discard(w)

    def compact(self) -> int:
        """Forget the event history (as etcd compaction does): older watches get 410 afterwards."""
        with self.lock:
            self.history.clear()
            self.compacted_revision = self.revision
            return self.revision
