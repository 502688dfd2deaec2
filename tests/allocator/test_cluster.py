"""The search's own guarantees beyond upstream's table (kubernetes/kubernetes
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/allocator_incubating.go): every
side effect undone on backtrack (kubernetes/kubernetes#140436), pairwise distinctness (newer
structured/internal/experimental/constraint.go), committed shares pay counters once
(kubernetes/kubernetes#140450), capacity names normalized (newer
structured/internal/experimental/consumable_capacity.go), sharing rules and share IDs
(allocator_incubating.go, allocateDevice). The divergences are listed in docs/divergences.md.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from support.dra_objects import (
    CLAIM0,
    CLAIM1,
    CLASS_B,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    allocated,
    capacity,
    claim,
    cluster,
    device,
    device_class,
    dump,
    node,
    pool,
    request,
    resource_slice,
    result,
    run,
    selector,
    shared,
    simple_claim,
)

from allocator.structured.cluster import Cluster
from allocator.structured.ids import DeviceID
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity


def devices_of(outcome: Any) -> list[str]:
    """The allocated device names of every claim, in order."""
    return [r["device"] for res in dump(outcome) or [] for r in res["devices"]["results"]]


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def consumes(set_name: str, **counters: str) -> list[dict[str, Any]]:
    return [{"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}]


def group(value: str) -> dict[str, Any]:
    return {"group": {"string": value}}


def counted_pool(
    *devices: dict[str, Any], driver: str = DRIVER_A, names: tuple[str, str] = (SLICE1, SLICE2)
) -> list[Any]:
    """Pool POOL1 of `driver` on NODE1 in two slices: `devices`, then the counter set `cs` of 8Gi memory."""
    return [
        resource_slice(names[0], NODE1, pool(POOL1, 2), driver, *devices),
        resource_slice(
            names[1], NODE1, pool(POOL1, 2), driver, counter_sets=[counter_set("cs", memory="8Gi")]
        ),
    ]


def test_counters_of_a_candidate_rejected_by_a_taint_are_released() -> None:
    slices = counted_pool(
        device(
            DEVICE1,
            consumesCounters=consumes("cs", memory="8Gi"),
            taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        ),
        device(DEVICE2, consumesCounters=consumes("cs", memory="8Gi")),
    )
    outcome = run([simple_claim()], [device_class()], slices)
    assert devices_of(outcome) == [DEVICE2]


def test_counters_of_a_backtracked_shared_device_are_released() -> None:
    slices = counted_pool(
        shared(DEVICE0, attributes=group("a"), consumesCounters=consumes("cs", memory="8Gi")),
        device(DEVICE1, attributes=group("b"), consumesCounters=consumes("cs", memory="8Gi")),
        device(DEVICE2, attributes=group("b")),
    )
    only_b = selector(f'device.attributes["{DRIVER_A}"].group == "b"')
    pod = claim(
        CLAIM0,
        request(REQ0),
        request(REQ1, selectors=[only_b]),
        constraints=[{"matchAttribute": f"{DRIVER_A}/group"}],
    )
    outcome = run([pod], [device_class()], slices)
    assert devices_of(outcome) == [DEVICE1, DEVICE2]


def test_distinct_attribute_holds_pairwise_within_one_request() -> None:
    slices = [
        resource_slice(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEVICE0, attributes=group("a")),
            device(DEVICE1, attributes=group("b")),
            device(DEVICE2, attributes=group("a")),
            device(DEVICE3, attributes=group("c")),
        )
    ]
    pod = claim(CLAIM0, request(REQ0, count=3), constraints=[{"distinctAttribute": f"{DRIVER_A}/group"}])
    outcome = run([pod], [device_class()], slices)
    assert devices_of(outcome) == [DEVICE0, DEVICE1, DEVICE3]


def test_a_committed_share_without_consumed_capacity_has_paid_the_counters() -> None:
    slices = counted_pool(
        shared(DEVICE1, consumesCounters=consumes("cs", memory="8Gi")),
    )
    earlier = allocated(
        simple_claim("earlier"), result(REQ0, DRIVER_A, POOL1, DEVICE1, shareID="1" * 8 + "-" * 1)
    )
    outcome = run([simple_claim()], [device_class()], slices, allocated_claims=[earlier])
    assert devices_of(outcome) == [DEVICE1]


GPU = "gpu.nvidia.com"


def node_slice(*devices: dict[str, Any]) -> Any:
    return resource_slice(SLICE1, NODE1, POOL1, GPU, *devices)


def test_unqualified_capacity_on_the_device_serves_a_qualified_request() -> None:
    pod = claim(CLAIM0, request(REQ0, "gpu", capacity=capacity(**{f"{GPU}/shares": "1"})))
    outcome = run([pod], [device_class("gpu", GPU)], [node_slice(shared("gpu-0", {"shares": "4"}))])
    assert dump(outcome) is not None
    assert dump(outcome)[0]["devices"]["results"][0]["consumedCapacity"] == {"shares": "1"}  # type: ignore[index]


def test_qualified_capacity_on_the_device_serves_an_unqualified_request() -> None:
    pod = claim(CLAIM0, request(REQ0, "gpu", capacity=capacity(shares="3")))
    outcome = run([pod], [device_class("gpu", GPU)], [node_slice(shared("gpu-0", {f"{GPU}/shares": "4"}))])
    assert dump(outcome)[0]["devices"]["results"][0]["consumedCapacity"] == {f"{GPU}/shares": "3"}  # type: ignore[index]


def test_requesting_both_spellings_of_a_capacity_is_an_error() -> None:
    pod = claim(CLAIM0, request(REQ0, "gpu", capacity=capacity(**{"shares": "1", f"{GPU}/shares": "1"})))
    outcome = run([pod], [device_class("gpu", GPU)], [node_slice(shared("gpu-0", {"shares": "4"}))])
    assert outcome.error == (
        f'claim claim-0, request req-0: capacity "{GPU}/shares" requested both as "{GPU}/shares" '
        'and as "shares"'
    )


def test_count_two_takes_two_different_shared_devices() -> None:
    pod = claim(CLAIM0, request(REQ0, count=2, capacity=capacity(shares="1")))
    slices = [
        resource_slice(
            SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}), shared(DEVICE1, {"shares": "4"})
        )
    ]
    assert devices_of(run([pod], [device_class()], slices)) == [DEVICE0, DEVICE1]


def test_count_two_does_not_fit_one_shared_device_with_room_for_both() -> None:
    pod = claim(CLAIM0, request(REQ0, count=2, capacity=capacity(shares="1")))
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}))]
    assert run([pod], [device_class()], slices).results is None


def test_two_requests_of_one_claim_share_one_device() -> None:
    pod = claim(
        CLAIM0, request(REQ0, capacity=capacity(shares="1")), request(REQ1, capacity=capacity(shares="1"))
    )
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}))]
    assert devices_of(run([pod], [device_class()], slices)) == [DEVICE0, DEVICE0]


def test_share_ids_are_fresh_lowercase_uuid4() -> None:
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}))]
    core = Cluster(FeatureGates.defaults(), [device_class()], slices)
    pod = claim(
        CLAIM0, request(REQ0, capacity=capacity(shares="1")), request(REQ1, capacity=capacity(shares="1"))
    )
    outcome = core.allocate(node(), [pod])
    assert outcome.results is not None
    ids = [r.share_id for r in outcome.results[0].devices.results or []]  # type: ignore[union-attr]
    uuid4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert all(i is not None and uuid4.match(i) for i in ids)
    assert len(set(ids)) == 2


def test_a_dedicated_device_with_capacities_has_no_share() -> None:
    pod = claim(CLAIM0, request(REQ0, capacity=capacity(shares="1")))
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0, {"shares": "4"}))]
    assert dump(run([pod], [device_class()], slices))[0]["devices"]["results"] == [  # type: ignore[index]
        result(REQ0, DRIVER_A, POOL1, DEVICE0)
    ]


def test_committed_shares_reduce_what_later_pods_get() -> None:
    core = cluster(
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}))],
        unique_shares=True,
    )
    placed = 0
    for i in range(6):
        pod = claim(f"pod-{i}", request(REQ0, capacity=capacity(shares="1")))
        outcome = core.allocate(node(), [pod])
        if outcome.results is None:
            continue
        core.commit(pod, outcome.results[0])
        placed += 1
    assert placed == 4
    assert core.device_capacity(DeviceID(DRIVER_A, POOL1, DEVICE0)) == {
        "shares": (Quantity.parse("4"), Quantity.parse("4"))
    }


def test_release_returns_the_capacity() -> None:
    core = cluster(
        [device_class()], [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}))]
    )
    pod = claim(CLAIM0, request(REQ0, capacity=capacity(shares="4")))
    first = core.allocate(node(), [pod]).results
    assert first is not None
    core.commit(pod, first[0])
    assert (
        core.allocate(node(), [claim(CLAIM1, request(REQ0, capacity=capacity(shares="1")))]).results is None
    )
    core.release(first[0])
    assert (
        core.allocate(node(), [claim(CLAIM1, request(REQ0, capacity=capacity(shares="1")))]).results
        is not None
    )


def test_committed_dedicated_device_is_not_allocated_again() -> None:
    core = cluster([device_class()], [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0))])
    first = core.allocate(node(), [simple_claim()]).results
    assert first is not None
    core.commit(simple_claim(), first[0])
    assert core.allocate(node(), [simple_claim(CLAIM1)]).results is None


def test_committed_counters_limit_later_partitions() -> None:
    slices = counted_pool(
        device(DEVICE0, consumesCounters=consumes("cs", memory="6Gi")),
        device(DEVICE1, consumesCounters=consumes("cs", memory="4Gi")),
    )
    core = cluster([device_class()], slices)
    first = core.allocate(node(), [simple_claim()]).results
    assert first is not None
    core.commit(simple_claim(), first[0])
    assert core.allocate(node(), [simple_claim(CLAIM1)]).results is None


def test_a_changed_slice_replaces_its_devices() -> None:
    core = cluster([device_class()], [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0))])
    assert devices_of(core.allocate(node(), [simple_claim()])) == [DEVICE0]
    core.upsert_slice(resource_slice(SLICE1, NODE1, pool(POOL1, 1, generation=2), DRIVER_A, device(DEVICE1)))
    assert devices_of(core.allocate(node(), [simple_claim()])) == [DEVICE1]


def test_a_changed_class_is_evaluated_again() -> None:
    core = cluster([device_class()], [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0))])
    assert devices_of(core.allocate(node(), [simple_claim()])) == [DEVICE0]
    core.upsert_class(device_class(driver="other-driver"))
    assert core.allocate(node(), [simple_claim()]).results is None


def test_invalid_pool_error_is_node_local() -> None:
    slices = [
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE0)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE0)),
    ]
    outcome = run([simple_claim()], [device_class()], slices)
    assert outcome.error == "invalid resource pools were encountered"
    assert outcome.node_failure


def test_allocated_share_counts_committed_shares_and_dedicated_devices_for_scoring() -> None:
    core = cluster(
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}), device(DEVICE1))],
        unique_shares=True,
    )
    assert core.allocated_share(node()) == 0
    pod = claim(CLAIM0, request(REQ0, capacity=capacity(shares="1")))
    results = core.allocate(node(), [pod]).results
    assert results is not None
    core.commit(pod, results[0])
    assert core.allocated_share(node()) == Fraction(1, 8)  # (1/4 of device-0 + 0 of device-1) / 2
    assert core.device_capacity(DeviceID(DRIVER_A, POOL1, DEVICE0))["shares"] == (
        Quantity.parse("1"),
        Quantity.parse("4"),
    )
    whole = claim(CLAIM1, request(REQ0))
    outcome = core.allocate(node(), [whole])
    assert devices_of(outcome) == [DEVICE1]
    assert outcome.results is not None
    core.commit(whole, outcome.results[0])
    assert core.allocated_share(node()) == Fraction(5, 8)


def test_counters_of_equally_named_pools_of_two_drivers_are_separate() -> None:
    dev = device(DEVICE0, consumesCounters=consumes("cs", memory="8Gi"))
    slices = [*counted_pool(dev), *counted_pool(dev, driver=DRIVER_B, names=("slice-b1", "slice-b2"))]
    pod = claim(CLAIM0, request(REQ0), request(REQ1, CLASS_B))
    outcome = run([pod], [device_class(), device_class(CLASS_B, DRIVER_B)], slices)
    assert devices_of(outcome) == [DEVICE0, DEVICE0]


def test_committing_the_same_share_twice_counts_it_once() -> None:
    core = cluster(
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE0, {"shares": "4"}))],
        unique_shares=True,
    )
    pod = claim(CLAIM0, request(REQ0, capacity=capacity(shares="2")))
    results = core.allocate(node(), [pod]).results
    assert results is not None
    core.commit(pod, results[0])
    core.commit(pod, results[0])
    used, total = core.device_capacity(DeviceID(DRIVER_A, POOL1, DEVICE0))["shares"]
    assert (used, total) == (Quantity.parse("2"), Quantity.parse("4"))


def test_a_pod_with_more_devices_than_the_default_recursion_limit_is_searched() -> None:
    slices = [
        resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *(device(f"device-{i}") for i in range(40 * 32)))
    ]
    claims = [claim(f"claim-{c}", request(REQ0, count=32)) for c in range(40)]
    outcome = run(claims, [device_class()], slices)
    assert outcome.error is None
    assert len(devices_of(outcome)) == 40 * 32


def test_an_unchanged_slice_keeps_its_cached_selector_results() -> None:
    same = resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0))
    core = cluster([device_class()], [same])
    assert devices_of(core.allocate(node(), [simple_claim()])) == [DEVICE0]
    record = core.node_pools(node()).candidates[0]
    core.upsert_slice(resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE0)))
    assert core.node_pools(node()).candidates[0] is record
    assert record.class_matches
