"""Status subresources and pods/binding.

pkg/registry/core/pod/strategy.go (podStrategy, podStatusStrategy),
pkg/registry/resource/resourceclaim/strategy.go
(resourceclaimStrategy, resourceclaimStatusStrategy) and BindingREST in
pkg/registry/core/pod/storage/storage.go.
"""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import allocation, claim, pod


def test_pod_create_resets_status_to_pending(kube_client: client.ApiClient) -> None:
    """podStrategy.PrepareForCreate: status is {phase: Pending, qosClass} whatever the client sent."""
    body = {**pod("p"), "status": {"phase": "Running", "podIP": "10.0.0.1"}}
    out = client.CoreV1Api(kube_client).create_namespaced_pod("default", body)
    assert out.status.phase == "Pending" and out.status.pod_ip is None
    assert out.status.qos_class == "BestEffort"


def test_main_endpoint_ignores_status(core: client.CoreV1Api) -> None:
    """PrepareForUpdate copies the old status: a PUT/PATCH of pods cannot change it."""
    core.create_namespaced_pod("default", pod("p"))
    out = core.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Running"}}
    )
    assert out.status.phase == "Pending" and out.metadata.labels == {"a": "b"}


def test_status_endpoint_ignores_spec(core: client.CoreV1Api) -> None:
    """podStatusStrategy.PrepareForUpdate: spec and ownerReferences come from the old object."""
    core.create_namespaced_pod("default", pod("p"))
    out = core.patch_namespaced_pod_status(
        "p",
        "default",
        {
            "spec": {"nodeName": "sneaky"},
            "status": {"phase": "Running"},
            "metadata": {"labels": {"via": "status"}},
        },
    )
    assert out.status.phase == "Running"
    assert out.spec.node_name is None
    assert out.metadata.labels == {"via": "status"}  # pods/status may change labels


def test_claim_status_endpoint_resets_metadata(kube_client: client.ApiClient) -> None:
    """resourceclaimStatusStrategy: metav1.ResetObjectMetaForStatus keeps labels, annotations, finalizers."""
    res = client.ResourceV1Api(kube_client)
    res.create_namespaced_resource_claim("default", claim("c"))
    out = res.patch_namespaced_resource_claim_status(
        "c",
        "default",
        {"metadata": {"labels": {"x": "y"}, "finalizers": ["a/b"]}, "status": {"allocation": allocation()}},
    )
    assert out.status.allocation is not None
    assert out.metadata.labels is None and out.metadata.finalizers is None


def test_claim_create_wipes_status(kube_client: client.ApiClient) -> None:
    """resourceclaimStrategy.PrepareForCreate: `claim.Status = resource.ResourceClaimStatus{}`."""
    body = {**claim("c"), "status": {"allocation": allocation()}}
    out = client.ResourceV1Api(kube_client).create_namespaced_resource_claim("default", body)
    assert out.status is None or out.status.allocation is None


def test_binding_sets_node_name_and_scheduled_condition(
    kube_api: KubeAPIServer, core: client.CoreV1Api
) -> None:
    """BindingREST.Create → setPodNodeAndMetadata: spec.nodeName, binding annotations, PodScheduled=True."""
    core.create_namespaced_pod("default", pod("b"))
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b", "annotations": {"x": "1"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }
    resp = core.create_namespaced_pod_binding("b", "default", body, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data)["status"] == "Success"
    stored = kube_api.get("pods", "b")
    assert stored is not None
    assert stored["spec"]["nodeName"] == "n1"
    assert stored["metadata"]["annotations"] == {"x": "1"}
    assert [c["type"] for c in stored["status"]["conditions"] if c["status"] == "True"] == ["PodScheduled"]


def test_binding_a_bound_pod_is_conflict(core: client.CoreV1Api) -> None:
    """assignPod: `pod x is already assigned to node "n"` as a 409 Conflict on pods/binding."""
    core.create_namespaced_pod("default", pod("b", node="n1"))
    body = {"metadata": {"name": "b"}, "target": {"kind": "Node", "name": "n2"}}
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod_binding("b", "default", body, _preload_content=False)
    assert info.value.status == 409
    assert json.loads(info.value.body)["message"] == (
        'Operation cannot be fulfilled on pods/binding "b": pod b is already assigned to node "n1"'
    )


def test_binding_a_missing_pod_is_not_found(kube_client: client.ApiClient) -> None:
    """The binding's pod must exist: 404 NotFound for pods."""
    body = {"metadata": {"name": "ghost"}, "target": {"kind": "Node", "name": "n"}}
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(kube_client).create_namespaced_pod_binding(
            "ghost", "default", body, _preload_content=False
        )
    assert info.value.status == 404
