"""List+watch caches of API objects: client-go's reflector and store, reduced (kubernetes/kubernetes
staging/src/k8s.io/client-go/tools/cache/reflector.go, store.go).

Each informer lists in pages, then watches from the list's resourceVersion with bookmarks; a `410 Gone` (as
an ERROR event, as the watch's answer, or as an expired continue token) relists, and the relist's differences
reach the handlers as ADDED / MODIFIED / DELETED, so nothing is missed across a gap. Other failures back off
(jittered, doubling) and resume from the last resourceVersion. Handlers receive each change; listeners are
called once per batch (a whole list, one watch event) and whenever `fresh` changes. Both run on the
informer's thread and must be quick.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeio.kube import ApiError, Kube, Obj, Resource

Key = tuple[str, str]
Handler = Callable[[str, Obj | None, Obj | None], None]  # (event type, old, new)
Listener = Callable[[], None]
ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
PAGE_SIZE = 500
"""Objects per LIST page (client-go's pager default)."""
INITIAL_BACKOFF = 0.2
MAX_BACKOFF = 5.0

log = logging.getLogger("dra_capacity.kubeio")


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def resource_version(obj: Mapping[str, Any] | None) -> int:
    """resourceVersion as a number for freshness comparisons (as the scheduler's assume cache does)."""
    if not obj:
        return -1
    raw = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(raw))
    except (TypeError, ValueError):
        return -1


