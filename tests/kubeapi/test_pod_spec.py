"""Pod spec validation on create and update (pkg/apis/core/validation/validation.go ValidatePodSpec,
ValidatePodUpdate): a client cannot bind a pod by writing spec.nodeName; it must use pods/binding."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import pod


def test_pod_needs_a_container(kube_api: KubeAPIServer) -> None:
    """`spec.containers: Required value`."""
    out = kube_api.http("POST", "/api/v1/namespaces/default/pods", {"metadata": {"name": "p"}, "spec": {}})
    assert out.status == 422
    assert out.body["details"]["causes"] == [
        {"reason": "FieldValueRequired", "field": "spec.containers", "message": "Required value"}
    ]


def test_container_names_are_unique_dns_labels(kube_api: KubeAPIServer) -> None:
    """Container names are DNS labels, unique across init and regular containers."""
    spec = {
        "containers": [
            {"name": "c", "image": "i"},
            {"name": "c", "image": "i"},
            {"name": "Bad", "image": "i"},
        ]
    }
    out = kube_api.http("POST", "/api/v1/namespaces/default/pods", {"metadata": {"name": "p"}, "spec": spec})
    assert [c["field"] for c in out.body["details"]["causes"]] == [
        "spec.containers[1].name",
        "spec.containers[2].name",
    ]


@pytest.mark.double_only("README disagreement 11: pod update message")
def test_spec_node_name_cannot_be_patched(kube_client: client.ApiClient) -> None:
    """`spec: Forbidden: pod updates may not change fields other than ...`: binding is a subresource."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_pod("default", pod("p"))
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod("p", "default", {"spec": {"nodeName": "n1"}})
    body = json.loads(info.value.body)
    assert info.value.status == 422
    assert body["details"]["causes"][0]["field"] == "spec"
    assert body["message"].startswith(
        'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`"
    )
    assert "spec.nodeName" in body["message"]


def test_image_tolerations_and_gates_may_change(kube_client: client.ApiClient) -> None:
    """Images, added tolerations and removed scheduling gates are updatable."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_pod("default", pod("p", schedulingGates=[{"name": "example.com/wait"}]))
    core.patch_namespaced_pod(
        "p", "default", {"spec": {"containers": [{"name": "c", "image": "registry.example/app:2"}]}}
    )
    core.patch_namespaced_pod("p", "default", {"spec": {"tolerations": [{"key": "k", "operator": "Exists"}]}})
    out = core.patch_namespaced_pod("p", "default", {"spec": {"schedulingGates": None}})
    assert out.spec.containers[0].image == "registry.example/app:2"
    assert out.spec.scheduling_gates is None and out.spec.tolerations[0].key == "k"
    assert out.metadata.generation == 4


def test_a_gated_pod_is_created_with_the_scheduling_gated_condition(kube_client: client.ApiClient) -> None:
    """applySchedulingGatedCondition (pkg/registry/core/pod/strategy.go): PodScheduled=False,
    SchedulingGated."""
    core = client.CoreV1Api(kube_client)
    gated = core.create_namespaced_pod("default", pod("g", schedulingGates=[{"name": "example.com/wait"}]))
    [cond] = gated.status.conditions
    assert (cond.type, cond.status, cond.reason) == ("PodScheduled", "False", "SchedulingGated")
    assert cond.message == "Scheduling is blocked due to non-empty scheduling gates"
    assert core.create_namespaced_pod("default", pod("free")).status.conditions is None
