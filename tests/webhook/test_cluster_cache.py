"""The webhook's cluster view of ResourceSlices and DeviceClasses (webhook/clusterview/cluster_cache.py),
against the kube-apiserver test double over HTTPS (tests/kubeapi), with the official `kubernetes` client. The
informers under it (paging, resuming a dropped watch, relisting on 410 Gone) are tested in
tests/kubeio/test_informer.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubeapi import KubeAPIServer
from support.cluster_objects import gpu_slice, review

from kubeio.factory import InformerFactory
from kubeio.kube import Kube
from resourceapi.gates import FeatureGates
from webhook.clusterview.cluster_cache import ClusterCache
from webhook.deviceclass.admission import DeviceClassAdmission


def informers_of(api: KubeAPIServer) -> InformerFactory:
    return InformerFactory(Kube.of_client(api.api_client()))


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


@pytest.fixture
def cache(kube_api: KubeAPIServer) -> Iterator[ClusterCache]:
    kube_api.seed(gpu_slice("node-1"))
    c = ClusterCache(informers_of(kube_api))
    c.start()
    assert c.wait_synced(10)
    yield c
    c.stop()


def test_the_first_view_holds_what_was_listed(cache: ClusterCache) -> None:
    view = cache.view()
    assert view is not None
    assert [d.name for d in view.devices] == ["gpu-0", "gpu-1"]


def test_a_new_slice_reaches_a_new_view(kube_api: KubeAPIServer, cache: ClusterCache) -> None:
    kube_api.seed(gpu_slice("node-2", gpus=3))
    wait_for(lambda: (v := cache.view()) is not None and len(v.devices) == 5)


def test_a_deleted_slice_leaves_the_view(kube_api: KubeAPIServer, cache: ClusterCache) -> None:
    kube_api.delete("resourceslices", "node-1-gpus")
    wait_for(lambda: (v := cache.view()) is not None and len(v.devices) == 0)


def test_a_failed_watch_skips_the_warnings_until_the_watch_is_back(
    kube_api: KubeAPIServer, cache: ClusterCache
) -> None:
    """A view that may be stale says nothing: None from the failure until the informer is current again."""
    kube_api.faults.fail("watch", "resourceslices", 500, times=2)
    kube_api.drop_watches("resourceslices.resource.k8s.io")
    wait_for(lambda: cache.view() is None)
    kube_api.seed(gpu_slice("node-5", gpus=1))
    wait_for(lambda: (v := cache.view()) is not None and len(v.devices) == 3)


def test_admission_warns_from_the_cache(cache: ClusterCache) -> None:
    admission = DeviceClassAdmission(FeatureGates.defaults(), cluster=cache.view)
    outcome = admission.validate(review({"shraes": "1"}))
    assert outcome.response["allowed"] is True
    assert outcome.cluster == "used"
    assert any('no device has capacity "shraes"' in w for w in outcome.response["warnings"])


def test_a_cold_cache_skips_the_warnings_without_waiting(kube_api: KubeAPIServer) -> None:
    with kube_api.paused():  # the API server answers nothing: the cache stays cold
        c = ClusterCache(informers_of(kube_api))
        c.start()
        admission = DeviceClassAdmission(FeatureGates.defaults(), cluster=c.view)
        start = time.perf_counter()
        outcome = admission.validate(review({"shraes": "1"}))
        elapsed = time.perf_counter() - start
        assert outcome.cluster == "cold"
        assert "warnings" not in outcome.response
        assert elapsed < 0.5
    c.stop()


def shares_class() -> dict[str, Any]:
    obj = review({"shares": "1"})["object"]
    obj["metadata"]["name"] = "gpu-shared"
    return dict(obj)


def test_a_republished_slice_that_strands_a_class_gets_one_event_on_it(kube_api: KubeAPIServer) -> None:
    """The driver republishes its slice without the `shares` capacity: every pod of the class would pend."""
    from webhook.clusterview.cluster_cache import event_sink
    from webhook.deviceclass.class_events import REASON, ClassEvents

    kube_api.seed(gpu_slice("node-1"))
    kube_api.seed(shares_class())
    api = kube_api.api_client()
    sent: list[dict[str, Any]] = []
    events = ClassEvents(FeatureGates.defaults(), event_sink(Kube.of_client(api)))

    def on_view(view: Any) -> None:
        sent.extend(events.on_view(view))

    cache = ClusterCache(InformerFactory(Kube.of_client(api)), on_view=on_view)
    cache.start()
    try:
        assert cache.wait_synced(10)
        time.sleep(0.5)
        assert sent == []  # the class is fine as published
        stranded = gpu_slice("node-1")
        for device in stranded["spec"]["devices"]:
            del device["capacity"]["shares"]
        stored = kube_api.get("resourceslices", "node-1-gpus")
        assert stored is not None
        stranded["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        kube_api.update(stranded)
        wait_for(lambda: len(kube_api.list("events.events.k8s.io", namespace="default")) == 1)
        (event,) = kube_api.list("events.events.k8s.io", namespace="default")
        assert event["reason"] == REASON and event["type"] == "Warning"
        assert event["regarding"]["kind"] == "DeviceClass" and event["regarding"]["name"] == "gpu-shared"
        assert event["note"].startswith('DeviceClass gpu-shared: no device has capacity "shares"')
        kube_api.seed(gpu_slice("node-9", gpus=0))  # another change: the same finding is not sent again
        time.sleep(0.6)
        assert len(kube_api.list("events.events.k8s.io", namespace="default")) == 1
    finally:
        cache.stop()


def test_a_second_replica_reporting_the_same_finding_creates_no_second_event(kube_api: KubeAPIServer) -> None:
    from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
    from webhook.clusterview.cluster_cache import event_sink
    from webhook.clusterview.cluster_view import ClusterView
    from webhook.deviceclass.class_events import ClassEvents

    slice_ = gpu_slice("node-1")
    for device in slice_["spec"]["devices"]:
        del device["capacity"]["shares"]
    view = ClusterView([ResourceSlice.model_validate(slice_)], [DeviceClass.model_validate(shares_class())])
    api = kube_api.api_client()
    first = ClassEvents(FeatureGates.defaults(), event_sink(Kube.of_client(api))).on_view(view)
    second = ClassEvents(FeatureGates.defaults(), event_sink(Kube.of_client(api))).on_view(view)
    assert len(first) == 1 and len(second) == 1  # both sent it; the API server kept one
    assert len(kube_api.list("events.events.k8s.io", namespace="default")) == 1


def test_the_warnings_and_the_pod_routing_share_one_deviceclass_watch(kube_api: KubeAPIServer) -> None:
    """`serve` in one process: the cluster-aware warnings and /mutate-pods read DeviceClasses from one
    informer (one list, one watch), each following it; stopping one leaves the other fed."""
    from webhook.podrouting.routing_cache import ClusterRoutingCache

    kube_api.seed(gpu_slice("node-1"))
    kube_api.seed(shares_class())
    kube_api.clear_requests()
    informers = informers_of(kube_api)
    warnings, routing = ClusterCache(informers), ClusterRoutingCache(informers)
    warnings.start()
    routing.start()
    try:
        assert warnings.wait_synced(10)
        wait_for(lambda: routing.routed_names() is not None)
        assert warnings.classes is routing.classes
        assert len(kube_api.requests_for("list", "deviceclasses")) == 1
        assert len(kube_api.requests_for("watch", "deviceclasses")) == 1
        warnings.stop()
        kube_api.seed({**shares_class(), "metadata": {"name": "second"}})
        wait_for(lambda: routing.classes is not None and len(routing.classes.items()) == 2)
        assert len(kube_api.requests_for("watch", "deviceclasses")) == 1
    finally:
        routing.stop()
    assert informers.informers() == []