class Informer:
    """One resource's list+watch loop on its own daemon thread, and the resulting store."""

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        watch_timeout: float = 300.0,
        page_size: int = PAGE_SIZE,
    ) -> None:
        """`namespace`: one namespace of a namespaced resource (None: all); `watch_timeout`: seconds a watch
        stays open before it is renewed from its last resourceVersion."""
        self.kube = kube
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.page_size = page_size
        self.handlers: list[Handler] = []
        self.listeners: list[Listener] = []
        self.synced = threading.Event()
        self.lock = threading.RLock()
        self.relists = 0
        self._fresh = False
        self._failing = False  # the last list or watch failed (a warning is logged once per run of failures)
        self.last_error: str | None = None  # that failure (`HTTP 403 Forbidden: ...`), None once one succeeds
        self._store: dict[Key, Obj] = {}
        self._stop = threading.Event()
        self._relist = threading.Event()
        self._thread: threading.Thread | None = None
        self._current: Any = None  # the open watch response, so stop() can interrupt a blocking read

    # --- reads ----------------------------------------------------------------------------------------------

    def get(self, key: Key) -> Obj | None:
        with self.lock:
            return self._store.get(key)

    def items(self) -> list[Obj]:
        with self.lock:
            return list(self._store.values())

    def __len__(self) -> int:
        with self.lock:
            return len(self._store)

    @property
    def fresh(self) -> bool:
        """Listed, and no list or watch has failed since the last one that succeeded: readers that would
        rather say nothing than speak from a stale view (the webhook's warnings) check it."""
        return self._fresh

    # --- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{self.resource.plural}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._interrupt()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def resync(self) -> None:
        """A fresh LIST merged into the store now, in the caller's thread (a new leader's view: nothing the
        previous leader wrote may be missing). Newer objects win by resourceVersion, so the watch, which goes
        on, never rolls an object back; an object the list lacks is gone unless it is newer than the list."""
        items, rv = self._list_pages()
        list_rv = int(rv) if rv.isdigit() else -1
        events: list[tuple[str, Obj | None, Obj | None]] = []
        with self.lock:
            fresh = {key_of(o): o for o in items}
            for key, obj in fresh.items():
                old = self._store.get(key)
                if old is None:
                    self._store[key] = obj
                    events.append((ADDED, None, obj))
                elif resource_version(obj) > resource_version(old):
                    self._store[key] = obj
                    events.append((MODIFIED, old, obj))
            for key, old in list(self._store.items()):
                if key not in fresh and 0 <= resource_version(old) <= list_rv:
                    del self._store[key]
                    events.append((DELETED, old, None))
        for kind, old_obj, new_obj in events:
            self._notify(kind, old_obj, new_obj)
        if events:
            self._changed()

    def _interrupt(self) -> None:
        current = self._current
        if current is not None:
            with contextlib.suppress(Exception):  # already closed
                current.shutdown()

    def _query(self) -> dict[str, Any]:
        return {"labelSelector": self.label_selector, "fieldSelector": self.field_selector}

    def _run(self) -> None:
        delay = INITIAL_BACKOFF
        rv: str | None = None
        while not self._stop.is_set():
            try:
                if rv is None or self._relist.is_set():
                    self._relist.clear()
                    rv = self._list()
                    self.synced.set()
                    delay = INITIAL_BACKOFF
                rv = self._watch(rv)
            except ApiError as exc:
                if self._stop.is_set():
                    return
                if exc.gone:
                    rv = None
                    continue
                if self._relist.is_set():
                    continue
                # The first failure of a run is a warning (RBAC, an unreachable server); its repeats are not.
                level = logging.DEBUG if self._failing else logging.WARNING
                self._failing = True
                answer = f"HTTP {exc.status} {exc.reason}".strip() if exc.status else exc.reason
                self.last_error = f"{answer}: {exc.message[:200]}"
                log.log(
                    level,
                    "informer %s failed (%s: %s); retrying in %.1fs",
                    self.resource.plural,
                    answer,
                    exc.message[:200],
                    delay,
                )
                self._set_fresh(False)
                self._stop.wait(delay * (1 + random.random()))
                delay = min(delay * 2, MAX_BACKOFF)

    def _list_pages(self) -> tuple[list[Obj], str]:
        """Every object, read `page_size` at a time with continue tokens (one consistent snapshot), and the
        list's resourceVersion. An expired token answers 410, which relists from the start."""
        items: list[Obj] = []
        meta: Obj = {}
        for page in self.kube.pages(self.resource, self._query(), self.namespace, self.page_size):
            items.extend(i for i in page.get("items") or [] if isinstance(i, dict))
            meta = page.get("metadata") or {}
        return items, str(meta.get("resourceVersion") or "")

    def _list(self) -> str:
        items, rv = self._list_pages()
        self.relists += 1
        self._replace(items)
        self._fresh = True
        self._failing = False
        self.last_error = None
        self._changed()
        return rv

    def _watch(self, rv: str) -> str | None:
        """Watch from `rv`; returns the last seen resourceVersion, or None to relist (410)."""
        query = {
            **self._query(),
            "resourceVersion": rv,
            "allowWatchBookmarks": True,
            "timeoutSeconds": int(self.watch_timeout * (1 + random.random() * 0.1)),
        }
        stream = self.kube.watch(
            self.resource, query, self.watch_timeout + 30.0, self._set_current, namespace=self.namespace
        )
        try:
            for event in stream:
                if self._relist.is_set() or self._stop.is_set():
                    break
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        return None
                    raise ApiError(int(obj.get("code") or 0), str(obj.get("reason") or ""), str(obj))
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if new_rv:
                    rv = str(new_rv)
                if kind == "BOOKMARK":
                    continue
                if kind in (ADDED, MODIFIED):
                    self._apply(obj)
                elif kind == DELETED:
                    self._delete(obj)
                else:
                    continue
                self._changed()
        finally:
            self._current = None
        return rv

    def _set_current(self, response: Any) -> None:
        self._current = response
        if self._relist.is_set() or self._stop.is_set():
            self._interrupt()
        elif 200 <= int(getattr(response, "status", 0) or 0) < 300:
            self._failing = False
            self.last_error = None
            self._set_fresh(True)  # the watch is open again: the view is current

    def _set_fresh(self, fresh: bool) -> None:
        if fresh != self._fresh and self.synced.is_set():
            self._fresh = fresh
            self._changed()

    # --- store updates --------------------------------------------------------------------------------------

    def _changed(self) -> None:
        for listener in self.listeners:
            try:
                listener()
            except Exception:
                log.exception("informer listener failed (%s)", self.resource.plural)

    def _notify(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        for h in self.handlers:
            try:
                h(kind, old, new)
            except Exception:
                log.exception("informer handler failed (%s %s)", self.resource.plural, kind)

    def _apply(self, obj: Obj) -> None:
        key = key_of(obj)
        with self.lock:
            old = self._store.get(key)
            if old is not None and resource_version(obj) < resource_version(old):
                return  # a resync already stored something newer
            self._store[key] = obj
        self._notify(ADDED if old is None else MODIFIED, old, obj)

    def _delete(self, obj: Obj) -> None:
        key = key_of(obj)
        with self.lock:
            old = self._store.pop(key, None)
        self._notify(DELETED, old if old is not None else obj, None)

    def _replace(self, items: Iterable[Obj]) -> None:
        fresh = {key_of(o): o for o in items}
        with self.lock:
            old_store = self._store
            self._store = dict(fresh)
        for key, old in old_store.items():
            if key not in fresh:
                self._notify(DELETED, old, None)
        for key, obj in fresh.items():
            previous = old_store.get(key)
            if previous is None:
                self._notify(ADDED, None, obj)
            elif resource_version(previous) != resource_version(obj):
                self._notify(MODIFIED, previous, obj)
