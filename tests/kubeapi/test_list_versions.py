"""LIST from a resourceVersion (api-concepts "Semantics for get and list";
staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go GetList, cacher/watch_cache.go
waitUntilFreshAndBlock):
Exact lists the state at that version, a continue token pages through the snapshot it was cut from, a
compacted version is 410, a version from the future is waited for and then 504."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap


def _names(items: list) -> list[str]:  # type: ignore[type-arg]
    return [c.metadata.name for c in items]


def test_exact_lists_the_past_state(kube_client: client.ApiClient) -> None:
    """resourceVersionMatch=Exact: objects as they were, including ones deleted or changed since."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map("default", configmap("a"))
    core.create_namespaced_config_map("default", configmap("b"))
    then = core.list_namespaced_config_map("default").metadata.resource_version
    core.delete_namespaced_config_map("a", "default")
    core.patch_namespaced_config_map("b", "default", {"data": {"k": "changed"}})
    core.create_namespaced_config_map("default", configmap("c"))
    past = core.list_namespaced_config_map("default", resource_version=then, resource_version_match="Exact")
    assert past.metadata.resource_version == then
    assert _names(past.items) == ["a", "b"] and past.items[1].data == {"k": "v"}
    now = core.list_namespaced_config_map(
        "default", resource_version=then, resource_version_match="NotOlderThan"
    )
    assert _names(now.items) == ["b", "c"]


def test_continue_pages_through_a_consistent_snapshot(kube_client: client.ApiClient) -> None:
    """Objects created or deleted between pages do not show up in the continued list."""
    core = client.CoreV1Api(kube_client)
    for n in ("a", "b", "c", "d"):
        core.create_namespaced_config_map("default", configmap(n))
    first = core.list_namespaced_config_map("default", limit=2)
    core.delete_namespaced_config_map("c", "default")
    core.create_namespaced_config_map("default", configmap("bb"))
    rest = core.list_namespaced_config_map("default", limit=10, _continue=first.metadata._continue)
    assert _names(first.items) + _names(rest.items) == ["a", "b", "c", "d"]
    assert rest.metadata.resource_version == first.metadata.resource_version


@pytest.mark.double_only("double hook: compact")
def test_compacted_version_is_410(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """Exact at a compacted version: 410 Expired `The resourceVersion for the provided list is too old.`;
    a compacted continue token: 410 with a token that continues at the current state."""
    core = client.CoreV1Api(kube_client)
    for n in ("a", "b", "c"):
        core.create_namespaced_config_map("default", configmap(n))
    then = core.list_namespaced_config_map("default").metadata.resource_version
    first = core.list_namespaced_config_map("default", limit=1)
    core.create_namespaced_config_map("default", configmap("d"))
    kube_api.compact()
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_config_map("default", resource_version=then, resource_version_match="Exact")
    body = json.loads(info.value.body)
    assert (info.value.status, body["reason"]) == (410, "Expired")
    assert body["message"] == "The resourceVersion for the provided list is too old."
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_config_map("default", limit=1, _continue=first.metadata._continue)
    body = json.loads(info.value.body)
    assert info.value.status == 410 and body["message"].startswith(
        "The provided continue parameter is too old"
    )
    inconsistent = core.list_namespaced_config_map("default", _continue=body["metadata"]["continue"])
    assert _names(inconsistent.items) == ["b", "c", "d"]


@pytest.mark.double_only("double hook: revision")
def test_future_version_waits_then_times_out(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """A version not reached yet is waited for; if it never comes: 504 `Too large resource version`."""
    core = client.CoreV1Api(kube_client)
    future = kube_api.revision + 1
    timer = threading.Timer(0.3, lambda: kube_api.seed(configmap("late")))
    timer.start()
    out = core.list_namespaced_config_map("default", resource_version=str(future))
    timer.join()
    assert _names(out.items) == ["late"]
    far = kube_api.revision + 100
    kube_api.api.freshness_wait = 0.2
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_config_map("default", resource_version=str(far))
    body = json.loads(info.value.body)
    assert info.value.status == 504 and body["reason"] == "Timeout"
    assert body["message"] == f"Too large resource version: {far}, current: {kube_api.revision}"
    assert body["details"]["retryAfterSeconds"] == 1


def test_match_without_version_is_invalid(kube_api: KubeAPIServer) -> None:
    """ValidateListOptions: resourceVersionMatch is forbidden unless resourceVersion is provided."""
    out = kube_api.http("GET", "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact")
    assert out.status == 422 and out.body["details"]["causes"][0]["field"] == "resourceVersionMatch"
