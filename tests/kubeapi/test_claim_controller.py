"""The resourceclaim controller of kube-controller-manager, emulated
(pkg/controller/resourceclaim/controller.go syncClaim): reservedFor cleanup, deallocation, delete-protection
finalizer removal, owned-claim deletion."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import allocation, claim, pod

FINALIZER = "resource.kubernetes.io/delete-protection"


def _reserved_claim(kube_api: KubeAPIServer, *pods: dict[str, Any], finalizer: bool = True) -> None:
    body = claim("c")
    if finalizer:
        body["metadata"]["finalizers"] = [FINALIZER]
    refs = [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]} for p in pods]
    kube_api.seed({**body, "status": {"allocation": allocation(), "reservedFor": refs}})


@pytest.mark.double_only("README disagreement 17: claims of pods that do not reference them")
def test_reservation_of_a_deleted_pod_is_removed(kube_api: KubeAPIServer) -> None:
    """A reservedFor entry whose pod is gone is dropped; the other consumer keeps it allocated."""
    a, b = kube_api.seed(pod("a", node="n1")), kube_api.seed(pod("b", node="n1"))
    _reserved_claim(kube_api, a, b)
    kube_api.delete("pods", "a")
    kube_api.wait_idle()
    stored = kube_api.get("resourceclaims", "c")
    assert stored is not None
    assert [r["name"] for r in stored["status"]["reservedFor"]] == ["b"]
    assert stored["status"]["allocation"] is not None and stored["metadata"]["finalizers"] == [FINALIZER]


@pytest.mark.double_only("README disagreement 17: claims of pods that do not reference them")
def test_reservation_of_a_finished_pod_is_removed_and_claim_deallocated(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """isPodDone (Succeeded/Failed): the last reservation goes, the allocation is cleared, then the
    finalizer."""
    p = kube_api.seed(pod("a", node="n1"))
    _reserved_claim(kube_api, p)
    client.CoreV1Api(kube_client).patch_namespaced_pod_status(
        "a", "default", {"status": {"phase": "Succeeded"}}
    )
    kube_api.wait_idle()
    stored = kube_api.get("resourceclaims", "c")
    assert stored is not None
    assert "reservedFor" not in stored["status"] and "allocation" not in stored["status"]
    assert "finalizers" not in stored["metadata"]


@pytest.mark.double_only("README disagreement 17: claims of pods that do not reference them")
def test_replaced_pod_with_new_uid_loses_the_reservation(kube_api: KubeAPIServer) -> None:
    """A pod recreated under the same name (other uid) is not the consumer any more."""
    old = kube_api.seed(pod("a", node="n1"))
    _reserved_claim(kube_api, old)
    kube_api.delete("pods", "a", grace_period_seconds=0)
    kube_api.seed(pod("a", node="n1"))
    kube_api.wait_idle()
    stored = kube_api.get("resourceclaims", "c")
    assert stored is not None and "reservedFor" not in stored["status"]


@pytest.mark.double_only("README disagreement 17: claims of pods that do not reference them")
def test_deleted_claim_goes_once_unreserved(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """A claim being deleted keeps the delete-protection finalizer while reserved and loses it afterwards."""
    p = kube_api.seed(pod("a", node="n1"))
    _reserved_claim(kube_api, p)
    client.ResourceV1Api(kube_client).delete_namespaced_resource_claim("c", "default")
    kube_api.wait_idle()
    held = kube_api.get("resourceclaims", "c")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    kube_api.delete("pods", "a")
    kube_api.wait_idle()
    assert kube_api.get("resourceclaims", "c") is None


def test_deleted_unreserved_allocated_claim_is_deallocated_and_released(kube_api: KubeAPIServer) -> None:
    """Deleting an allocated but unreserved claim: the controller clears the allocation, drops the
    finalizer."""
    _reserved_claim(kube_api)
    kube_api.delete("resourceclaims", "c")
    kube_api.wait_idle()
    assert kube_api.get("resourceclaims", "c") is None


@pytest.mark.double_only("README disagreement 17: claims of pods that do not reference them")
def test_claim_owned_by_a_finished_pod_is_deleted(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """An unreserved claim generated for a pod (controller ownerReference) goes when the pod is done."""
    p = kube_api.seed(pod("a", node="n1"))
    body = claim("c")
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "a", "uid": p["metadata"]["uid"], "controller": True}
    ]
    kube_api.seed(body)
    kube_api.wait_idle()
    assert kube_api.get("resourceclaims", "c") is not None
    client.CoreV1Api(kube_client).patch_namespaced_pod_status("a", "default", {"status": {"phase": "Failed"}})
    kube_api.wait_idle()
    assert kube_api.get("resourceclaims", "c") is None
