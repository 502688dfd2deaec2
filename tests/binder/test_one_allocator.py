"""One allocator per device, the binder's side: its claims tolerate its own device taint, a pod of a namespace
not opted in gets an Event saying why it waits (binder/audit.py)."""

from __future__ import annotations

from typing import Any

from support.binder_harness import bound, events, extended_claims, running_binder, seed_cluster, wait_for
from support.gpu_cluster import RESOURCE, pod

from resourceapi.routing import SERVED_TAINT_KEY


def _namespace(name: str, label: str | None) -> dict[str, Any]:
    labels = {"dra-capacity.io/pod-routing": label} if label else {}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_the_binder_s_claims_tolerate_its_taint(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(pod("web-0"))
    with running_binder(kube_api):
        wait_for("bound", lambda: bound(kube_api))
    [claim] = extended_claims(kube_api)
    [request] = claim["spec"]["devices"]["requests"]
    assert request["exactly"]["tolerations"] == [
        {"key": SERVED_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_a_pod_of_a_namespace_not_opted_in_hears_why_it_waits(kube_api: Any) -> None:
    seed_cluster(kube_api, nodes=1)
    kube_api.seed(_namespace("batch", "disabled"))
    kube_api.seed(pod("held", "batch", scheduler=None))
    kube_api.seed(pod("plain", "default", scheduler=None))  # all namespaces route: only the webhook missed it
    with running_binder(kube_api, routing_all_namespaces=True) as binder:
        [event] = wait_for("event", lambda: events(kube_api, "NotOptedInToCapacityBinder", "batch"))
        wait_for("not routed", lambda: events(kube_api, "NotRoutedToCapacityBinder", "default"))
        assert binder.metrics.not_opted_in._value.get() == 1
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "held"
    message = event["message"]
    assert RESOURCE in message
    assert "namespace 'batch' is labelled dra-capacity.io/pod-routing=disabled" in message
    assert f"device taint {SERVED_TAINT_KEY}:NoSchedule" in message and "stays Pending" in message
