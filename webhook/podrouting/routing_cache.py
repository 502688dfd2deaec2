"""The informer cache `/mutate-pods` reads: DeviceClasses (which resource names route) and Namespace labels.

Two `kubeio.informer.Informer`s (list in pages, watch, relist on 410 Gone), from the process's informer
factory (the cluster-aware warnings share the DeviceClass one). The admission path only reads two
attributes that each informer's listener replaces whole, so it never waits on a lock: until both lists have
come back, `routed_names()` is None and the endpoint allows pods unchanged (fail-open, counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeio.factory import InformerFactory
from kubeio.informer import Informer
from kubeio.kube import DEVICE_CLASSES, NAMESPACES
from resourceapi.routing import routed_resource_names


class RoutingCache:
    """What routing needs from the cluster, as of the last watch event."""

    def __init__(self, whole_devices: bool = False, all_namespaces: bool = False) -> None:
        self.whole_devices = whole_devices  # also route whole-device classes (`--route-whole-device-classes`)
        self.all_namespaces = all_namespaces  # `--pod-routing-namespaces=all` (resourceapi.routing.opted_in)
        self._routed: frozenset[str] | None = None
        self._namespaces: dict[str, dict[str, str]] | None = None

    # --- reads (the admission path) -------------------------------------------------------------------------

    def routed_names(self) -> frozenset[str] | None:
        """Resource names backed by a capacity class; None while the cache is cold."""
        return self._routed if self._namespaces is not None else None

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns = self._namespaces
        return ns.get(namespace) if ns is not None else None

    def snapshot(self) -> RoutingCache:
        """A plain copy of what routing reads now (picklable: the job of a worker judging a large review)."""
        copy = RoutingCache(self.whole_devices, self.all_namespaces)
        copy._routed, copy._namespaces = self._routed, self._namespaces
        return copy

    # --- writes (the informer threads, or a test seeding it) ------------------------------------------------

    def set_classes(self, classes: Iterable[Mapping[str, Any]]) -> None:
        self._routed = routed_resource_names(classes, self.whole_devices)

    def set_namespaces(self, namespaces: Iterable[Mapping[str, Any]]) -> None:
        out: dict[str, dict[str, str]] = {}
        for ns in namespaces:
            meta = ns.get("metadata") or {}
            if isinstance(meta.get("name"), str):
                labels = meta.get("labels")
                out[meta["name"]] = dict(labels) if isinstance(labels, dict) else {}
        self._namespaces = out


class ClusterRoutingCache(RoutingCache):
    """A RoutingCache fed from the API server by the process's informer factory."""

    def __init__(
        self, informers: InformerFactory, whole_devices: bool = False, all_namespaces: bool = False
    ) -> None:
        super().__init__(whole_devices, all_namespaces)
        self._factory = informers
        self.classes: Informer | None = None
        self.namespaces: Informer | None = None

    def _classes_changed(self) -> None:
        if self.classes is not None:
            self.set_classes(self.classes.items())

    def _namespaces_changed(self) -> None:
        if self.namespaces is not None:
            self.set_namespaces(self.namespaces.items())

    def start(self) -> None:
        self.classes = self._factory.acquire(DEVICE_CLASSES)
        self.namespaces = self._factory.acquire(NAMESPACES)
        self.classes.listeners.append(self._classes_changed)
        self.namespaces.listeners.append(self._namespaces_changed)
        # a shared informer that has listed already (`fresh` is set before its listeners are called)
        if self.classes.fresh or self.classes.synced.is_set():
            self._classes_changed()
        if self.namespaces.fresh or self.namespaces.synced.is_set():
            self._namespaces_changed()

    def stop(self) -> None:
        for informer, listener in (
            (self.classes, self._classes_changed),
            (self.namespaces, self._namespaces_changed),
        ):
            if informer is not None:
                informer.listeners.remove(listener)
                self._factory.release(informer, 2.0)
