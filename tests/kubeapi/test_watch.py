"""WATCH as the watch cache serves it (staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go and
watch_cache.go; api-concepts "Efficient detection of changes"), consumed with the real
`kubernetes.watch.Watch`."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, watch

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap, node, pod


def test_watch_from_resource_version_sees_added_modified_deleted(kube_client: client.ApiClient) -> None:
    """Events after the given resourceVersion, in order, with the objects' new resourceVersions."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", configmap("w"))
    core.patch_namespaced_config_map("w", "default", {"data": {"k": "2"}})
    core.delete_namespaced_config_map("w", "default")
    w = watch.Watch()
    seen = []
    for ev in w.stream(core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version))
        if len(seen) == 3:
            w.stop()
    assert [s[0] for s in seen] == ["ADDED", "MODIFIED", "DELETED"]
    versions = [int(s[2]) for s in seen]
    assert versions == sorted(versions) and int(rv) < versions[0]


def test_watch_without_resource_version_starts_with_current_state(kube_client: client.ApiClient) -> None:
    """resourceVersion unset or "0": synthetic ADDED events for every existing object first."""
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_config_map("default", configmap("one"))
    core.create_namespaced_config_map("default", configmap("two"))
    w = watch.Watch()
    names = []
    for ev in w.stream(core.list_namespaced_config_map, "default", timeout_seconds=5):
        names.append((ev["type"], ev["object"].metadata.name))
        if len(names) == 2:
            w.stop()
    assert names == [("ADDED", "one"), ("ADDED", "two")]


def test_watch_receives_live_events(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """A watch stays open and streams changes made after it started."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_pod("default").metadata.resource_version
    timer = threading.Timer(0.2, lambda: kube_api.seed(pod("live")))
    timer.start()
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5):
        assert (ev["type"], ev["object"].metadata.name) == ("ADDED", "live")
        w.stop()
    timer.join()


@pytest.mark.double_only("double hook: compact")
def test_too_old_resource_version_is_410_gone(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """A version older than the history is an ERROR event with 410 Expired `too old resource version`."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", configmap("a"))
    kube_api.compact()
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version=rv, timeout_seconds=2, _preload_content=False
    )
    line = resp.readline()
    ev = json.loads(line)
    assert ev["type"] == "ERROR"
    assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
    assert ev["object"]["message"].startswith(f"too old resource version: {rv} (")
    resp.release_conn()
    # The client's Watch retries once on 410 and then raises, as tooling notes say: relist on 410.
    with pytest.raises(client.ApiException) as info:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=2
        ):
            pass
    assert info.value.status == 410


@pytest.mark.double_only("double hook: api")
def test_bookmarks_when_asked(kube_api: KubeAPIServer, kube_client: client.ApiClient) -> None:
    """allowWatchBookmarks: BOOKMARK events carry only the current resourceVersion (watch.Bookmark)."""
    kube_api.api.bookmark_interval = 0.1
    core = client.CoreV1Api(kube_client)
    rv = core.list_node().metadata.resource_version
    resp = core.list_node(
        watch=True, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=2, _preload_content=False
    )
    ev = json.loads(resp.readline())
    resp.release_conn()
    assert ev["type"] == "BOOKMARK"
    assert ev["object"]["kind"] == "Node" and int(ev["object"]["metadata"]["resourceVersion"]) >= int(rv)
    assert set(ev["object"]["metadata"]) == {"resourceVersion", "creationTimestamp"}


def test_send_initial_events_ends_with_marked_bookmark(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """sendInitialEvents=true: the current state, then a BOOKMARK annotated `k8s.io/initial-events-end:
    "true"`."""
    kube_api.seed(node("n1"))
    core = client.CoreV1Api(kube_client)
    resp = core.list_node(
        watch=True,
        send_initial_events=True,
        allow_watch_bookmarks=True,
        resource_version_match="NotOlderThan",
        timeout_seconds=2,
        _preload_content=False,
    )
    first = json.loads(resp.readline())
    second = json.loads(resp.readline())
    resp.release_conn()
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "n1")
    assert second["type"] == "BOOKMARK"
    assert second["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_object_leaving_the_selector_is_deleted_for_the_watch(kube_client: client.ApiClient) -> None:
    """cacheWatcher.convertToWatchEvent: an update moving an object out of the selector is DELETED."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", configmap("s", labels={"app": "a"}))
    core.patch_namespaced_config_map("s", "default", {"metadata": {"labels": {"app": "b"}}})
    w = watch.Watch()
    types = []
    for ev in w.stream(
        core.list_namespaced_config_map,
        "default",
        resource_version=rv,
        label_selector="app=a",
        timeout_seconds=5,
    ):
        types.append(ev["type"])
        if len(types) == 2:
            w.stop()
    assert types == ["ADDED", "DELETED"]


def test_watch_timeout_seconds_ends_the_stream(kube_client: client.ApiClient) -> None:
    """timeoutSeconds closes the watch; the client's stream ends without error."""
    core = client.CoreV1Api(kube_client)
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=1
        )
    )
    assert events == []


@pytest.mark.double_only("double hook: api")
def test_watch_from_a_future_version_waits_for_it(
    kube_api: KubeAPIServer, kube_client: client.ApiClient
) -> None:
    """waitUntilFreshAndBlock: a watch from a version not reached yet starts once it is reached; if it is not
    reached, an ERROR event with 504 `Too large resource version`."""
    core = client.CoreV1Api(kube_client)
    kube_api.api.freshness_wait = 0.2
    far = kube_api.revision + 100
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version=str(far), timeout_seconds=2, _preload_content=False
    )
    ev = json.loads(resp.readline())
    resp.release_conn()
    assert ev["type"] == "ERROR" and ev["object"]["code"] == 504
    assert ev["object"]["message"].startswith(f"Too large resource version: {far}, current: ")
