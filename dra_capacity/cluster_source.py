"""`simulate --kubeconfig`: a cluster's current state, read with paginated LIST calls (never a write).

Nodes, ResourceSlices, DeviceClasses, ResourceClaims and Pods are listed through the official `kubernetes`
client in pages of `limit` objects, following `metadata.continue` as `kubectl get --chunk-size` does
(k8s.io/client-go/tools/pager/pager.go). The raw JSON of each page is kept (`_preload_content=False`): the
objects reach `simulate` exactly as `kubectl get -o json` would print them, without the client's model classes
in between. Only this module of the command-line layer imports `kubernetes`, and only when a cluster is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from dra_capacity.kubeclient import ClusterConfigError, api_client
from resourceapi.documents import Document

DEFAULT_PAGE_SIZE = 500  # kubectl's default --chunk-size


class ClusterReadError(RuntimeError):
    """The cluster could not be read (configuration, connection, authorization); the message says which."""


@dataclass(frozen=True)
class _Kind:
    kind: str
    api_version: str
    resource: str  # plural, for messages and the progress line
    lister: Callable[[Any], Callable[..., Any]]


def _kinds() -> list[_Kind]:
    from kubernetes import client

    return [
        _Kind("Node", "v1", "nodes", lambda api: client.CoreV1Api(api).list_node),
        _Kind(
            "ResourceSlice",
            "resource.k8s.io/v1",
            "resourceslices",
            lambda api: client.ResourceV1Api(api).list_resource_slice,
        ),
        _Kind(
            "DeviceClass",
            "resource.k8s.io/v1",
            "deviceclasses",
            lambda api: client.ResourceV1Api(api).list_device_class,
        ),
        _Kind(
            "ResourceClaim",
            "resource.k8s.io/v1",
            "resourceclaims",
            lambda api: client.ResourceV1Api(api).list_resource_claim_for_all_namespaces,
        ),
        _Kind("Pod", "v1", "pods", lambda api: client.CoreV1Api(api).list_pod_for_all_namespaces),
    ]


def read_cluster(
    kubeconfig: str | None,
    context: str | None,
    *,
    pending: bool,
    page_size: int = DEFAULT_PAGE_SIZE,
    progress: TextIO | None = None,
) -> list[Document]:
    """Every object simulate reads, as Documents named `cluster:<resource>` (document 1, items[i]).

    Pods without `spec.nodeName` (pending) are kept only with `pending`: otherwise the pods to place come from
    the files, and the cluster's own pending pods hold nothing yet."""
    try:
        api = api_client(kubeconfig, context, kubectl_defaults=True)
    except ClusterConfigError as exc:
        raise ClusterReadError(str(exc)) from None
    counts: dict[str, int] = {}
    docs: list[Document] = []
    try:
        for kind in _kinds():
            source = f"cluster:{kind.resource}"
            counts[kind.resource] = 0
            item = 0
            for obj in _list_all(kind, api, page_size):
                counts[kind.resource] += 1
                _progress(progress, counts)
                if kind.kind == "Pod" and not pending and not (obj.get("spec") or {}).get("nodeName"):
                    continue
                docs.append(Document(source, 1, obj, item))
                item += 1
    finally:
        api.close()
        if progress is not None and counts:
            _progress(progress, counts, final=True)
            progress.write("\n")
            progress.flush()
    return docs


def _list_all(kind: _Kind, api: Any, page_size: int) -> Iterator[dict[str, Any]]:
    """One LIST page after another until `metadata.continue` is empty; items get the List's apiVersion and
    their kind (the API server omits both on list items)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    lister = kind.lister(api)
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": page_size, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        try:
            response = lister(**kwargs)
            page = json.loads(response.data)
        except ApiException as exc:
            raise ClusterReadError(f"cannot list {kind.resource}: {_api_reason(exc)}") from None
        except HTTPError as exc:
            raise ClusterReadError(f"cannot list {kind.resource}: {exc}") from None
        except ValueError as exc:
            raise ClusterReadError(f"cannot list {kind.resource}: the response is not JSON: {exc}") from None
        for obj in page.get("items") or []:
            obj.setdefault("apiVersion", page.get("apiVersion") or kind.api_version)
            obj.setdefault("kind", kind.kind)
            yield obj
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return


def _api_reason(exc: Any) -> str:
    """`403 Forbidden: <the Status message>`, as kubectl's `Error from server (Forbidden): ...` says it."""
    message = ""
    try:
        message = str(json.loads(exc.body).get("message") or "")
    except (TypeError, ValueError, AttributeError):
        message = ""
    head = f"{exc.status} {exc.reason}".strip()
    return f"{head}: {message}" if message else head


def _progress(stream: TextIO | None, counts: dict[str, int], final: bool = False) -> None:
    if stream is None:
        return
    total = sum(counts.values())
    if total % 100 and not final:
        return  # every 100 objects is enough for a person watching
    text = ", ".join(f"{n} {resource}" for resource, n in counts.items())
    stream.write(f"\rreading the cluster: {text}")
    stream.flush()
