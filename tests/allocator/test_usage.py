"""Units total, used and free per class and node: what one request of the class consumes on each device, kept
incrementally (a change gives the figures a fresh count of the same objects gives)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from support.capacity_cluster import (
    CLASS,
    RESOURCE,
    allocated_claim,
    device_class,
    gpu,
    gpu_slice,
    node,
    pod,
    three_shares_on_node_a,
    view_of,
)

from allocator.capacity.view import CapacityView, NodeRow
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice


def cluster() -> list[dict[str, Any]]:
    objs = three_shares_on_node_a()
    objs.append(allocated_claim("big", "node-b", "gpu-1", shares="4", share=9))
    return objs


def figures(view: CapacityView) -> tuple[Any, list[NodeRow]]:
    report = view.report(headroom=False)
    return [(c.name, c.total, c.used, c.devices, c.pending) for c in report.classes], report.nodes


def test_units_per_class_and_node_count_shares_of_one_unit() -> None:
    report = view_of(cluster()).report(headroom=False)
    [row] = report.classes
    assert (row.name, row.resource, row.total, row.used, row.free, row.devices) == (
        CLASS,
        RESOURCE,
        16,
        Fraction(7),
        Fraction(9),
        4,
    )
    assert [(n.node, n.total, n.used, n.free) for n in report.nodes] == [
        ("node-a", 8, Fraction(3), Fraction(5)),
        ("node-b", 8, Fraction(4), Fraction(4)),
    ]


def test_a_rounding_policy_makes_a_unit_what_one_request_consumes() -> None:
    policy = {"default": "2", "validRange": {"min": "2", "max": "4", "step": "2"}}
    objs = [device_class(), node("node-a"), gpu_slice("node-a", devices=[gpu("gpu-0", policy=policy)])]
    objs.append(allocated_claim("odd", "node-a", "gpu-0", shares="1"))  # allocated before the policy existed
    [row] = view_of(objs).report(headroom=False).classes
    assert (row.total, row.used, row.free) == (2, Fraction(1, 2), Fraction(3, 2))


def test_a_whole_device_is_one_unit_used_while_allocated() -> None:
    objs = [
        device_class(),
        node("node-a"),
        gpu_slice("node-a", devices=[gpu("gpu-0", multi=False), gpu("gpu-1", multi=False)]),
    ]
    claim = allocated_claim("whole", "node-a", "gpu-1")
    del claim["status"]["allocation"]["devices"]["results"][0]["shareID"]
    objs.append(claim)
    [row] = view_of(objs).report(headroom=False).classes
    assert (row.total, row.used) == (2, Fraction(1))


def test_pending_pods_count_for_the_class_their_resource_maps_to() -> None:
    objs = [
        *cluster(),
        pod("p1"),
        pod("p2"),
        pod("running", node_name="node-a"),
        pod("cpu-only", units=0, cpu="1"),
    ]
    [row] = view_of(objs).report(headroom=False).classes
    assert row.pending == 2


def test_a_class_without_extended_resource_or_capacity_is_not_listed() -> None:
    plain = device_class("plain")
    del plain["spec"]["extendedResourceName"]
    del plain["spec"]["extendedResourceCapacityRequests"]
    report = view_of([*cluster(), plain]).report(headroom=False)
    assert [c.name for c in report.classes] == [CLASS]


def test_incremental_changes_give_what_a_fresh_count_gives() -> None:
    objs = cluster()
    view = view_of(objs)
    # release a claim, allocate another elsewhere, shrink a slice (node-a loses gpu-1), re-apply the class
    view.delete_claim(("default", "a1"))
    objs = [o for o in objs if o["metadata"]["name"] != "a1"]
    late = allocated_claim("late", "node-b", "gpu-0", shares="2", share=20)
    objs.append(late)
    view.upsert_claim(ResourceClaim.model_validate(late))
    smaller = gpu_slice("node-a", devices=[gpu("gpu-0")])
    objs = [smaller if o["metadata"]["name"] == "node-a-gpus" else o for o in objs]
    view.upsert_slice(ResourceSlice.model_validate(smaller))
    view.upsert_class(DeviceClass.model_validate(device_class()))
    assert figures(view) == figures(view_of(objs))
    assert figures(view)[0] == [(CLASS, 12, Fraction(8), 3, 0)]


def test_a_deleted_class_leaves_no_figures() -> None:
    view = view_of(cluster())
    view.delete_class(CLASS)
    assert view.report(headroom=False).classes == []
    assert view.usage.by_node == {}
