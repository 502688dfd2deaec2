"""A read-only informer cache of ResourceSlices and DeviceClasses for the cluster-aware admission warnings.

Two `kubeio.informer.Informer`s (list in pages, watch, relist on 410 Gone), from the process's informer
factory (the pod routing shares the DeviceClass one), feed it. After any change a new
`ClusterView` is built off the admission path and swapped in whole. Admission only ever reads `view()`: it
never waits on the API server, and gets None (skip the warnings) until both resources have synced, and again
after a failure until the list or watch is back (`Informer.fresh`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from kubeio.factory import InformerFactory
from kubeio.informer import PAGE_SIZE, Informer
from kubeio.kube import DEVICE_CLASSES, EVENTS_V1, RESOURCE_SLICES, ApiError, Kube
from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from webhook.clusterview.cluster_view import ClusterView, ViewCache

log = logging.getLogger(__name__)

WATCH_TIMEOUT_SECONDS = 300.0
REBUILD_DELAY_SECONDS = 0.2
"""Changes arriving within this time are folded into one rebuild (a driver republishing 500 slices)."""


class ClusterCache:
    """The webhook's cluster view: two informers and a debounced, off-path rebuild of the `ClusterView`."""

    def __init__(
        self,
        informers: InformerFactory,
        on_view: Callable[[ClusterView], object] | None = None,
        *,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self._factory = informers
        self._page_size = page_size
        self._on_view = on_view
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._view: ClusterView | None = None
        self._generation = 0
        self._view_cache = ViewCache()
        self.slices: Informer | None = None
        self.classes: Informer | None = None
        self._builder = threading.Thread(target=self._rebuild_loop, name="cluster-view", daemon=True)

    def start(self) -> None:
        self.slices, self.classes = (
            self._factory.acquire(r, watch_timeout=WATCH_TIMEOUT_SECONDS, page_size=self._page_size)
            for r in (RESOURCE_SLICES, DEVICE_CLASSES)
        )
        for informer in (self.slices, self.classes):
            informer.listeners.append(self._dirty.set)
        self._dirty.set()  # a shared informer may have synced already
        self._builder.start()

    def stop(self) -> None:
        self._stop.set()
        self._dirty.set()
        for informer in (self.slices, self.classes):
            if informer is not None:
                informer.listeners.remove(self._dirty.set)
                self._factory.release(informer)
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
        if self.slices is None or self.classes is None or not (self.slices.fresh and self.classes.fresh):
            self._view = None
            return
        slices = [_model(ResourceSlice, o) for o in self.slices.items()]
        classes = [_model(DeviceClass, o) for o in self.classes.items()]
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


def event_sink(kube: Kube) -> Callable[[dict[str, Any]], None]:
    """Create events.k8s.io/v1 Events; one that already exists (another replica sent it) is fine."""

    def send(event: dict[str, Any]) -> None:
        try:
            kube.request("POST", EVENTS_V1.path(event["metadata"]["namespace"]), body=event)
        except ApiError as exc:
            if exc.status != 409:
                raise

    return send
