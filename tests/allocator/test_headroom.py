"""Headroom is what placement then binds: with H reported, simulate places H more pods of the shape and the
next one is unschedulable, on clusters where node predicates, taints, requestPolicy rounding, counters and
whole devices make plain arithmetic wrong."""

from __future__ import annotations

from typing import Any

import pytest
from support.capacity_cluster import (
    allocated_claim,
    bound_of,
    copies,
    device_class,
    gpu,
    gpu_slice,
    node,
    pod,
    view_of,
)

from allocator.capacity.headroom import ShapeError
from resourceapi.api.core_v1 import Pod

NO_SCHEDULE = [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]


def base(**node_b: Any) -> list[dict[str, Any]]:
    return [
        device_class(),
        node("node-a"),
        node("node-b", **node_b),
        gpu_slice("node-a"),
        gpu_slice("node-b"),
    ]


def some_in_use() -> list[dict[str, Any]]:
    """3 shares used on node-a's gpu-0, node-b's gpu-1 full: 7 of 16 used."""
    objs = base()
    for i in range(3):
        objs += [allocated_claim(f"a{i}", "node-a", "gpu-0", share=i), pod(f"run-a{i}", node_name="node-a")]
    for i in range(4):
        objs += [
            allocated_claim(f"b{i}", "node-b", "gpu-1", share=10 + i),
            pod(f"run-b{i}", node_name="node-b"),
        ]
    return objs


def rounded() -> list[dict[str, Any]]:
    """requestPolicy: shares come in steps of 2, so a request of 1 consumes 2: 2 pods per GPU."""
    policy = {"default": "2", "validRange": {"min": "2", "max": "4", "step": "2"}}
    return [
        device_class(),
        node("node-a"),
        gpu_slice("node-a", devices=[gpu("gpu-0", policy=policy), gpu("gpu-1", policy=policy)]),
    ]


def whole_devices() -> list[dict[str, Any]]:
    """GPUs that cannot be shared: one pod each, whatever their shares say."""
    return [
        device_class(),
        node("node-a"),
        gpu_slice(
            "node-a",
            devices=[gpu("gpu-0", multi=False), gpu("gpu-1", multi=False), gpu("gpu-2", multi=False)],
        ),
    ]


def counters() -> list[dict[str, Any]]:
    """Two whole GPUs drawing on one counter set that holds enough for one of them."""
    dev = {"consumesCounters": [{"counterSet": "board", "counters": {"power": {"value": "3"}}}]}
    pool = {"name": "node-a", "generation": 1, "resourceSliceCount": 2}
    devices = gpu_slice(
        "node-a", devices=[{**gpu("gpu-0", multi=False), **dev}, {**gpu("gpu-1", multi=False), **dev}]
    )
    devices["spec"]["pool"] = pool
    board = gpu_slice("node-a")
    board["metadata"]["name"] = "node-a-board"
    board["spec"]["pool"] = pool
    del board["spec"]["devices"]
    board["spec"]["sharedCounters"] = [{"name": "board", "counters": {"power": {"value": "4"}}}]
    return [device_class(), node("node-a"), devices, board]


def shared_pool() -> list[dict[str, Any]]:
    """One GPU published for all nodes: the nodes are not independent, pods are placed across all of them."""
    shared = gpu_slice("node-a")
    shared["metadata"]["name"] = "fabric-gpus"
    del shared["spec"]["nodeName"]
    shared["spec"]["allNodes"] = True
    shared["spec"]["pool"]["name"] = "fabric"
    shared["spec"]["devices"] = [gpu("gpu-0")]
    return [device_class(), node("node-a"), node("node-b"), shared]


SCENARIOS: dict[str, tuple[list[dict[str, Any]], int]] = {
    "empty": (base(), 16),
    "some-in-use": (some_in_use(), 9),
    "tainted-node": (base(taints=NO_SCHEDULE), 8),
    "pod-limit": (base(pods="3"), 11),
    "request-policy-rounding": (rounded(), 4),
    "whole-devices": (whole_devices(), 3),
    "counters": (counters(), 1),
    "shared-pool": (shared_pool(), 4),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_headroom_is_what_placement_then_binds(name: str) -> None:
    objs, expected = SCENARIOS[name]
    [row] = view_of(objs).report().classes
    assert row.headroom is not None
    assert row.headroom.count == expected
    results = bound_of(objs, copies(pod("shape"), expected + 1))
    assert results == ["bound"] * expected + ["unschedulable"]


def test_a_bigger_shape_counts_cpu_and_units_together() -> None:
    objs = base()
    shape = pod("big", units=2, cpu="20")
    room = view_of(objs).headroom
    assert room is not None
    count = room.headroom(Pod.model_validate(shape)).count
    assert count == 2  # one per node: 20 of 32 cpus
    assert bound_of(objs, copies(shape, count + 1)) == ["bound"] * count + ["unschedulable"]


def test_counting_leaves_the_view_as_it_was() -> None:
    view = view_of(some_in_use())
    first = view.report()
    second = view.report()
    assert [c.headroom for c in first.classes] == [c.headroom for c in second.classes]
    assert first.nodes == second.nodes


def test_headroom_follows_a_change_on_one_node() -> None:
    objs = some_in_use()
    view = view_of(objs)
    assert view.report().classes[0].headroom.count == 9  # type: ignore[union-attr]
    view.delete_claim(("default", "b0"))
    view.delete_pod(("default", "run-b0"))
    assert view.report().classes[0].headroom.count == 10  # type: ignore[union-attr]


def test_a_shape_with_its_own_claims_is_refused_with_the_reason() -> None:
    shape = pod("claims")
    shape["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    room = view_of(base()).headroom
    assert room is not None
    with pytest.raises(ShapeError, match=r"spec\.resourceClaims"):
        room.headroom(Pod.model_validate(shape))


def test_nodes_that_share_a_pool_are_counted_together() -> None:
    [row] = view_of(shared_pool()).report().classes
    assert row.headroom is not None
    assert (row.headroom.count, row.headroom.per_node) == (4, False)


def random_cluster(seed: int) -> list[dict[str, Any]]:
    """Eight nodes of a few kinds (GPU counts, pod limits, a taint, a label) with random shares in use:
    alike nodes share one count, and the sum must still be what placement binds."""
    import random

    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [device_class()]
    for n in range(8):
        name = f"node-{n}"
        kind = rng.choice(["plain", "plain", "few-pods", "tainted", "labelled"])
        obj = node(
            name, pods="4" if kind == "few-pods" else "110", taints=NO_SCHEDULE if kind == "tainted" else None
        )
        if kind == "labelled":
            obj["metadata"]["labels"]["pool"] = "a"
        objs.append(obj)
        gpus = rng.choice([1, 2])
        objs.append(gpu_slice(name, devices=[gpu(f"gpu-{g}") for g in range(gpus)]))
        for g in range(gpus):
            for k in range(rng.choice([0, 0, 1, 3, 4])):
                claim = f"{name}-g{g}-{k}"
                objs += [allocated_claim(claim, name, f"gpu-{g}", share=n * 100 + g * 10 + k)]
                objs += [pod(f"run-{claim}", node_name=name)]
    return objs


@pytest.mark.parametrize("seed", range(4))
def test_headroom_on_many_alike_nodes_is_what_placement_binds(seed: int) -> None:
    objs = random_cluster(seed)
    [row] = view_of(objs).report().classes
    assert row.headroom is not None
    count = row.headroom.count
    assert bound_of(objs, copies(pod("shape"), count + 1)) == ["bound"] * count + ["unschedulable"]
