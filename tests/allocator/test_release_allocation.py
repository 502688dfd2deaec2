"""The allocator's differences by release (resourceapi/releases.py `Allocation`): each case runs on 1.37 and
on 1.38, the 1.37 outcome as v0.37.2's incubating allocator gives it, the 1.38 one as v0.38.0-beta.0's stable
allocator (`dynamic-resource-allocation/structured/internal/{incubating,stable}`)."""

from __future__ import annotations

from typing import Any

import pytest
from support.dra_objects import (
    CLAIM0,
    CLAIM1,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    REQ0,
    SLICE1,
    SLICE2,
    all_request,
    allocated,
    capacity,
    claim,
    cluster,
    device,
    device_class,
    dump,
    one_device_slice,
    pool,
    request,
    resource_slice,
    result,
    run,
    shared,
)

from allocator.structured.cluster import Allocation, Cluster, NodeInfo, Verdict
from resourceapi.api.resource_v1 import ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates


def on(release: str, spec: str = "") -> FeatureGates:
    return FeatureGates.parse(spec, release=release)


def allocate(release: str, slices: list[ResourceSlice], *claims: ResourceClaim, spec: str = "") -> Allocation:
    """`claims` allocated on NODE1 with the one DeviceClass, on `release` (and the gates of `spec`)."""
    return run(list(claims), [device_class()], slices, feature_gates=on(release, spec))


def on_node1(*devices: dict[str, Any]) -> list[ResourceSlice]:
    """NODE1's one slice of driver A's pool 1, holding `devices`."""
    return [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]


def first_result(allocation: Allocation) -> dict[str, Any]:
    """The first device result of the first claim, as the API renders it."""
    results = dump(allocation)
    assert results is not None
    taken: dict[str, Any] = results[0]["devices"]["results"][0]
    return taken


def memory_claim(memory: str, name: str = CLAIM0, namespace: str | None = None) -> ResourceClaim:
    """A claim of one device with `memory` of its capacity."""
    return claim(name, request(REQ0, capacity=capacity(memory=memory)), namespace=namespace)


INCOMPLETE = [
    one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
    resource_slice(SLICE2, NODE1, pool(POOL2, 2), DRIVER_B, device(DEVICE1)),
]
INVALID = [
    resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
    resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
]
ALL_PREFIX = "claim claim-0, request req-0: asks for all devices, but resource pool"


@pytest.mark.parametrize(
    ("slices", "message"),
    [
        (INCOMPLETE, f"{ALL_PREFIX} driver-b/pool-2 is currently being updated"),
        (INVALID, f"{ALL_PREFIX} driver-a/pool-1 is currently invalid"),
    ],
    ids=["incomplete", "invalid"],
)
@pytest.mark.parametrize(("release", "verdict"), [("1.37", Verdict.ERROR), ("1.38", Verdict.NODE_FAILURE)])
def test_all_mode_on_an_incomplete_or_invalid_pool_fails_the_node_only_from_1_38(
    slices: list[ResourceSlice], message: str, release: str, verdict: Verdict
) -> None:
    """1.38 wraps both errors in ErrFailedAllocationOnNode (allocator_stable.go `validateDeviceRequest`), so
    the scheduler tries other nodes; 1.37 returns them bare, and the pod fails on every node. Same text."""
    allocation = allocate(release, slices, claim(CLAIM0, all_request(REQ0)))
    assert (allocation.verdict, allocation.message) == (verdict, message)


