"""`/mutate-pods`: which pods are routed to the binder, what the answer carries, and that it never blocks."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from support.gpu_cluster import RESOURCE, device_class, pod
from support.server_harness import AdmissionDouble, make_tls_dir, session

from resourceapi.routing import ROUTING_LABEL, routed_resource_names
from webhook.podrouting.pod_routing import PodRouter, PodRoutingMetrics
from webhook.podrouting.routing_cache import RoutingCache
from webhook.server.server import Listen, WebhookServer
from webhook.server.tlsreload import CertificateReloader

OPTED_NS = "inference"


def cache(*classes: dict[str, Any], namespaces: dict[str, dict[str, str]] | None = None) -> RoutingCache:
    c = RoutingCache()
    c.set_classes(classes or [device_class()])
    spaces = namespaces if namespaces is not None else {OPTED_NS: {ROUTING_LABEL: "enabled"}, "default": {}}
    c.set_namespaces([{"metadata": {"name": n, "labels": labels}} for n, labels in spaces.items()])
    return c


def request(obj: dict[str, Any], operation: str = "CREATE", namespace: str | None = None) -> dict[str, Any]:
    ns = namespace or obj["metadata"].get("namespace") or "default"
    return {
        "uid": "u-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "namespace": ns,
        "operation": operation,
        "object": obj,
    }


def patch_of(response: dict[str, Any]) -> list[dict[str, Any]] | None:
    if "patch" not in response:
        return None
    assert response["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = json.loads(base64.b64decode(response["patch"]))
    return ops


def routed(router: PodRouter, obj: dict[str, Any]) -> dict[str, Any]:
    out = router.mutate(request(obj))
    assert out.response["allowed"] is True
    return out.response


def test_opted_in_namespace_pod_asking_for_a_capacity_resource_gets_the_scheduler_name() -> None:
    response = routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler=None))
    assert patch_of(response) == [{"op": "add", "path": "/spec/schedulerName", "value": "dra-capacity"}]
    assert "warnings" not in response


def test_explicit_default_scheduler_is_replaced() -> None:
    response = routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler="default-scheduler"))
    assert patch_of(response) == [{"op": "add", "path": "/spec/schedulerName", "value": "dra-capacity"}]


def test_scheduler_name_is_configurable() -> None:
    response = routed(PodRouter(cache(), "gpu-binder"), pod("web-0", OPTED_NS, scheduler=None))
    assert patch_of(response) == [{"op": "add", "path": "/spec/schedulerName", "value": "gpu-binder"}]


def test_pod_in_a_namespace_without_the_label_is_left_alone() -> None:
    response = routed(PodRouter(cache()), pod("web-0", "default", scheduler=None))
    assert patch_of(response) is None


def test_object_label_opts_in_outside_an_opted_in_namespace() -> None:
    obj = pod("web-0", "default", scheduler=None, labels={ROUTING_LABEL: "enabled"})
    assert patch_of(routed(PodRouter(cache()), obj)) is not None


def test_object_label_disabled_opts_out_inside_an_opted_in_namespace() -> None:
    obj = pod("web-0", OPTED_NS, scheduler=None, labels={ROUTING_LABEL: "disabled"})
    assert patch_of(routed(PodRouter(cache()), obj)) is None


def test_pod_naming_another_scheduler_is_left_alone_with_a_warning() -> None:
    """Changed on purpose (issue 38): Volcano or JupyterHub's user-scheduler would serve the resource without
    the class's capacity, or not at all; the pod keeps its scheduler, and the warning says so."""
    response = routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler="volcano"))
    assert patch_of(response) is None
    [warning] = response["warnings"]
    assert "'volcano'" in warning and RESOURCE in warning and "without the class's capacity" in warning


def test_pod_already_naming_the_binder_is_left_alone_silently() -> None:
    response = routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler="dra-capacity"))
    assert patch_of(response) is None and "warnings" not in response


def test_pod_created_with_a_node_name_is_pinned_by_node_affinity() -> None:
    """As the DaemonSet controller does (ReplaceDaemonSetPodNodeNameNodeAffinity): the kubelet would see a pod
    with spec.nodeName at once, before its share is allocated."""
    response = routed(PodRouter(cache()), pod("validator", OPTED_NS, scheduler=None, nodeName="gpu-node-1"))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-1"]}]}
    assert patch_of(response) == [
        {"op": "add", "path": "/spec/schedulerName", "value": "dra-capacity"},
        {"op": "remove", "path": "/spec/nodeName"},
        {
            "op": "add",
            "path": "/spec/affinity",
            "value": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            },
        },
        {"op": "add", "path": "/spec/tolerations", "value": [{"operator": "Exists", "effect": "NoSchedule"}]},
    ]
    assert "spec.nodeName 'gpu-node-1'" in response["warnings"][0]


