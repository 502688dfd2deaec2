"""Optimistic concurrency under concurrent writers (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go
GuaranteedUpdate): patches without a resourceVersion are retried and never lose an update; replaces that
carry the same resourceVersion race and exactly one wins."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from kubeapi import KubeAPIServer
from kubeapi.objects import configmap


@pytest.mark.double_only("double hook: revision")
def test_concurrent_patches_lose_nothing(kube_api: KubeAPIServer) -> None:
    """8 writers x 5 merge patches on one object: all 40 keys land, and every write bumped the version."""
    kube_api.seed(configmap("shared"))
    start = kube_api.revision

    def writer(w: int) -> None:
        api = kube_api.api_client()
        core = client.CoreV1Api(api)
        for i in range(5):
            core.patch_namespaced_config_map("shared", "default", {"data": {f"w{w}-{i}": "x"}})
        api.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(writer, range(8)))
    stored = kube_api.get("configmaps", "shared")
    assert stored is not None and len(stored["data"]) == 41
    assert kube_api.revision - start == 40


def test_racing_replaces_one_wins(kube_api: KubeAPIServer) -> None:
    """Replaces carrying the same resourceVersion: one succeeds, the others get 409 Conflict."""
    kube_api.seed(configmap("race"))
    base = kube_api.get("configmaps", "race")
    assert base is not None
    barrier = threading.Barrier(6)
    results: list[int] = []

    def replace(n: int) -> None:
        api = kube_api.api_client()
        body = {**base, "data": {"winner": str(n)}}
        barrier.wait()
        try:
            client.CoreV1Api(api).replace_namespaced_config_map("race", "default", body)
            results.append(200)
        except client.ApiException as e:
            results.append(e.status)
        api.close()

    threads = [threading.Thread(target=replace, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [200, 409, 409, 409, 409, 409]
