"""Upstream's GatherPools for one node (allocator.structured.pools.gather_pools),
on slice records: which slices count,
the newest generation, incomplete and obsolete pools, slices of the pool that do not target the node, why a
pool is invalid, and the order of pools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from allocator.structured.ids import DeviceID, PoolID
from allocator.structured.pools import NodePools, SliceRecord, build_slice, gather_pools
from resourceapi.api.resource_v1 import ResourceSlice

DRIVER = "gpu.example.com"


def record(
    name: str,
    pool: str = "p",
    *,
    generation: int = 1,
    count: int = 1,
    node: str | None = "n1",
    devices: Sequence[dict[str, Any]] = ({"name": "g0"},),
    counters: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> SliceRecord:
    body: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        **spec,
    }
    if node is not None:
        body["nodeName"] = node
    if devices:
        body["devices"] = list(devices)
    if counters:
        body["sharedCounters"] = counters
    return build_slice(ResourceSlice.model_validate({"metadata": {"name": name}, "spec": body}))


def gather(
    *slices: SliceRecord, partitionable: bool = True, node: str = "n1", everything: Sequence[SliceRecord] = ()
) -> NodePools:
    """GatherPools for `node` with `slices` as its slices; `everything` adds the pool's other slices."""
    of_pool: dict[PoolID, list[SliceRecord]] = {}
    for s in [*slices, *everything]:
        of_pool.setdefault(s.pool_id, []).append(s)
    return gather_pools(slices, node, {"kubernetes.io/hostname": node}, partitionable, of_pool)


def names(pools: NodePools) -> list[str]:
    return [d.id.device for d in pools.candidates]


def test_slices_that_do_not_count_are_skipped_and_the_rest_kept() -> None:
    elsewhere = record("s0", "p0", node="n2")
    counters = record("s1", "p1", devices=(), counters=[{"name": "mem", "counters": {"b": {"value": "1"}}}])
    mine = record("s2", "p2", devices=({"name": "g2"},))
    assert names(gather(elsewhere, counters, mine, partitionable=False)) == ["g2"]
    assert names(gather(elsewhere, mine)) == ["g2"]


def test_the_newest_generation_of_a_pool_wins() -> None:
    old = record("s0", generation=1, devices=({"name": "old"},))
    new = record("s1", generation=2, devices=({"name": "new"},))
    assert names(gather(old, new)) == ["new"]
    assert names(gather(new, old)) == ["new"]


def test_a_pool_missing_slices_is_incomplete_and_the_next_pool_is_still_gathered() -> None:
    half = record("s0", "p0", count=2)
    other = record("s1", "p1", devices=({"name": "g1"},))
    pools = gather(half, other)
    assert [(p.id.pool, p.incomplete, p.usable) for p in pools.pools] == [
        ("p0", True, False),
        ("p1", False, True),
    ]
    assert names(pools) == ["g1"]


def test_a_pool_with_a_newer_generation_elsewhere_is_obsolete_and_dropped() -> None:
    mine = record("s0", "p0", count=2, generation=1)
    newer = record("s1", "p0", count=2, generation=2, node="n2")
    other = record("s2", "p1", devices=({"name": "g1"},))
    pools = gather(mine, other, everything=[newer])
    assert [p.id.pool for p in pools.pools] == ["p1"]


def test_slices_of_the_pool_for_other_nodes_are_kept_for_counter_accounting() -> None:
    mine = record("s0", count=2, devices=({"name": "g0"},))
    theirs = record("s1", count=2, node="n2", devices=({"name": "g1"},))
    pools = gather(mine, everything=[theirs])
    [pool] = pools.pools
    assert [s.name for s in pool.slices] == ["s0"] and [s.name for s in pool.slices_not_targeting] == ["s1"]
    assert names(pools) == ["g0"]
    assert set(pools.by_id) == {DeviceID(DRIVER, "p", "g0"), DeviceID(DRIVER, "p", "g1")}


def _invalid(pools: NodePools) -> tuple[PoolID, bool, str]:
    [pool] = pools.pools
    return pool.id, pools.any_invalid, pool.invalid_reason


def test_why_a_pool_is_invalid() -> None:
    pid = PoolID(DRIVER, "p")
    two = record("s0", devices=({"name": "g0"}, {"name": "g0"}))
    assert _invalid(gather(two)) == (pid, True, "duplicate device name g0")
    mem = [{"name": "mem", "counters": {"b": {"value": "1"}}}]
    sets = [record("s0", count=3, devices=(), counters=mem), record("s1", count=3, devices=(), counters=mem)]
    assert _invalid(gather(*sets, record("s2", count=3))) == (pid, True, "duplicate counter set name mem")

    def consuming(counter_set: str, counter: str) -> NodePools:
        """s0 holds counter set mem; s1's device g0 consumes `counter` of `counter_set`."""
        consumer = {
            "name": "g0",
            "consumesCounters": [{"counterSet": counter_set, "counters": {counter: {"value": "1"}}}],
        }
        return gather(
            record("s0", count=2, devices=(), counters=mem), record("s1", count=2, devices=(consumer,))
        )

    assert _invalid(consuming("cpu", "b")) == (pid, True, "counter set cpu not found")
    assert _invalid(consuming("mem", "c")) == (pid, True, "counter c not found in counter set mem")


def test_a_device_of_a_per_device_slice_serving_all_nodes_is_a_candidate() -> None:
    per_device = record(
        "s0",
        node=None,
        perDeviceNodeSelection=True,
        devices=({"name": "g0", "allNodes": True}, {"name": "g1", "nodeName": "n2"}),
    )
    assert names(gather(per_device)) == ["g0", "g1"]
    assert (
        names(
            gather(
                record(
                    "s0", node=None, perDeviceNodeSelection=True, devices=({"name": "g1", "nodeName": "n2"},)
                )
            )
        )
        == []
    )


def test_pools_with_binding_conditions_come_last_in_pool_order() -> None:
    def bound(pool: str) -> SliceRecord:
        device = {"name": f"g-{pool}", "bindingConditions": ["ready"], "bindingFailureConditions": ["failed"]}
        return record(f"s-{pool}", pool, devices=(device,))

    pools = gather(
        bound("z"),
        bound("b"),
        record("s-y", "y", devices=({"name": "g-y"},)),
        record("s-a", "a", devices=({"name": "g-a"},)),
    )
    assert names(pools) == ["g-a", "g-y", "g-b", "g-z"]
    assert pools.by_id[DeviceID(DRIVER, "b", "g-b")].binding_failure_conditions == ["failed"]