NO_SCHEDULE = {"operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tolerations", "op"),
    [
        (
            [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            {"op": "add", "path": "/spec/tolerations/-", "value": NO_SCHEDULE},
        ),
        ([NO_SCHEDULE], None),
    ],
)
def test_a_node_name_pod_tolerates_no_schedule_taints_as_the_kubelet_would(
    tolerations: list[dict[str, str]], op: dict[str, Any] | None
) -> None:
    """The kubelet admits a pod named to it whatever its NoSchedule taints say (a GPU node's
    `nvidia.com/gpu:NoSchedule`, a cordon): the pinned pod tolerates them, once."""
    obj = pod("validator", OPTED_NS, scheduler=None, nodeName="gpu-node-1", tolerations=tolerations)
    ops = patch_of(routed(PodRouter(cache()), obj))
    assert ops is not None
    added = [o for o in ops if o["path"].startswith("/spec/tolerations")]
    assert added == ([op] if op else [])


@pytest.mark.parametrize(
    ("affinity", "path"),
    [
        ({"podAffinity": {}}, "/spec/affinity/nodeAffinity"),
        (
            {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
        ),
        (
            {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}},
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
        ),
    ],
)
def test_a_pinned_pods_own_affinity_keeps_all_but_its_required_node_terms(
    affinity: dict[str, Any], path: str
) -> None:
    obj = pod("validator", OPTED_NS, scheduler=None, nodeName="n1", affinity=affinity)
    ops = patch_of(routed(PodRouter(cache()), obj))
    assert ops is not None and ops[1] == {"op": "remove", "path": "/spec/nodeName"}
    assert ops[2]["op"] == "add" and ops[2]["path"] == path


def test_pod_without_a_capacity_resource_is_left_alone() -> None:
    obj = pod("web-0", OPTED_NS, scheduler=None)
    obj["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "nvidia.com/gpu": "1"}}
    assert patch_of(routed(PodRouter(cache()), obj)) is None


def test_init_container_request_counts() -> None:
    obj = pod("web-0", OPTED_NS, scheduler=None)
    obj["spec"]["initContainers"] = [obj["spec"]["containers"][0] | {"name": "init"}]
    obj["spec"]["containers"][0]["resources"] = {}
    assert patch_of(routed(PodRouter(cache()), obj)) is not None


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        (
            {"volumes": [{"name": "disk", "gcePersistentDisk": {"pdName": "d"}}]},
            "gcePersistentDisk volume disk",
        ),
        ({"workloadRef": {"name": "training"}}, "spec.workloadRef"),
        ({"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}, "spec.resourceClaims"),
    ],
)
def test_unsupported_features_route_the_pod_to_wait_with_a_warning(
    extra: dict[str, Any], phrase: str
) -> None:
    """Changed on purpose (issue 38, one allocator per device): such a pod used to be left to the default
    scheduler, which then allocated the binder's devices without the class's capacity. It is routed now, and
    waits with an Event naming the feature."""
    response = routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler=None, **extra))
    assert patch_of(response) == [{"op": "add", "path": "/spec/schedulerName", "value": "dra-capacity"}]
    [warning] = response["warnings"]
    assert phrase in warning and RESOURCE in warning and "stays Pending" in warning


@pytest.mark.parametrize(
    "extra",
    [
        {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}},
        {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{}]}}},
        {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]},
        {"schedulingGates": [{"name": "example.com/wait"}]},
        {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
        {"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]},
        {"volumes": [{"name": "fast", "csi": {"driver": "csi.example.com"}}]},
    ],
)
def test_pods_with_affinity_spread_or_gates_are_routed(extra: dict[str, Any]) -> None:
    """The binder's placement applies InterPodAffinity, PodTopologySpread, SchedulingGates and the volume
    plugins as upstream does (allocator/scheduling/interpod.py, topologyspread.py, volumes.py), so these pods
    go to it, without a warning."""
    response = routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler=None, **extra))
    assert patch_of(response) is not None
    assert not response.get("warnings")


def test_node_affinity_and_plain_volumes_are_supported() -> None:
    extra = {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        },
        "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}, {"name": "tmp", "emptyDir": {}}],
    }
    assert patch_of(routed(PodRouter(cache()), pod("web-0", OPTED_NS, scheduler=None, **extra))) is not None


