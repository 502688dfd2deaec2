"""GatherPools for one node (kubernetes/kubernetes
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/pools_incubating.go): relevance,
generations, completeness, validity, order."""

from __future__ import annotations

from support.dra_objects import (
    ALL_NODES,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    SLICE1,
    SLICE2,
    SLICE3,
    device,
    label_selector,
    pool,
    resource_slice,
)

from allocator.structured.ids import PoolID
from allocator.structured.pools import NodePools, build_slice, gather_pools
from resourceapi.api.resource_v1 import ResourceSlice

LABELS = {"region": "region-1"}


def gather(*slices: ResourceSlice, node_name: str = NODE1, partitionable: bool = True) -> NodePools:
    records = [build_slice(s) for s in slices]
    by_pool: dict[PoolID, list] = {}  # type: ignore[type-arg]
    for r in records:
        by_pool.setdefault(r.pool_id, []).append(r)
    candidates = [r for r in records if r.node_name in ("", node_name)]
    return gather_pools(candidates, node_name, LABELS, partitionable, by_pool)


def test_pools_are_ordered_by_driver_then_pool_name() -> None:
    pools = gather(
        resource_slice(SLICE1, NODE1, POOL2, DRIVER_B, device(DEVICE1)),
        resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE3, NODE1, POOL1, DRIVER_A, device(DEVICE1)),
    )
    assert [p.id for p in pools.pools] == [(DRIVER_A, POOL1), (DRIVER_A, POOL2), (DRIVER_B, POOL2)]


def test_slices_of_a_pool_are_ordered_by_name() -> None:
    pools = gather(
        resource_slice("slice-b", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        resource_slice("slice-a", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
    )
    assert [d.name for d in pools.candidates] == [DEVICE2, DEVICE1]


def test_pools_with_binding_conditions_come_last() -> None:
    pools = gather(
        resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, bindingConditions=["ready"])),
        resource_slice(SLICE2, NODE1, POOL2, DRIVER_B, device(DEVICE1)),
    )
    assert [p.id for p in pools.pools] == [(DRIVER_B, POOL2), (DRIVER_A, POOL1)]


def test_the_highest_generation_wins() -> None:
    pools = gather(
        resource_slice(SLICE1, NODE1, pool(POOL1, 1, generation=1), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 1, generation=2), DRIVER_A, device(DEVICE2)),
    )
    assert [d.name for d in pools.candidates] == [DEVICE2]


def test_a_pool_missing_slices_is_incomplete_and_not_allocated_from() -> None:
    pools = gather(resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)))
    assert pools.pools[0].incomplete
    assert pools.candidates == []


def test_a_pool_is_complete_with_slices_for_other_nodes() -> None:
    pools = gather(
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
    )
    assert not pools.pools[0].incomplete
    assert [d.name for d in pools.candidates] == [DEVICE1]


def test_a_newer_generation_elsewhere_makes_the_pool_obsolete() -> None:
    pools = gather(
        resource_slice(SLICE1, NODE1, pool(POOL1, 2, generation=1), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2)),
    )
    assert pools.pools == []


def test_duplicate_device_names_make_the_pool_invalid() -> None:
    pools = gather(
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
    )
    assert pools.pools[0].invalid
    assert pools.pools[0].invalid_reason == "duplicate device name device-1"
    assert pools.any_invalid and pools.candidates == []


def test_a_slice_for_other_labels_is_not_relevant() -> None:
    pools = gather(
        resource_slice(SLICE1, label_selector("region", "region-2"), POOL1, DRIVER_A, device(DEVICE1))
    )
    assert pools.pools == []


def test_all_nodes_slices_are_relevant_everywhere() -> None:
    pools = gather(resource_slice(SLICE1, ALL_NODES, POOL1, DRIVER_A, device(DEVICE1)), node_name=NODE2)
    assert [d.name for d in pools.candidates] == [DEVICE1]


def test_per_device_node_selection_is_skipped_without_partitionable_devices() -> None:
    pools = gather(
        resource_slice(SLICE1, "<perDevice>", POOL1, DRIVER_A, device(DEVICE1, nodeName=NODE1)),
        partitionable=False,
    )
    assert pools.pools == []


def test_two_spellings_of_one_capacity_keep_the_later_one_or_the_qualified_one() -> None:
    """Before 1.38 the later spelling of `memory` / `driver-a/memory` is the device's capacity; with
    `qualified_wins` (1.38, v0.38.0-beta.0 api/conversion.go) the qualified one is, in either order."""
    for caps, later in (
        ({f"{DRIVER_A}/memory": "8", "memory": "2"}, "2"),
        ({"memory": "2", f"{DRIVER_A}/memory": "8"}, "8"),
    ):
        model = resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, caps))
        (default,) = build_slice(model).devices
        assert str(default.capacity[f"{DRIVER_A}/memory"].quantity) == later
        (qualified,) = build_slice(model, qualified_wins=True).devices
        entry = qualified.capacity[f"{DRIVER_A}/memory"]
        assert (str(entry.quantity), entry.spelling) == ("8", f"{DRIVER_A}/memory")
        assert list(qualified.capacity) == [f"{DRIVER_A}/memory"]
    other = resource_slice(
        SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "2", "other.io/memory": "8"})
    )
    (kept,) = build_slice(other, qualified_wins=True).devices
    assert sorted(kept.capacity) == [
        f"{DRIVER_A}/memory",
        "other.io/memory",
    ]  # another domain is another name
