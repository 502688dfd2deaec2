"""`top --kubeconfig`: the cluster listed and watched through kubeio's informers into a `CapacityView`.

Each resource is probed with one small LIST first, so that a cluster that cannot be read (no connection, RBAC)
is one error line and exit 2 instead of informers retrying forever; then the informers list and watch, and
every change reaches the view through `allocator.capacity.feed.ObjectFeed`. Nothing is ever written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dra_capacity.cluster_source import ClusterReadError, _api_reason
from kubeio.config import ClusterConfigError, connect

if TYPE_CHECKING:
    from allocator.capacity.feed import ObjectFeed
    from kubeio.informer import Informer


class LiveView:
    """Informers for DeviceClasses, ResourceSlices, Nodes, ResourceClaims and Pods feeding one view."""

    def __init__(self, kubeconfig: str | None, context: str | None, gates: Any, strategy: Any) -> None:
        from allocator.capacity.feed import ObjectFeed
        from allocator.capacity.view import CapacityView

        try:
            self.kube = connect(kubeconfig, context, kubectl_defaults=True)
        except ClusterConfigError as exc:
            raise ClusterReadError(str(exc)) from None
        from kubeio.informer import Informer
        from kubeio.kube import DEVICE_CLASSES, NODES, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES

        self.feed: ObjectFeed = ObjectFeed(CapacityView(gates, strategy))
        self.informers: dict[str, Informer] = {
            "classes": Informer(self.kube, DEVICE_CLASSES),
            "slices": Informer(self.kube, RESOURCE_SLICES),
            "nodes": Informer(self.kube, NODES),
            "claims": Informer(self.kube, RESOURCE_CLAIMS),
            "pods": Informer(self.kube, PODS),
        }
        self.feed.attach(**self.informers)

    def start(self, timeout: float) -> None:
        """Probe, start the informers and wait until each has listed; raises ClusterReadError."""
        from kubeio.kube import ApiError

        for informer in self.informers.values():
            try:
                self.kube.list(informer.resource, {"limit": 1})
            except ApiError as exc:
                raise ClusterReadError(
                    f"cannot list {informer.resource.plural}: {_api_reason(exc)}"
                ) from None
        for informer in self.informers.values():
            informer.start()
        for informer in self.informers.values():
            if not informer.synced.wait(timeout):
                raise ClusterReadError(
                    f"cannot list {informer.resource.plural}: no answer within {timeout:.0f}s"
                )

    def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()
        self.kube.close()
