"""A read-only informer cache of ResourceSlices and DeviceClasses for the cluster-aware admission warnings.

Each resource is listed in pages and then watched from the list's resourceVersion, on a thread of its own,
through the official `kubernetes` client; a `410 Gone` or a dropped stream relists (the client's watch does
not recover from 410 itself). After any change a new `ClusterView` is built off the admission path and
swapped in whole. Admission only ever reads `view()`: it never waits on the API server, and gets None (skip
the warnings) until both resources have synced, and again after a failure until a relist succeeds.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError

from resourceapi.resource_v1 import DeviceClass, ResourceSlice
from webhook.cluster_view import ClusterView, ViewCache

log = logging.getLogger(__name__)

PAGE_SIZE = 500
WATCH_TIMEOUT_SECONDS = 300
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)
REBUILD_DELAY_SECONDS = 0.2
"""Changes arriving within this time are folded into one rebuild (a driver republishing 500 slices)."""


class _Informer:
    """List + watch one resource into a dict of raw objects by name."""

    def __init__(self, name: str, list_func: Callable[..., Any], on_change: Callable[[], None]) -> None:
        self.name = name
        self._list = list_func
        self._on_change = on_change
        self.objects: dict[str, dict[str, Any]] = {}
        self.synced = False
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]
        self._thread.join(timeout=5)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                version = self._relist()
                failures = 0
                self._watch_from(version)
            except Exception as exc:  # any failure: mark stale, back off, relist
                self.synced = False
                self._on_change()
                delay = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
                failures += 1
                log.warning("informer %s failed (%s); relisting in %.1fs", self.name, _short(exc), delay)
                self._stop.wait(delay)

    def _relist(self) -> str:
        objects: dict[str, dict[str, Any]] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": PAGE_SIZE, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            page = json.loads(self._list(**kwargs).data)
            for item in page.get("items") or ():
                name = (item.get("metadata") or {}).get("name")
                if isinstance(name, str):
                    objects[name] = item
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                version = str(meta.get("resourceVersion") or "")
                break
        self.objects = objects
        self.synced = True
        self._on_change()
        return version

    def _watch_from(self, version: str) -> None:
        while not self._stop.is_set():
            self._watch = watch.Watch()  # type: ignore[no-untyped-call]
            stream = self._watch.stream(  # type: ignore[no-untyped-call]
                self._list,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=WATCH_TIMEOUT_SECONDS,
                deserialize=False,
            )
            for event in stream:
                if isinstance(event, str):
                    event = json.loads(event)
                kind = event.get("type")
                obj = event.get("object") or {}
                if kind == "ERROR":
                    raise RuntimeError(f"watch error: {obj.get('message') or obj}")
                meta = obj.get("metadata") or {}
                version = str(meta.get("resourceVersion") or version)
                name = meta.get("name")
                if kind == "BOOKMARK" or not isinstance(name, str):
                    continue
                if kind == "DELETED":
                    self.objects.pop(name, None)
                else:
                    self.objects[name] = obj
                self._on_change()


class ClusterCache:
    """The webhook's cluster view: two informers and a debounced, off-path rebuild of the `ClusterView`."""

    def __init__(
        self, api_client: client.ApiClient, on_view: Callable[[ClusterView], object] | None = None
    ) -> None:
        resource = client.ResourceV1Api(api_client)
        self._on_view = on_view
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._view: ClusterView | None = None
        self._generation = 0
        self._view_cache = ViewCache()
        self.slices = _Informer("resourceslices", resource.list_resource_slice, self._dirty.set)
        self.classes = _Informer("deviceclasses", resource.list_device_class, self._dirty.set)
        self._builder = threading.Thread(target=self._rebuild_loop, name="cluster-view", daemon=True)

    def start(self) -> None:
        self.slices.start()
        self.classes.start()
        self._builder.start()

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        self.slices.stop()
        self.classes.stop()
        self._builder.join(timeout=5)

    def view(self) -> ClusterView | None:
        """The current snapshot, or None while cold or stale (the warnings are then skipped)."""
        return self._view

    def wait_synced(self, timeout: float) -> bool:
        """For tests and start-up logs: wait until a first view exists."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._view is not None:
                return True
            time.sleep(0.02)
        return False

    def _rebuild_loop(self) -> None:
        while not self._stop.is_set():
            self._dirty.wait()
            if self._stop.is_set():
                return
            time.sleep(REBUILD_DELAY_SECONDS)
            self._dirty.clear()
            try:
                self._rebuild()
            except Exception:  # a bug must not stop the cache; the warnings are skipped meanwhile
                log.exception("rebuilding the cluster view failed")
                self._view = None

    def _rebuild(self) -> None:
        if not (self.slices.synced and self.classes.synced):
            self._view = None
            return
        slices = [_model(ResourceSlice, o) for o in list(self.slices.objects.values())]
        classes = [_model(DeviceClass, o) for o in list(self.classes.objects.values())]
        self._generation += 1
        view = ClusterView(
            [s for s in slices if isinstance(s, ResourceSlice)],
            [c for c in classes if isinstance(c, DeviceClass)],
            self._generation,
            self._view_cache,
        )
        self._view = view
        if self._on_view is not None:
            self._on_view(view)


def _model(model: type[ResourceSlice] | type[DeviceClass], obj: dict[str, Any]) -> object | None:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:  # the API server validated it; a mismatch is ours: skip the object
        log.warning("skipping %s %r: %s", model.__name__, (obj.get("metadata") or {}).get("name"), exc)
        return None


def _short(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        return f"HTTP {exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"[:200]


def event_sink(api_client: client.ApiClient) -> Callable[[dict[str, Any]], None]:
    """Create events.k8s.io/v1 Events; one that already exists (another replica sent it) is fine."""
    events = client.EventsV1Api(api_client)

    def send(event: dict[str, Any]) -> None:
        try:
            events.create_namespaced_event(event["metadata"]["namespace"], event)  # type: ignore[arg-type]
        except ApiException as exc:
            if exc.status != 409:
                raise

    return send
