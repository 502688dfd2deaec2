"""Cluster-aware DeviceClass warnings (webhook/deviceclass/cluster_warnings.py), on slices shaped like the
NVIDIA GPU driver's: driver `gpu.nvidia.com`, attributes productName/architecture/driverVersion/uuid, capacity
memory and shares. Upstream validates a class without any cluster state (pkg/apis/resource/validation), so
every one of these is a warning, never a rejection.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcluster.objects import make_slice
from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from resourceapi.cel import CelCache, CompileResult
from resourceapi.gates import FeatureGates
from webhook.clusterview.cluster_view import ClusterView
from webhook.deviceclass.cluster_warnings import cluster_warnings
from webhook.deviceclass.warning_texts import MAX_WARNING_LENGTH

GATES = FeatureGates.defaults()
DRIVER = "gpu.nvidia.com"
GPU_SELECTOR = f'device.driver == "{DRIVER}"'
_CACHE = CelCache()


def compile_selector(expression: str, gates: FeatureGates) -> CompileResult:
    return _CACHE.compile(expression, gates)


def gpu(
    index: int,
    *,
    shareable: bool = True,
    memory: str = "80Gi",
    shares: dict[str, Any] | None = None,
    product: str = "NVIDIA H100 80GB HBM3",
    extra_attributes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    capacity: dict[str, Any] = {"memory": {"value": memory}}
    capacity["shares"] = shares or {"value": "4"}
    attributes: dict[str, Any] = {
        "productName": {"string": product},
        "architecture": {"string": "Hopper"},
        "driverVersion": {"version": "550.54.15"},
        "uuid": {"string": f"GPU-{index:08d}-0000-0000-0000-000000000000"},
        **(extra_attributes or {}),
    }
    out: dict[str, Any] = {"name": f"gpu-{index}", "attributes": attributes, "capacity": capacity}
    if shareable:
        out["allowMultipleAllocations"] = True
    return out


def node_slice(node: str, *devices: dict[str, Any]) -> ResourceSlice:
    return ResourceSlice.model_validate(
        make_slice(node, DRIVER).devices(*(devices or map(gpu, range(8)))).obj()
    )


def device_class(
    name: str = "gpu-shared",
    *selectors: str,
    requests: dict[str, str] | None = None,
    resource: str | None = "nvidia.com/gpu.shared",
    annotation: bool = False,
    created: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in (selectors or (GPU_SELECTOR,))]}
    meta: dict[str, Any] = {"name": name}
    if resource:
        spec["extendedResourceName"] = resource
    if requests is not None:
        if annotation:
            meta["annotations"] = {
                "dra-capacity.io/extended-resource-capacity-requests": json.dumps({"requests": requests})
            }
        else:
            spec["extendedResourceCapacityRequests"] = {"requests": requests}
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": meta, "spec": spec}


def view(*slices: ResourceSlice, classes: tuple[dict[str, Any], ...] = ()) -> ClusterView:
    return ClusterView(
        slices or (node_slice("node-1"), node_slice("node-2")),
        [DeviceClass.model_validate(c) for c in classes],
    )


def warnings_for(obj: dict[str, Any], v: ClusterView | None = None) -> list[str]:
    out = cluster_warnings(obj, v or view(), GATES, compile_selector)
    assert all(len(w) <= MAX_WARNING_LENGTH for w in out), out
    return out


def test_a_sound_class_draws_no_warning() -> None:
    assert warnings_for(device_class(requests={"shares": "1"})) == []


def test_a_capacity_no_device_advertises_is_named_with_a_close_match() -> None:
    assert warnings_for(device_class(requests={"shraes": "1"})) == [
        'DeviceClass gpu-shared: no device has capacity "shraes" (they have: memory, shares); '
        'did you mean "shares"?'
    ]


def test_the_annotation_carrier_is_checked_like_the_field() -> None:
    assert warnings_for(device_class(requests={"shraes": "1"}, annotation=True)) == [
        'DeviceClass gpu-shared: no device has capacity "shraes" (they have: memory, shares); '
        'did you mean "shares"?'
    ]


def test_a_qualified_capacity_name_is_the_same_capacity_on_that_drivers_devices() -> None:
    assert warnings_for(device_class(requests={f"{DRIVER}/shares": "1"})) == []


def test_an_amount_larger_than_every_device_says_the_largest() -> None:
    assert warnings_for(device_class(requests={"memory": "90Gi"})) == [
        "DeviceClass gpu-shared: requests memory=90Gi, more than any matching device has (largest 80Gi)"
    ]


def test_an_amount_the_request_policy_rounds_up_says_to_what() -> None:
    policy = {"value": "8", "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2"}}}
    v = view(node_slice("node-1", gpu(0, shares=policy)))
    assert warnings_for(device_class(requests={"shares": "1"}), v) == [
        "DeviceClass gpu-shared: requests shares=1, devices round to 2 (validRange min 2)"
    ]


def test_selectors_that_together_match_nothing_name_the_one_that_excludes() -> None:
    obj = device_class(
        "gpu-shared", GPU_SELECTOR, 'device.attributes["gpu.nvidia.com"].architecture == "Ampere"'
    )
    assert warnings_for(obj) == ["DeviceClass gpu-shared: selector 2 matches no published device"]


def test_two_selectors_each_matching_but_not_together_name_the_excluding_one() -> None:
    a100 = node_slice("node-a", gpu(0, product="NVIDIA A100"), gpu(1, product="NVIDIA A100"))
    h100 = node_slice("node-h", gpu(2, product="NVIDIA H100"))
    obj = device_class(
        "gpu-shared",
        'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A")',
        'device.attributes["gpu.nvidia.com"].productName.endsWith("H100")',
    )
    assert warnings_for(obj, view(a100, h100)) == [
        "DeviceClass gpu-shared: selector 1 excludes all 1 devices the other selectors match"
    ]


def test_a_selector_failing_on_a_published_device_suggests_a_guard() -> None:
    obj = device_class("gpu-shared", 'device.attributes["gpu.nvidia.com"].migProfile == "1g.10gb"')
    (first, *rest) = warnings_for(obj)
    assert first == (
        "DeviceClass gpu-shared: selector 1 fails on 16 devices (no such key: migProfile on gpu-0); "
        "guard with has() or orValue()"
    )
    assert rest == ["DeviceClass gpu-shared: selector 1 matches no published device"]


def test_capacity_on_devices_that_cannot_be_shared_is_named() -> None:
    v = view(node_slice("node-1", gpu(0, shareable=False), gpu(1, shareable=False)))
    assert warnings_for(device_class(requests={"shares": "1"}), v) == [
        "DeviceClass gpu-shared: none of its 2 devices allows multiple allocations, "
        "so each pod takes a whole device"
    ]


def test_a_new_class_taking_an_extended_resource_name_over_is_named() -> None:
    other = device_class("gpu-old", created="2026-01-01T00:00:00Z")
    assert warnings_for(device_class(requests={"shares": "1"}), view(classes=(other,))) == [
        "DeviceClass gpu-shared takes nvidia.com/gpu.shared over from DeviceClass gpu-old "
        "(the newer class wins)"
    ]


@pytest.mark.parametrize(
    ("mine", "theirs", "winner"),
    [
        ("2026-02-01T00:00:00Z", "2026-01-01T00:00:00Z", "gpu-shared"),
        ("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z", "gpu-old"),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "gpu-old"),  # equal: the smaller name
    ],
)
def test_on_update_the_upstream_rule_names_the_winner(mine: str, theirs: str, winner: str) -> None:
    other = device_class("gpu-old", created=theirs)
    obj = device_class(requests={"shares": "1"}, created=mine)
    assert warnings_for(obj, view(classes=(other,))) == [
        f"nvidia.com/gpu.shared is claimed by DeviceClasses gpu-old, gpu-shared: {winner} wins "
        "(newest, then smallest name)"
    ]


def test_no_published_device_at_all_draws_no_selector_warning() -> None:
    """A cluster whose driver has not published yet: nothing to compare against."""
    empty = ClusterView([], [])
    assert warnings_for(device_class(requests={"shraes": "1"}), empty) == []


def test_a_selector_that_does_not_compile_is_left_to_validation() -> None:
    assert warnings_for(device_class("gpu-shared", "device.driver ==", requests={"shraes": "1"})) == []


def test_selector_results_are_cached_per_expression_within_a_view() -> None:
    v = view()
    obj = device_class(requests={"shares": "1"})
    warnings_for(obj, v)
    compiled = compile_selector(GPU_SELECTOR, GATES)
    assert compiled.program is not None
    assert v.evaluate(GPU_SELECTOR, compiled.program) is v.evaluate(GPU_SELECTOR, compiled.program)
