"""Shared devices (KEP-5075 consumable capacity) in the search: committed and in-flight shares count against
a device's capacity, a device without room is skipped for the next one, and a device that already holds a
committed share has paid its counters."""

from __future__ import annotations

from typing import Any

from allocator.structured.cluster import Cluster, NodeInfo
from localcluster.objects import make_slice
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

DRIVER = "gpu.example.com"
NODE = NodeInfo("n1", {"kubernetes.io/hostname": "n1"})
GATES = FeatureGates.defaults().with_overrides(
    DRAConsumableCapacity=True, DRAPartitionableDevices=True, DRADeviceTaints=True
)
GPU_CLASS = DeviceClass.model_validate(
    {
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
)


def shared_gpu(name: str, shares: int = 4, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "allowMultipleAllocations": True,
        "capacity": {"shares": {"value": str(shares)}},
        **extra,
    }


def node_slice(*devices: dict[str, Any], name: str = "s1", slices: int = 1, **spec: Any) -> ResourceSlice:
    slice_ = make_slice("n1", DRIVER).name(name).pool("pool1", slices).spec(**spec)
    return ResourceSlice.model_validate((slice_.devices(*devices) if devices else slice_).obj())


def share_request(name: str, shares: int, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": "gpu", "capacity": {"requests": {"shares": str(shares)}}, **more},
    }


def claim(
    *requests: dict[str, Any], name: str = "c0", allocated: list[dict[str, Any]] | None = None
) -> ResourceClaim:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": list(requests)}},
    }
    if allocated is not None:
        body["status"] = {"allocation": {"devices": {"results": allocated}}}
    return ResourceClaim.model_validate(body)


def committed_share(
    device: str, shares: int, share_id: str = "00000000-0000-4000-8000-000000000001"
) -> ResourceClaim:
    return claim(
        share_request("r0", shares),
        name=f"holder-{share_id[-1]}",
        allocated=[
            {
                "request": "r0",
                "driver": DRIVER,
                "pool": "pool1",
                "device": device,
                "shareID": share_id,
                "consumedCapacity": {"shares": str(shares)},
            }
        ],
    )


def cluster(slices: list[ResourceSlice], committed: tuple[ResourceClaim, ...] = ()) -> Cluster:
    return Cluster(GATES, [GPU_CLASS], slices, committed)


def picked(core: Cluster, *claims: ResourceClaim) -> list[list[tuple[str, str | None]]] | None:
    """Per claim, (device, consumed shares) of each result; None when nothing fits."""
    outcome = core.allocate(NODE, list(claims))
    if not outcome.fits:
        return None
    return [
        [
            (r.device, str(r.consumed_capacity["shares"]) if r.consumed_capacity else None)
            for r in a.devices.results
        ]
        for a in outcome.results
    ]


def test_committed_shares_count_against_the_device() -> None:
    core = cluster([node_slice(shared_gpu("g0"))], (committed_share("g0", 3),))
    assert not core.plan(NODE, [claim(share_request("r0", 2))]).could_fit()
    assert picked(core, claim(share_request("r0", 2))) is None
    assert picked(core, claim(share_request("r0", 1))) == [[("g0", "1")]]


def test_a_device_without_room_is_skipped_for_the_next() -> None:
    core = cluster([node_slice(shared_gpu("g0"), shared_gpu("g1"))], (committed_share("g0", 4),))
    assert core.plan(NODE, [claim(share_request("r0", 2))]).could_fit()
    assert picked(core, claim(share_request("r0", 2))) == [[("g1", "2")]]


def test_in_flight_shares_of_one_claim_add_up() -> None:
    core = cluster([node_slice(shared_gpu("g0", shares=2))])
    two = claim(share_request("a", 1), share_request("b", 1))
    assert picked(core, two) == [[("g0", "1"), ("g0", "1")]]
    three = claim(share_request("a", 1), share_request("b", 1), share_request("c", 1))
    assert picked(core, three) is None


def test_a_tainted_device_is_skipped_for_an_untainted_one() -> None:
    tainted = shared_gpu("g0", taints=[{"key": "broken", "value": "yes", "effect": "NoSchedule"}])
    core = cluster([node_slice(tainted, shared_gpu("g1"))])
    assert core.plan(NODE, [claim(share_request("r0", 1))]).could_fit()
    assert picked(core, claim(share_request("r0", 1))) == [[("g1", "1")]]


