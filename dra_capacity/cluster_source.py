"""`simulate --kubeconfig`: a cluster's current state, read with paginated LIST calls (never a write).

Nodes, ResourceSlices, DeviceClasses, ResourceClaims and Pods are listed with `kubeio`'s client view (raw JSON
over the official `kubernetes` client's connection pool) in pages of `limit` objects, following
`metadata.continue` as `kubectl get --chunk-size` does (`kubeio.kube.Kube.pages`). The objects reach
`simulate` exactly as `kubectl get -o json` would print them, without the client's model classes in between.
`kubeio` (and with it `kubernetes`) is imported only when a cluster is read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, TextIO

from kubeio.config import ClusterConfigError, connect
from resourceapi.manifests.documents import Document

if TYPE_CHECKING:
    from kubeio.kube import Kube, Resource

DEFAULT_PAGE_SIZE = 500  # kubectl's default --chunk-size


class ClusterReadError(RuntimeError):
    """The cluster could not be read (configuration, connection, authorization); the message says which."""


@dataclass(frozen=True)
class _Kind:
    kind: str
    resource: Resource
    optional: bool = False  # a kind the server may not serve (404): skipped with a note
    namespace: str | None = None
    query: tuple[tuple[str, str], ...] = ()


def _kinds() -> list[_Kind]:
    from kubeio.kube import (
        CSI_DRIVERS,
        CSI_NODES,
        CSI_STORAGE_CAPACITIES,
        DEVICE_CLASSES,
        NODES,
        PERSISTENT_VOLUME_CLAIMS,
        PERSISTENT_VOLUMES,
        PODS,
        RESOURCE_CLAIMS,
        RESOURCE_SLICES,
        STORAGE_CLASSES,
    )

    return [
        _Kind("Node", NODES),
        _Kind("ResourceSlice", RESOURCE_SLICES),
        _Kind("DeviceClass", DEVICE_CLASSES),
        _Kind("ResourceClaim", RESOURCE_CLAIMS),
        # what the volume plugins read (allocator/scheduling/volumes.py)
        _Kind("PersistentVolumeClaim", PERSISTENT_VOLUME_CLAIMS),
        _Kind("PersistentVolume", PERSISTENT_VOLUMES),
        _Kind("StorageClass", STORAGE_CLASSES),
        _Kind("CSINode", CSI_NODES),
        _Kind("CSIDriver", CSI_DRIVERS),
        _Kind("CSIStorageCapacity", CSI_STORAGE_CAPACITIES),
        _Kind("Pod", PODS),
    ]


def migrate_kinds(configmap: tuple[str, str] | None) -> list[_Kind]:
    """What `migrate plan` reads beyond simulate's kinds: namespaces, quotas, disruption budgets, the owners
    of pods, and the device plugin's ConfigMap (`(namespace, name)`, by a field selector: never all)."""
    from kubeio.kube import NAMESPACES, Resource

    kinds = [
        _Kind("Namespace", NAMESPACES, optional=True),
        _Kind("ResourceQuota", Resource("v1", "resourcequotas", True), optional=True),
        _Kind("PodDisruptionBudget", Resource("policy/v1", "poddisruptionbudgets", True), optional=True),
    ]
    for kind, group_version, plural in (
        ("ReplicaSet", "apps/v1", "replicasets"),
        ("Deployment", "apps/v1", "deployments"),
        ("StatefulSet", "apps/v1", "statefulsets"),
        ("DaemonSet", "apps/v1", "daemonsets"),
        ("Job", "batch/v1", "jobs"),
        ("CronJob", "batch/v1", "cronjobs"),
    ):
        kinds.append(_Kind(kind, Resource(group_version, plural, True), optional=True))
    if configmap is not None:
        kinds.append(
            _Kind(
                "ConfigMap",
                Resource("v1", "configmaps", True),
                namespace=configmap[0],
                query=(("fieldSelector", f"metadata.name={configmap[1]}"),),
            )
        )
    return kinds


def read_cluster(
    kubeconfig: str | None,
    context: str | None,
    *,
    pending: bool,
    page_size: int = DEFAULT_PAGE_SIZE,
    progress: TextIO | None = None,
    extra: Sequence[_Kind] = (),
    notes: list[str] | None = None,
) -> list[Document]:
    """Every object simulate reads, as Documents named `cluster:<resource>` (document 1, items[i]).

    Pods without `spec.nodeName` (pending) are kept only with `pending`: otherwise the pods to place come from
    the files, and the cluster's own pending pods hold nothing yet. `extra`: further kinds (`migrate_kinds`);
    an optional one the server does not serve is skipped, with a line in `notes`."""
    try:
        kube = connect(kubeconfig, context, kubectl_defaults=True)
    except ClusterConfigError as exc:
        raise ClusterReadError(str(exc)) from None
    counts: dict[str, int] = {}
    docs: list[Document] = []
    try:
        for kind in [*_kinds(), *extra]:
            plural = kind.resource.plural
            source = f"cluster:{plural}"
            counts[plural] = 0
            item = 0
            for obj in _list_all(kind, kube, page_size, notes):
                counts[plural] += 1
                _progress(progress, counts)
                if kind.kind == "Pod" and not pending and not (obj.get("spec") or {}).get("nodeName"):
                    continue
                docs.append(Document(source, 1, obj, item))
                item += 1
    finally:
        kube.close()
        if progress is not None and counts:
            _progress(progress, counts, final=True)
            progress.write("\n")
            progress.flush()
    return docs


def _list_all(
    kind: _Kind, kube: Kube, page_size: int, notes: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    """Every object of `kind`, page after page; items get the List's apiVersion and their kind (the API server
    omits both on list items)."""
    from kubeio.kube import ApiError

    plural = kind.resource.plural
    try:
        pages = kube.pages(kind.resource, dict(kind.query), namespace=kind.namespace, page_size=page_size)
        for page in pages:
            items = page.get("items")
            if not isinstance(items, list):
                raise ClusterReadError(f"cannot list {plural}: the answer is not a {kind.kind}List")
            for obj in items:
                if isinstance(obj, dict):
                    obj.setdefault("apiVersion", page.get("apiVersion") or kind.resource.group_version)
                    obj.setdefault("kind", kind.kind)
                    yield obj
    except ApiError as exc:
        if kind.optional and exc.status == HTTPStatus.NOT_FOUND:
            if notes is not None:
                notes.append(f"note: the cluster serves no {plural}: read without them")
            return
        raise ClusterReadError(f"cannot list {plural}: {_api_reason(exc)}") from None


def _api_reason(exc: Any) -> str:
    """`403 Forbidden: <the Status message>`, as kubectl's `Error from server (Forbidden): ...` says it; no
    answer at all: what the connection said."""
    if exc.status == 0:
        return str(exc.message)
    reason = exc.reason
    if not reason:
        with contextlib.suppress(ValueError):
            reason = HTTPStatus(exc.status).phrase
    head = f"{exc.status} {reason}".strip()
    return f"{head}: {exc.message}" if exc.message else head


def _progress(stream: TextIO | None, counts: dict[str, int], final: bool = False) -> None:
    if stream is None:
        return
    total = sum(counts.values())
    if total % 100 and not final:
        return  # every 100 objects is enough for a person watching
    text = ", ".join(f"{n} {resource}" for resource, n in counts.items())
    stream.write(f"\rreading the cluster: {text}")
    stream.flush()
