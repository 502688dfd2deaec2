"""The cache `/mutate-pods` reads (webhook/podrouting/routing_cache.py), fed by two informers from the
kube-apiserver test double over HTTPS: cold until both lists are back, then following DeviceClasses and
Namespace labels."""

from __future__ import annotations

import time
from typing import Any

from kubeapi import KubeAPIServer
from support.gpu_cluster import RESOURCE, device_class
from support.waiting import wait_for

from kubeio.factory import InformerFactory
from kubeio.kube import Kube
from resourceapi.routing import ROUTING_LABEL
from webhook.podrouting.routing_cache import ClusterRoutingCache


def namespace(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_the_cache_is_cold_until_both_lists_are_back(kube_api: KubeAPIServer) -> None:
    cache = ClusterRoutingCache(InformerFactory(Kube.of_client(kube_api.api_client())))
    try:
        with kube_api.paused():
            cache.start()
            time.sleep(0.3)
            assert cache.routed_names() is None and cache.namespace_labels("default") is None
        wait_for("warm", lambda: cache.routed_names() is not None)
    finally:
        cache.stop()


def test_classes_and_namespace_labels_follow_the_cluster(kube_api: KubeAPIServer) -> None:
    kube_api.seed(device_class(carrier="annotation"))
    kube_api.seed(namespace("inference", {ROUTING_LABEL: "enabled"}))
    cache = ClusterRoutingCache(InformerFactory(Kube.of_client(kube_api.api_client())))
    cache.start()
    try:
        wait_for("warm", lambda: cache.routed_names() is not None)
        routed = cache.routed_names()
        assert routed is not None and RESOURCE in routed and "example.com/nic.5g" not in routed
        assert (cache.namespace_labels("inference") or {}).get(ROUTING_LABEL) == "enabled"
        kube_api.seed(device_class("other", carrier="annotation", resource="example.com/nic.5g"))
        kube_api.seed(namespace("batch", {}))
        wait_for("the new class", lambda: "example.com/nic.5g" in (cache.routed_names() or ()))
        wait_for("the new namespace", lambda: cache.namespace_labels("batch") is not None)
        assert ROUTING_LABEL not in (cache.namespace_labels("batch") or {})
        kube_api.delete("deviceclasses", "other")
        wait_for("the class gone", lambda: cache.routed_names() == routed)
    finally:
        cache.stop()