def test_a_device_holding_a_committed_share_has_paid_its_counters() -> None:
    """Counters are charged once per shared device: with one committed share the counter set is spent, and
    another share of the same device still fits."""
    device = shared_gpu(
        "g0", consumesCounters=[{"counterSet": "mem", "counters": {"bytes": {"value": "8Gi"}}}]
    )
    counters = node_slice(
        name="s0", slices=2, sharedCounters=[{"name": "mem", "counters": {"bytes": {"value": "8Gi"}}}]
    )
    slices = [counters, node_slice(device, slices=2)]
    assert picked(cluster(slices), claim(share_request("a", 1), share_request("b", 1))) == [
        [("g0", "1"), ("g0", "1")]
    ]
    core = cluster(slices, (committed_share("g0", 1),))
    assert picked(core, claim(share_request("r0", 1))) == [[("g0", "1")]]


def test_the_search_takes_devices_in_the_candidate_order_it_is_given() -> None:
    """least-used puts the fresh device first, most-used the partly used one; the search follows."""
    core = cluster([node_slice(shared_gpu("g0"), shared_gpu("g1"))], (committed_share("g1", 1),))
    request = claim(share_request("r0", 1))
    for order, device in (("first-fit", "g0"), ("least-used", "g0"), ("most-used", "g1")):
        outcome = core.allocate(NODE, [request], order=order)  # type: ignore[arg-type]
        assert outcome.results is not None
        assert [r.device for r in outcome.results[0].devices.results] == [device], order


def test_backtracking_from_a_shared_device_takes_back_its_share_and_its_counters() -> None:
    """g0 and g1 each need the whole counter set. r0 (two shares) first takes g0, where r1 (one share, zone a:
    g0 only) then finds no room; r0 moves to g1, and r1 on g0 must now pay g0's counters, which g1 holds."""

    def zoned(name: str, zone: str) -> dict[str, Any]:
        return shared_gpu(
            name,
            shares=2,
            attributes={"zone": {"string": zone}},
            consumesCounters=[{"counterSet": "mem", "counters": {"bytes": {"value": "8Gi"}}}],
        )

    def slices(counter_bytes: str) -> list[ResourceSlice]:
        counters = [{"name": "mem", "counters": {"bytes": {"value": counter_bytes}}}]
        return [
            node_slice(name="s0", slices=2, sharedCounters=counters),
            node_slice(zoned("g0", "a"), zoned("g1", "b"), slices=2),
        ]

    zone_a = [{"cel": {"expression": f'device.attributes["{DRIVER}"].zone == "a"'}}]
    request = claim(share_request("r0", 2), share_request("r1", 1, selectors=zone_a))
    assert picked(cluster(slices("16Gi")), request) == [[("g1", "2"), ("g0", "1")]]
    assert picked(cluster(slices("8Gi")), request) is None


def _exclusive_request(name: str) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "gpu"}}


def test_a_live_share_blocks_an_exclusive_allocation_from_1_38() -> None:
    """A device whose allowMultipleAllocations was turned off while a share (without consumed capacity) is
    live: 1.38 refuses to allocate it exclusively (`deviceCapacityInUse`, kubernetes/kubernetes#140798), 1.37
    allocates it (a double allocation, as upstream 1.37 does)."""
    slices = [node_slice({"name": "g0"})]  # no capacity: the share is recorded by its ID alone
    share = {"request": "r0", "driver": DRIVER, "pool": "pool1", "device": "g0"}
    share_id = "00000000-0000-4000-8000-000000000001"
    holder = (claim(_exclusive_request("r0"), name="holder", allocated=[{**share, "shareID": share_id}]),)
    for release, expected in (("1.37", [[("g0", None)]]), ("1.38", None)):
        gates = FeatureGates.parse("", release=release)
        core = Cluster(gates, [GPU_CLASS], slices, holder)
        assert picked(core, claim(_exclusive_request("r0"))) == expected, release
    free = Cluster(FeatureGates.parse("", release="1.38"), [GPU_CLASS], slices, ())
    assert picked(free, claim(_exclusive_request("r0"))) == [[("g0", None)]]
