"""The binder's capacity metrics, driven as its informers drive them (`feed.on_*(event, old, new)` with raw
API objects): units per class and node move with each change, headroom and pending pods are answered at
scrape, per-device series exist only when asked for."""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import CollectorRegistry
from support.capacity_cluster import CLASS, RESOURCE, allocated_claim, device_class, gpu_slice, node, pod

from binder.usage_metrics import UsageMetrics
from resourceapi.gates import FeatureGates

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


def metrics(per_device: bool = False) -> tuple[UsageMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    usage = UsageMetrics(registry, FeatureGates.defaults(), per_device=per_device)
    feed = usage.feed
    feed.on_class(ADDED, None, device_class())
    for name in ("node-a", "node-b"):
        feed.on_node(ADDED, None, node(name))
        feed.on_slice(ADDED, None, gpu_slice(name))
    return usage, registry


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_units_per_class_and_node_follow_claims() -> None:
    usage, registry = metrics()
    claim = allocated_claim("c1", "node-a", "gpu-0", shares="3")
    usage.feed.on_claim(ADDED, None, claim)
    assert (
        value(registry, "dra_capacity_binder_class_capacity_units", **{"class": CLASS, "resource": RESOURCE})
        == 16
    )
    assert (
        value(registry, "dra_capacity_binder_class_used_units", **{"class": CLASS, "resource": RESOURCE}) == 3
    )
    assert value(registry, "dra_capacity_binder_node_used_units", node="node-a", **{"class": CLASS}) == 3
    assert value(registry, "dra_capacity_binder_node_used_units", node="node-b", **{"class": CLASS}) == 0
    released = copy.deepcopy(claim)
    del released["status"]
    usage.feed.on_claim(MODIFIED, claim, released)
    assert (
        value(registry, "dra_capacity_binder_class_used_units", **{"class": CLASS, "resource": RESOURCE}) == 0
    )


def test_headroom_and_pending_are_answered_at_scrape() -> None:
    usage, registry = metrics()
    usage.feed.on_claim(ADDED, None, allocated_claim("c1", "node-a", "gpu-0", shares="4"))
    usage.feed.on_pod(ADDED, None, pod("waiting"))
    labels = {"class": CLASS, "resource": RESOURCE}
    assert value(registry, "dra_capacity_binder_class_headroom_pods", **labels) == 12
    assert value(registry, "dra_capacity_binder_class_pending_pods", **labels) == 1
    usage.feed.on_claim(DELETED, allocated_claim("c1", "node-a", "gpu-0", shares="4"), None)
    assert value(registry, "dra_capacity_binder_class_headroom_pods", **labels) == 16


def test_a_removed_slice_takes_its_node_series_away() -> None:
    usage, registry = metrics()
    usage.feed.on_slice(DELETED, gpu_slice("node-b"), None)
    assert (
        value(registry, "dra_capacity_binder_node_capacity_units", node="node-b", **{"class": CLASS}) is None
    )
    assert (
        value(registry, "dra_capacity_binder_class_capacity_units", **{"class": CLASS, "resource": RESOURCE})
        == 8
    )


def test_per_device_series_only_when_asked_for() -> None:
    _, registry = metrics()
    text = _scrape(registry)
    assert "device_used_units" not in text
    usage, registry = metrics(per_device=True)
    usage.feed.on_claim(ADDED, None, allocated_claim("c1", "node-a", "gpu-0", shares="1"))
    labels = {
        "node": "node-a",
        "class": CLASS,
        "driver": "gpu.nvidia.com",
        "pool": "node-a",
        "device": "gpu-0",
    }
    _scrape(registry)
    assert value(registry, "dra_capacity_binder_device_used_units", **labels) == 1


def test_a_heartbeat_or_status_write_parses_nothing() -> None:
    usage, _ = metrics()
    before = usage.feed.changes
    old = node("node-a")
    beat = copy.deepcopy(old)
    beat["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    usage.feed.on_node(MODIFIED, old, beat)
    running = pod("p", node_name="node-a")
    status = copy.deepcopy(running)
    status["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    usage.feed.on_pod(MODIFIED, running, status)
    assert usage.feed.changes == before


def test_an_object_the_models_refuse_is_skipped_not_raised() -> None:
    usage, registry = metrics()
    bad: dict[str, Any] = gpu_slice("node-c")
    bad["spec"]["devices"] = "not a list"
    usage.feed.on_slice(ADDED, None, bad)
    assert usage.feed.skipped + usage.feed.failures == 1
    assert (
        value(registry, "dra_capacity_binder_class_capacity_units", **{"class": CLASS, "resource": RESOURCE})
        == 16
    )


def _scrape(registry: CollectorRegistry) -> str:
    from prometheus_client.exposition import generate_latest

    return generate_latest(registry).decode()
