"""One informer per kind in a process, shared by every reader (client-go's SharedInformerFactory).

`serve` reads DeviceClasses for two purposes (the cluster-aware warnings and the pod routing): both get the
same informer from the process's factory for that cluster (`shared_factory`), so the kind is listed and
watched once. Readers `acquire` an informer (started on first use) and `release` it when they stop; the last
release stops it.
"""

from __future__ import annotations

import threading

from kubeio.config import connect
from kubeio.informer import PAGE_SIZE, Informer
from kubeio.kube import Kube, Resource

_FactoryKey = tuple[Resource, str | None, str | None, str | None, int, float]


class InformerFactory:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._lock = threading.Lock()
        self._informers: dict[_FactoryKey, Informer] = {}
        self._users: dict[_FactoryKey, int] = {}

    def acquire(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = PAGE_SIZE,
        watch_timeout: float = 300.0,
    ) -> Informer:
        """The informer of that view of `resource`, started (the same object for every caller)."""
        key = (resource, namespace, label_selector, field_selector, page_size, watch_timeout)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = Informer(
                    self.kube,
                    resource,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    page_size=page_size,
                    watch_timeout=watch_timeout,
                )
                self._informers[key] = informer
                informer.start()
            self._users[key] = self._users.get(key, 0) + 1
            return informer

    def release(self, informer: Informer, timeout: float = 5.0) -> None:
        """One reader is done with `informer`; the last one stops it."""
        with self._lock:
            key = next((k for k, v in self._informers.items() if v is informer), None)
            if key is None:
                return
            self._users[key] -= 1
            if self._users[key] > 0:
                return
            del self._users[key], self._informers[key]
        informer.stop()
        informer.join(timeout)

    def informers(self) -> list[Informer]:
        with self._lock:
            return list(self._informers.values())


_SHARED: dict[str | None, InformerFactory] = {}
_SHARED_LOCK = threading.Lock()


def shared_factory(kubeconfig: str | None) -> InformerFactory:
    """This process's factory for the cluster of `kubeconfig` (None: in-cluster), connected on first use;
    raises `kubeio.config.ClusterConfigError`."""
    with _SHARED_LOCK:
        factory = _SHARED.get(kubeconfig)
        if factory is None:
            factory = _SHARED[kubeconfig] = InformerFactory(connect(kubeconfig))
        return factory
