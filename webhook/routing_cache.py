"""The informer cache `/mutate-pods` reads: DeviceClasses (which resource names route) and Namespace labels.

Two `kubeio.informer.Informer`s (list in pages, watch, relist on 410 Gone). The admission path only reads two
attributes that each informer's listener replaces whole, so it never waits on a lock: until both lists have
come back, `routed_names()` is None and the endpoint allows pods unchanged (fail-open, counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubeio.informer import Informer
from kubeio.kube import DEVICE_CLASSES, NAMESPACES, Kube
from resourceapi.routing import routed_resource_names


class RoutingCache:
    """What routing needs from the cluster, as of the last watch event."""

    def __init__(self) -> None:
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
        copy = RoutingCache()
        copy._routed, copy._namespaces = self._routed, self._namespaces
        return copy

    # --- writes (the informer threads, or a test seeding it) ------------------------------------------------

    def set_classes(self, classes: Iterable[Mapping[str, Any]]) -> None:
        self._routed = routed_resource_names(classes)

    def set_namespaces(self, namespaces: Iterable[Mapping[str, Any]]) -> None:
        out: dict[str, dict[str, str]] = {}
        for ns in namespaces:
            meta = ns.get("metadata") or {}
            if isinstance(meta.get("name"), str):
                labels = meta.get("labels")
                out[meta["name"]] = dict(labels) if isinstance(labels, dict) else {}
        self._namespaces = out


class ClusterRoutingCache(RoutingCache):
    """A RoutingCache fed from the API server through a `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any) -> None:
        """`api_client`: a `kubernetes.client.ApiClient` (its owner closes it)."""
        super().__init__()
        self.api_client = api_client
        kube = Kube.of_client(api_client)
        self.classes = Informer(kube, DEVICE_CLASSES)
        self.namespaces = Informer(kube, NAMESPACES)
        self.classes.listeners.append(lambda: self.set_classes(self.classes.items()))
        self.namespaces.listeners.append(lambda: self.set_namespaces(self.namespaces.items()))

    def start(self) -> None:
        self.classes.start()
        self.namespaces.start()

    def stop(self) -> None:
        self.classes.stop()
        self.namespaces.stop()
        self.classes.join(2.0)
        self.namespaces.join(2.0)
