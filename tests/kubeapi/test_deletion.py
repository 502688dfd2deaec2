"""Finalizers, deletionTimestamp, graceful pod deletion, propagationPolicy and garbage collection
(staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go Delete and
updateForGracefulDeletionAndFinalizers,
pkg/registry/core/pod/strategy.go CheckGracefulTermination,
pkg/controller/garbagecollector/garbagecollector.go,
pkg/controller/namespace/deletion/namespaced_resources_deleter.go)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch

from kubeapi import KubeAPIServer
from kubeapi.objects import claim, configmap, pod


def test_finalizers_keep_the_object_with_deletion_timestamp(
    kube_api: KubeAPIServer, core: client.CoreV1Api
) -> None:
    """Delete of an object with finalizers only sets deletionTimestamp; removing the last finalizer deletes
    it."""
    core.create_namespaced_config_map(
        "default", {**configmap("f"), "metadata": {"name": "f", "finalizers": ["example.com/x"]}}
    )
    out = core.delete_namespaced_config_map("f", "default")
    stored = kube_api.get("configmaps", "f")
    assert stored is not None and stored["metadata"]["deletionTimestamp"]
    assert stored["metadata"]["deletionGracePeriodSeconds"] == 0
    assert out["metadata"]["deletionTimestamp"] == stored["metadata"]["deletionTimestamp"]
    core.patch_namespaced_config_map(
        "f", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/x"]}}
    )
    assert kube_api.get("configmaps", "f") is None


def test_no_new_finalizers_while_deleting(core: client.CoreV1Api) -> None:
    """ValidateObjectMetaUpdate: `no new finalizers can be added if the object is being deleted`."""
    core.create_namespaced_config_map("default", {"metadata": {"name": "f", "finalizers": ["a.io/x"]}})
    core.delete_namespaced_config_map("f", "default")
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_config_map("f", "default", {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}})
    assert info.value.status == 422
    assert 'found new finalizers []string{"b.io/y"}' in json.loads(info.value.body)["message"]


@pytest.mark.double_only("double hook: its kubelet emulation (kwok does it for real)")
def test_bound_pod_deletion_is_graceful_then_finished_by_the_kubelet(
    kube_api: KubeAPIServer, core: client.CoreV1Api
) -> None:
    """A bound pod gets deletionTimestamp + grace period (MODIFIED), then the kubelet's grace-0 delete
    shortens the grace period (MODIFIED) and removes it (DELETED)."""
    core.create_namespaced_pod("default", pod("g", node="n1"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.delete_namespaced_pod("g", "default")
    kube_api.wait_idle()
    w = watch.Watch()
    events = []
    for ev in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.deletion_grace_period_seconds))
        if ev["type"] == "DELETED":
            w.stop()
    assert events == [("MODIFIED", 30), ("MODIFIED", 0), ("DELETED", 0)]


@pytest.mark.double_only("double hook: controllers")
def test_pod_stays_terminating_without_kubelet(kube_api: KubeAPIServer, core: client.CoreV1Api) -> None:
    """Without the kubelet emulation a bound pod stays with deletionTimestamp until deleted with grace 0."""
    kube_api.controllers.kubelet_finishes_deletion = False
    core.create_namespaced_pod("default", pod("t", node="n1"))
    core.delete_namespaced_pod("t", "default", grace_period_seconds=10)
    kube_api.wait_idle()
    stored = kube_api.get("pods", "t")
    assert stored is not None and stored["metadata"]["deletionGracePeriodSeconds"] == 10
    core.delete_namespaced_pod("t", "default", grace_period_seconds=0)
    assert kube_api.get("pods", "t") is None


@pytest.mark.double_only("double hook: controllers")
def test_unscheduled_pod_is_deleted_at_once(kube_api: KubeAPIServer, core: client.CoreV1Api) -> None:
    """CheckGracefulTermination: a pod with no nodeName needs no grace period."""
    kube_api.controllers.kubelet_finishes_deletion = False
    core.create_namespaced_pod("default", pod("u"))
    core.delete_namespaced_pod("u", "default")
    assert kube_api.get("pods", "u") is None


def _owned_by(body: dict, owner: dict, kind: str, block: bool, **controller: bool) -> dict:  # type: ignore[type-arg]
    """`body` with one v1 owner reference to `owner` (a `kind`), `controller=True` if given, then
    `blockOwnerDeletion`."""
    ref = {
        "apiVersion": "v1",
        "kind": kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    body["metadata"]["ownerReferences"] = [{**ref, **controller, "blockOwnerDeletion": block}]
    return body


def _owned_claim(owner: dict, name: str = "c", block: bool = False) -> dict:  # type: ignore[type-arg]
    return _owned_by(claim(name), owner, "Pod", block, controller=True)


def test_garbage_collector_deletes_claims_of_a_deleted_pod(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """Background propagation: a claim whose only owner is gone is deleted by the garbage collector."""
    owner = kube_api.seed(pod("owner"))
    client.ResourceV1Api(kube_client).create_namespaced_resource_claim("default", _owned_claim(owner))
    client.CoreV1Api(kube_client).delete_namespaced_pod("owner", "default")
    kube_api.wait_idle()
    assert kube_api.get("resourceclaims", "c") is None


def _owned_configmap(owner: dict, name: str = "dep", block: bool = False) -> dict:  # type: ignore[type-arg]
    return _owned_by(configmap(name), owner, "ConfigMap", block)


def test_orphan_propagation_keeps_dependents(kube_api: KubeAPIServer, core: client.CoreV1Api) -> None:
    """propagationPolicy Orphan: dependents lose the owner reference and stay."""
    owner = kube_api.seed(configmap("owner"))
    core.create_namespaced_config_map("default", _owned_configmap(owner))
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")
    kube_api.wait_idle()
    left = kube_api.get("configmaps", "dep")
    assert kube_api.get("configmaps", "owner") is None
    assert left is not None and "ownerReferences" not in left["metadata"]


def test_foreground_propagation_deletes_dependents_first(
    kube_api: KubeAPIServer, core: client.CoreV1Api
) -> None:
    """propagationPolicy Foreground: the owner carries foregroundDeletion until blocking dependents are
    gone."""
    owner = kube_api.seed(configmap("owner"))
    dep = _owned_configmap(owner, block=True)
    dep["metadata"]["finalizers"] = ["example.com/hold"]
    core.create_namespaced_config_map("default", dep)
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")
    kube_api.wait_idle()
    held = kube_api.get("configmaps", "owner")
    assert held is not None and "foregroundDeletion" in held["metadata"]["finalizers"]
    gone = kube_api.get("configmaps", "dep")
    assert gone is not None and gone["metadata"]["deletionTimestamp"]
    core.patch_namespaced_config_map(
        "dep", "default", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/hold"]}}
    )
    kube_api.wait_idle()
    assert kube_api.get("configmaps", "dep") is None and kube_api.get("configmaps", "owner") is None


@pytest.mark.double_only("double hook: wait_idle (a real namespace empties in seconds)")
def test_namespace_deletion_removes_its_contents(kube_api: KubeAPIServer, core: client.CoreV1Api) -> None:
    """A namespace goes Terminating, its objects are deleted, then the namespace itself."""
    core.create_namespace({"metadata": {"name": "gone"}})
    core.create_namespaced_config_map("gone", configmap("x", "gone"))
    ns = core.delete_namespace("gone")
    assert ns["status"]["phase"] == "Terminating"
    kube_api.wait_idle()
    assert kube_api.get("configmaps", "x", "gone") is None
    assert kube_api.get("namespaces", "gone") is None


def test_create_in_terminating_namespace_is_forbidden(
    kube_api: KubeAPIServer, core: client.CoreV1Api
) -> None:
    """NamespaceLifecycle: 403 `unable to create new content in namespace x because it is being
    terminated`."""
    core.create_namespace({"metadata": {"name": "t"}})
    core.create_namespaced_config_map("t", {"metadata": {"name": "hold", "finalizers": ["a.io/x"]}})
    core.delete_namespace("t")
    kube_api.wait_idle()
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_config_map("t", configmap("new", "t"))
    assert info.value.status == 403
    assert "because it is being terminated" in json.loads(info.value.body)["message"]
