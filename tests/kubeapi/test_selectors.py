"""Label selectors (staging/src/k8s.io/apimachinery/pkg/labels/selector.go) and the field selectors
controllers use (pkg/registry/core/pod/strategy.go ToSelectableFields / PodToSelectableFields, and
pkg/registry/resource/resourceslice/strategy.go)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap, pod


def test_label_selector_operators(kube_client: client.ApiClient) -> None:
    """`=`, `!=`, `in`, `notin`, existence and `!` absence."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map("default", configmap("a", labels={"tier": "web", "env": "prod"}))
    core.create_namespaced_config_map("default", configmap("b", labels={"tier": "db"}))
    core.create_namespaced_config_map("default", configmap("c"))

    def names(sel: str) -> list[str]:
        return [c.metadata.name for c in core.list_namespaced_config_map("default", label_selector=sel).items]

    assert names("tier=web") == ["a"]
    assert names("tier!=web") == ["b", "c"]
    assert names("tier in (web,db)") == ["a", "b"]
    assert names("tier notin (web)") == ["b", "c"]
    assert names("env") == ["a"]
    assert names("!env") == ["b", "c"]
    assert names("tier,env=prod") == ["a"]


def test_pod_field_selectors(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """spec.nodeName (empty for unscheduled), spec.schedulerName and metadata.name, as the scheduler and
    kubelet watch pods."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_pod("default", pod("unbound"))
    core.create_namespaced_pod("default", pod("bound", node="n1"))
    core.create_namespaced_pod("default", pod("other", schedulerName="dra-capacity"))

    def names(sel: str) -> list[str]:
        return [p.metadata.name for p in core.list_pod_for_all_namespaces(field_selector=sel).items]

    assert names("spec.nodeName=") == ["other", "unbound"]
    assert names("spec.nodeName=n1") == ["bound"]
    assert names("spec.schedulerName=dra-capacity") == ["other"]
    assert names("spec.schedulerName=default-scheduler,spec.nodeName!=") == ["bound"]
    assert names("metadata.name=bound") == ["bound"]


def test_resource_slice_field_selectors(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """ResourceSlices select on spec.nodeName and spec.driver."""
    for name, node_name in (("s1", "n1"), ("s2", "n2")):
        kube_api.seed(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": node_name,
                    "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [],
                },
            }
        )
    res = client.ResourceV1Api(kube_client)
    assert [s.metadata.name for s in res.list_resource_slice(field_selector="spec.nodeName=n2").items] == [
        "s2"
    ]
    assert len(res.list_resource_slice(field_selector="spec.driver=gpu.example.com").items) == 2


@pytest.mark.double_only("README disagreement 13: field selector message")
def test_unsupported_field_selector_is_bad_request(kube_client: client.ApiClient) -> None:
    """A field label the type does not index is a 400 `field label not supported`."""
    with pytest.raises(client.ApiException) as info:
        client.CoreV1Api(kube_client).list_namespaced_config_map("default", field_selector="data.k=v")
    assert info.value.status == 400
    assert json.loads(info.value.body)["message"] == "field label not supported: data.k"