RANGE = {"value": "8", "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}}}
NEGATIVE = (
    'claim claim-0, request req-0: checking capacity for device {}: capacity "driver-a/memory": '
    "capacity value is negative: request -1"
)


@pytest.mark.parametrize(
    ("req", "where"),
    [
        (request(REQ0, capacity=capacity(memory="-1")), f"{DRIVER_A}/{POOL1}/{DEVICE1}"),
        (all_request(REQ0, capacity=capacity(memory="-1")), DEVICE1),
    ],
    ids=["ExactCount", "All"],
)
def test_a_negative_capacity_request_is_an_error_before_rounding_from_1_38(
    req: dict[str, Any], where: str
) -> None:
    """1.38's calculateConsumedCapacity refuses a negative request before the policy rounds it (naming the
    device by ID, or by its name alone for `All`, as allocator_stable.go:1211 and :613 do); 1.37 rounds -1 up
    to the range's min and serves it, consuming 1."""
    slices = on_node1(shared(DEVICE1, {"memory": RANGE}))
    assert first_result(allocate("1.37", slices, claim(CLAIM0, req)))["consumedCapacity"] == {"memory": "1"}
    new = allocate("1.38", slices, claim(CLAIM0, req))
    assert (new.verdict, new.message) == (Verdict.ERROR, NEGATIVE.format(where))


def test_a_negative_request_of_a_capacity_the_device_lacks_skips_the_device_on_1_38() -> None:
    """The device must define every requested capacity before the sign is looked at
    (`resolveCapacityRequests` first): a device without it is skipped, no error."""
    allocation = allocate("1.38", on_node1(shared(DEVICE1, {"cores": "4"})), memory_claim("-1"))
    assert allocation.verdict is Verdict.NO_FIT


def _committed(name: str, dev: str, memory: str, share: str, namespace: str = "team-a") -> ResourceClaim:
    held = memory_claim("1", name, namespace)
    return allocated(
        held, result(REQ0, DRIVER_A, POOL1, dev, shareID=share, consumedCapacity={"memory": memory})
    )


SHARE_1 = "00000000-0000-4000-8000-000000000001"
SHARE_2 = "00000000-0000-4000-8000-000000000002"
TWO_SHARED = on_node1(shared(DEVICE1, {"memory": "8"}), shared(DEVICE2, {"memory": "8"}))


def test_a_committed_negative_consumed_capacity_fails_prefilter_from_1_38() -> None:
    """kube-scheduler v1.38's PreFilter cannot gather the allocated state while a committed claim holds a
    negative consumedCapacity (allocateddevices.go `consumedCapacityError`), so every pod needing an
    allocation fails; 1.37 sums the amount with the others and allocates. Releasing the claim clears it."""
    bad = _committed(CLAIM1, DEVICE1, "-2", SHARE_1)
    pod_claim = memory_claim("1")
    old = cluster([device_class()], TWO_SHARED, [bad], on("1.37")).allocate(NodeInfo(NODE1), [pod_claim])
    assert old.verdict is Verdict.FITS
    core = cluster([device_class()], TWO_SHARED, [bad], on("1.38"))
    new = core.allocate(NodeInfo(NODE1), [pod_claim])
    assert (new.verdict, new.message) == (
        Verdict.ERROR,
        "gather allocation state: claim team-a/claim-1, device driver-a/pool-1/device-1: consumed capacity "
        '"memory" must not be negative, got -2',
    )
    assert bad.status is not None and bad.status.allocation is not None
    core.release(bad.status.allocation)
    assert core.allocate(NodeInfo(NODE1), [pod_claim]).verdict is Verdict.FITS


def test_a_committed_negative_consumed_capacity_makes_room_before_1_38() -> None:
    """v0.37.2's CmpRequestOverCapacity checks only the sum with the committed amounts: 9 of a device of 8
    fits while a committed claim consumes -2 (kube-scheduler v1.37.2 binds it: the differential-placement
    scenario d28). Without that claim it does not."""
    bad = _committed(CLAIM1, DEVICE1, "-2", SHARE_1)
    slices = on_node1(shared(DEVICE1, {"memory": "8"}))
    pod_claim = memory_claim("9")
    assert cluster([device_class()], slices, [bad], on("1.37")).allocate(NodeInfo(NODE1), [pod_claim]).fits
    assert not cluster([device_class()], slices, [], on("1.37")).allocate(NodeInfo(NODE1), [pod_claim]).fits


def test_several_negative_claims_name_the_first_and_count_the_others_on_1_38() -> None:
    """`getCapacities` sorts the messages and names how many more claims there are."""
    bad = [_committed("b", DEVICE1, "-1", SHARE_1), _committed("a", DEVICE2, "-3", SHARE_2)]
    pod_claim = memory_claim("1")
    new = cluster([device_class()], TWO_SHARED, bad, on("1.38")).allocate(NodeInfo(NODE1), [pod_claim])
    assert new.message == (
        "gather allocation state: claim team-a/a, device driver-a/pool-1/device-2: consumed capacity "
        '"memory" must not be negative, got -3 (and 1 more claims with invalid consumed capacity)'
    )
    off = on("1.38", "DRAConsumableCapacity=false")
    plain = cluster([device_class()], TWO_SHARED, bad, off).allocate(
        NodeInfo(NODE1), [claim(CLAIM0, request(REQ0))]
    )
    assert plain.verdict is not Verdict.ERROR  # only with DRAConsumableCapacity, as upstream


def _versioned(*versions: str, key: str = "version") -> list[ResourceSlice]:
    return on_node1(
        *(device(f"device-{i}", attributes={"firmware": {key: v}}) for i, v in enumerate(versions, start=1))
    )


@pytest.mark.parametrize(
    ("constraint", "fits_1_37", "fits_1_38"),
    [("matchAttribute", False, True), ("distinctAttribute", True, False)],
)
def test_constraints_compare_versions_by_semver_from_1_38(
    constraint: str, fits_1_37: bool, fits_1_38: bool
) -> None:
    """`1.0.0+build.1` and `1.0.0+build.2` are equal in semver (`Version.Equals`, allocator_stable.go:921
    and stable/constraint.go:173), unequal as strings (1.37)."""
    pod_claim = claim(CLAIM0, request(REQ0, count=2), constraints=[{constraint: f"{DRIVER_A}/firmware"}])
    slices = _versioned("1.0.0+build.1", "1.0.0+build.2")
    for release, fits in (("1.37", fits_1_37), ("1.38", fits_1_38)):
        assert allocate(release, slices, pod_claim).fits is fits, release
    prerelease = _versioned("1.0.0-rc.1", "1.0.0")  # a pre-release is another version on both
    assert allocate("1.38", prerelease, pod_claim).fits is not fits_1_38


def test_list_constraints_compare_versions_by_semver_on_1_38() -> None:
    """With DRAListTypeAttributes the sets hold versions without build metadata (`versionWithoutBuild`)."""
    pod_claim = claim(
        CLAIM0, request(REQ0, count=2), constraints=[{"matchAttribute": f"{DRIVER_A}/firmware"}]
    )
    slices = on_node1(
        device(DEVICE1, attributes={"firmware": {"versions": ["1.0.0+a", "2.0.0"]}}),
        device(DEVICE2, attributes={"firmware": {"versions": ["1.0.0+b"]}}),
    )
    for release, fits in (("1.37", False), ("1.38", True)):
        assert allocate(release, slices, pod_claim, spec="DRAListTypeAttributes=true").fits is fits, release


QUALIFIED_FIRST = {f"{DRIVER_A}/model": {"string": "qualified"}, "model": {"string": "short"}}
SHORT_FIRST = {"model": {"string": "short"}, f"{DRIVER_A}/model": {"string": "qualified"}}


@pytest.mark.parametrize(
    ("attributes", "fits_1_37"),
    [(QUALIFIED_FIRST, False), (SHORT_FIRST, True)],
    ids=["qualified-first", "short-first"],
)
def test_cel_sees_the_qualified_spelling_of_an_attribute_from_1_38(
    attributes: dict[str, object], fits_1_37: bool
) -> None:
    """v0.38.0-beta.0's api/conversion.go keeps the qualified entry of `model` and `driver-a/model`, whatever
    their order; on 1.37 upstream's CEL map takes whichever Go's map order gives, dra-capacity the later."""
    selectors = [{"cel": {"expression": f'device.attributes["{DRIVER_A}"].model == "qualified"'}}]
    pod_claim = claim(CLAIM0, request(REQ0, selectors=selectors))
    slices = on_node1(device(DEVICE1, attributes=attributes))
    for release, fits in (("1.37", fits_1_37), ("1.38", True)):
        assert allocate(release, slices, pod_claim).fits is fits, release


def test_the_qualified_spelling_of_a_capacity_wins_from_1_38() -> None:
    """A device publishing `driver-a/memory: 8` and `memory: 2` has 8 on 1.38 (the result names it as the
    slice spells it, `capacityNameForStatus`); on 1.37 dra-capacity takes the later spelling, 2."""
    both = {f"{DRIVER_A}/memory": "8", "memory": "2"}
    slices = on_node1(shared(DEVICE1, both))
    pod_claim = memory_claim("4")
    assert not allocate("1.37", slices, pod_claim).fits
    assert first_result(allocate("1.38", slices, pod_claim))["consumedCapacity"] == {
        f"{DRIVER_A}/memory": "4"
    }
    selectors = [
        {"cel": {"expression": f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("8")) == 0'}}
    ]
    sized = claim(CLAIM0, request(REQ0, selectors=selectors))
    assert allocate("1.38", slices, sized).fits


BOUND = {
    "bindingConditions": ["dra.example.com/attached"],
    "bindingFailureConditions": ["dra.example.com/failed"],
}


@pytest.mark.parametrize("release", ["1.36", "1.37", "1.38"])
def test_devices_with_binding_conditions_are_allocated_by_default(release: str) -> None:
    """DRADeviceBindingConditions (beta on from 1.36, GA in 1.38) and DRAResourceClaimDeviceStatus (on from
    1.33) turn DeviceBindingAndStatus on by default (dynamicresources.go:841): the device is allocated and
    its result carries both condition lists (allocator_stable.go:401-403)."""
    slices = on_node1(device(DEVICE1, **BOUND))
    taken = first_result(allocate(release, slices, claim(CLAIM0, request(REQ0))))
    assert (taken["bindingConditions"], taken["bindingFailureConditions"]) == (
        BOUND["bindingConditions"],
        BOUND["bindingFailureConditions"],
    )


@pytest.mark.parametrize(
    ("release", "spec"),
    [
        ("1.35", ""),  # DRADeviceBindingConditions alpha, off by default
        ("1.36", "DRADeviceBindingConditions=false"),
        ("1.37", "DRADeviceBindingConditions=false"),
        ("1.38", "DRADeviceBindingConditions=false"),  # against 1.38's lock: a warning, still followed
        ("1.36", "DRAResourceClaimDeviceStatus=false"),
    ],
)
def test_devices_with_binding_conditions_are_never_allocated_with_a_gate_off(release: str, spec: str) -> None:
    """The negative control: either gate off turns DeviceBindingAndStatus off; such a device is skipped."""
    slices = on_node1(device(DEVICE1, **BOUND))
    assert allocate(release, slices, claim(CLAIM0, request(REQ0)), spec=spec).verdict is Verdict.NO_FIT


@pytest.mark.parametrize("release", ["1.36", "1.37", "1.38"])
def test_pools_with_binding_conditions_are_tried_last(release: str) -> None:
    """pools_stable.go:127-199: a pool holding a device with binding conditions comes after the others,
    whatever its name; a caller that cannot wait for the conditions leaves such devices alone."""
    slices = [
        resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, **BOUND)),
        resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
    ]
    pod_claim = claim(CLAIM0, request(REQ0))
    assert first_result(allocate(release, slices, pod_claim))["pool"] == POOL2
    two = claim(CLAIM0, request(REQ0, count=2))
    assert allocate(release, slices, two).fits
    assert allocate(release, slices, two, spec="DRADeviceBindingConditions=false").verdict is Verdict.NO_FIT
    waitless = Cluster(on(release), [device_class()], slices, binding_conditions=False)
    assert waitless.allocate(NodeInfo(NODE1), [two]).verdict is Verdict.NO_FIT