def test_cold_cache_allows_unchanged_and_counts() -> None:
    metrics = PodRoutingMetrics()
    router = PodRouter(RoutingCache(), metrics=metrics)
    response = routed(router, pod("web-0", OPTED_NS, scheduler=None))
    assert patch_of(response) is None
    assert "not ready" in response["warnings"][0]
    assert metrics.decisions.labels("cold-cache")._value.get() == 1


def test_verdicts_are_counted() -> None:
    metrics = PodRoutingMetrics()
    router = PodRouter(cache(), metrics=metrics)
    routed(router, pod("a", OPTED_NS, scheduler=None))
    routed(router, pod("b", "default", scheduler=None))
    assert metrics.decisions.labels("route")._value.get() == 1
    assert metrics.decisions.labels("not-opted-in")._value.get() == 1


def test_update_and_other_kinds_are_allowed_untouched() -> None:
    router = PodRouter(cache())
    obj = pod("web-0", OPTED_NS, scheduler=None)
    assert patch_of(router.mutate(request(obj, operation="UPDATE")).response) is None
    other = request(device_class())
    other["kind"] = {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"}
    out = router.mutate(other)
    assert out.response == {"uid": "u-1", "allowed": True} and out.handled is False


def test_malformed_pod_is_allowed_not_refused() -> None:
    router = PodRouter(cache())
    for obj in ({"metadata": "x", "spec": 3}, {"spec": {"containers": "nope"}}, {}):
        assert router.mutate(request(obj, namespace=OPTED_NS)).response["allowed"] is True


# --- the name -> class rule ---------------------------------------------------------------------------------


def test_annotation_carrier_routes_like_the_field() -> None:
    assert RESOURCE in routed_resource_names([device_class(carrier="annotation")])


def test_class_without_capacity_routes_nothing() -> None:
    assert routed_resource_names([device_class(carrier="none")]) == frozenset()


def test_implicit_class_name_routes() -> None:
    assert (
        f"deviceclass.resource.kubernetes.io/{device_class()['metadata']['name']}"
        in routed_resource_names([device_class()])
    )


def test_newer_class_without_capacity_wins_the_name() -> None:
    old = device_class("old")
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    new = device_class("new", carrier="none")
    new["metadata"]["creationTimestamp"] = "2026-02-01T00:00:00Z"
    names = routed_resource_names([old, new])
    assert RESOURCE not in names and "deviceclass.resource.kubernetes.io/old" in names


# --- over HTTPS ---------------------------------------------------------------------------------------------


async def test_mutate_pods_is_served_over_https(tmp_path: Path) -> None:
    make_tls_dir(tmp_path)
    reloader = CertificateReloader(tmp_path, interval=1.0)
    reloader.load()
    router = PodRouter(cache())
    server = WebhookServer(AdmissionDouble(), reloader, Listen("127.0.0.1", 0), pod_router=router)
    await server.start()
    try:
        obj = pod("web-0", OPTED_NS, scheduler=None)
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request(obj)}
        async with session(tmp_path) as http:
            async with http.post(f"https://127.0.0.1:{server.port}/mutate-pods", json=review) as resp:
                assert resp.status == 200
                body = await resp.json()
            async with http.get(f"https://127.0.0.1:{server.port}/metrics") as resp:
                metrics = await resp.text()
    finally:
        await server.stop()
    assert body["response"]["uid"] == "u-1"
    assert patch_of(body["response"]) == [
        {"op": "add", "path": "/spec/schedulerName", "value": "dra-capacity"}
    ]
    assert 'dra_capacity_webhook_requests_total{code="200",endpoint="mutate-pods"' in metrics


def test_whole_device_classes_route_only_with_the_flag() -> None:
    whole = device_class(carrier="none")
    assert routed_resource_names([whole]) == frozenset()
    assert RESOURCE in routed_resource_names([whole], whole_devices=True)


def test_router_with_whole_devices_routes_a_pod_of_a_class_without_capacity() -> None:
    off, on = RoutingCache(), RoutingCache(whole_devices=True)
    for c in (off, on):
        c.set_classes([device_class(carrier="none")])
        c.set_namespaces([{"metadata": {"name": OPTED_NS, "labels": {ROUTING_LABEL: "enabled"}}}])
    web = pod("web-0", OPTED_NS, scheduler=None)
    assert patch_of(routed(PodRouter(off), web)) is None
    assert patch_of(routed(PodRouter(on), web)) == [
        {"op": "add", "path": "/spec/schedulerName", "value": "dra-capacity"}
    ]
    assert on.snapshot().whole_devices
