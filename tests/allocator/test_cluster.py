"""`Cluster.allocate` against upstream's shared allocator test table (allocatortesting), ported case by case.

Each case keeps upstream's name. Expected results are written as the API renders them; share IDs are fixed by
the test's share-ID factory (upstream normalizes them to aaaaaaaa-...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from dra_objects import (
    ALL_NODES,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE0,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    PER_DEVICE,
    POOL1,
    POOL2,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    REQ2,
    SHARE,
    SLICE1,
    SLICE2,
    SLICE3,
    SUB0,
    SUB1,
    all_request,
    allocated,
    capacity,
    claim,
    device,
    device_class,
    dump,
    expect,
    gates,
    label_selector,
    local,
    node,
    one_device_slice,
    opaque,
    pool,
    prioritized,
    request,
    resource_slice,
    result,
    run,
    selector,
    shared,
    simple_claim,
    sub_request,
)

from resourceapi.gates import FeatureGates
from resourceapi.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice

MULTI_CLASS = f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == true'
DEDICATED_CLASS = f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == false'


def multi_class(name: str = CLASS_A) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [selector(MULTI_CLASS)]}}
    )


def dedicated_class(name: str = CLASS_A) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [selector(DEDICATED_CLASS)]}}
    )


RANGE_2_2_4 = {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}


def ranged(value: str) -> dict[str, Any]:
    """upstream withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4."""
    return {"value": value, "requestPolicy": RANGE_2_2_4}


def valid_values(value: str, default: str, *extra: str) -> dict[str, Any]:
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *extra]}}


def share(
    req: str, dev: str, consumed: dict[str, str] | None = None, pool_name: str = POOL1
) -> dict[str, Any]:
    out = result(req, DRIVER_A, pool_name, dev, shareID=SHARE)
    if consumed:
        out["consumedCapacity"] = consumed
    return out


def admin(req: str, dev: str) -> dict[str, Any]:
    return result(req, DRIVER_A, POOL1, dev, adminAccess=True)


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def consumes(set_name: str, **counters: str) -> list[dict[str, Any]]:
    return [{"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}]


def attrs(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[key] = {"bool": value}
        elif isinstance(value, int):
            out[key] = {"int": value}
        elif isinstance(value, str) and value[:1] == "v" and value[1:2].isdigit():
            out[key] = {"version": value[1:]}
        else:
            out[key] = {"string": value}
    return out


def memory_selector(amount: str) -> dict[str, Any]:
    return selector(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{amount}")) >= 0')


@dataclass
class Case:
    claims: list[ResourceClaim]
    classes: list[DeviceClass]
    slices: list[ResourceSlice]
    want: list[dict[str, Any]] | None = None
    error: str | None = None
    on: tuple[str, str] = (NODE1, REGION1)
    allocated_claims: list[ResourceClaim] = field(default_factory=list)
    feature_gates: FeatureGates = field(default_factory=gates)
    calls: int | None = None


def check_case(case: Case) -> None:
    """Run one table case and compare with upstream's expected error, results and step count."""
    outcome = run(
        case.claims,
        case.classes,
        case.slices,
        on=node(*case.on),
        allocated_claims=case.allocated_claims,
        feature_gates=case.feature_gates,
    )
    if case.error is not None:
        assert outcome.error is not None, dump(outcome)
        assert case.error in outcome.error
        assert outcome.results is None
        return
    assert outcome.error is None, outcome.error
    assert dump(outcome) == case.want
    if case.calls is not None:
        assert outcome.allocate_one_calls == case.calls


def two_devices(*extra: dict[str, Any]) -> ResourceSlice:
    return resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2), *extra)


def n_devices(name: str, node_name: str, pool_name: str, driver: str, n: int) -> ResourceSlice:
    return resource_slice(name, node_name, pool_name, driver, *(device(f"device-{i}") for i in range(n)))


def numa_devices() -> ResourceSlice:
    return resource_slice(
        SLICE1,
        NODE1,
        POOL1,
        DRIVER_A,
        device(DEVICE1, attributes=attrs(numa=1)),
        device(DEVICE2, attributes=attrs(numa=2)),
    )


def prior(claim_name: str, *results: dict[str, Any]) -> ResourceClaim:
    """A claim allocated earlier (committed state)."""
    return allocated(simple_claim(claim_name), *results)


def admin_request(req: dict[str, Any]) -> dict[str, Any]:
    req["exactly"]["adminAccess"] = True
    return req


CASES: dict[str, Case] = {
    "empty": Case([], [], [], want=[]),
    "simple": Case(
        [simple_claim()],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "other-node": Case(
        [simple_claim()],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_B), one_device_slice(SLICE2, NODE2, POOL2, DRIVER_A)],
        on=(NODE2, REGION2),
        want=[expect(local(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "small-and-large": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, selectors=[memory_selector("1Gi")]),
                request(REQ1, selectors=[memory_selector("2Gi")]),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {"memory": "1Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
            )
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)
            )
        ],
    ),
    "small-and-large-backtrack-requests": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, selectors=[memory_selector("1Gi")]),
                request(REQ1, selectors=[memory_selector("2Gi")]),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE1, {"memory": "1Gi"}),
            )
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)
            )
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        [
            claim(CLAIM0, request(REQ0, selectors=[memory_selector("1Gi")])),
            claim(CLAIM1, request(REQ1, selectors=[memory_selector("2Gi")])),
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE1, {"memory": "1Gi"}),
            )
        ],
        want=[
            expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            expect(local(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
    "devices-split-across-different-slices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)
            )
        ],
    ),
    "obsolete-slice": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice("slice-1-obsolete", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice("slice-1-newer", NODE1, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2)),
        ],
        want=None,
    ),
    "duplicate-slice": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE1 + "-2", NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        ],
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case([simple_claim()], [device_class()], [], want=None),
    "not-enough-suitable-devices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "no-classes": Case(
        [simple_claim()],
        [],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        [simple_claim(cls="unknown-class")],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="could not retrieve device class unknown-class",
    ),
    "empty-class": Case(
        [simple_claim(cls="")],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "all-devices-single": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-many": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)
            )
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1))],
        error="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is "
        "currently "
        "being updated",
    ),
    "all-devices-plus-another": Case(
        [claim(CLAIM0, all_request(REQ0)), claim(CLAIM1, request(REQ0, CLASS_B))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B)],
        want=[
            expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            expect(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "all-devices-no-solution": Case(
        [claim(CLAIM0, request(REQ0)), claim(CLAIM1, all_request(REQ0))],
        [device_class()],
        [two_devices()],
    ),
    "all-devices-slice-without-devices": Case(
        [claim(CLAIM0, all_request(REQ0))], [device_class()], [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A)]
    ),
    "all-devices-some-allocated": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [two_devices()],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-some-allocated-admin-access": Case(
        [claim(CLAIM0, admin_request(all_request(REQ0)))],
        [device_class()],
        [two_devices()],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[expect(local(NODE1), admin(REQ0, DEVICE1), admin(REQ0, DEVICE2))],
    ),
    "all-devices-some-allocating-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0)), admin_request(all_request(REQ1)))],
        [device_class()],
        [two_devices()],
    ),
    "count-devices-some-allocated-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0, count=2)))],
        [device_class()],
        [two_devices()],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[expect(local(NODE1), admin(REQ0, DEVICE1), admin(REQ0, DEVICE2))],
    ),
    "separate-claims-share-device-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0))), claim(CLAIM1, admin_request(request(REQ0)))],
        [device_class()],
        [two_devices()],
        want=[expect(local(NODE1), admin(REQ0, DEVICE1)), expect(local(NODE1), admin(REQ0, DEVICE1))],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        [simple_claim(), claim(CLAIM1, admin_request(request(REQ0)))],
        [device_class()],
        [two_devices()],
        want=[
            expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            expect(local(NODE1), admin(REQ0, DEVICE1)),
        ],
    ),
    "admin-access-disabled": Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=gates(DRAAdminAccess=False),
        error="claim claim-0, request req-0: admin access is requested, but the feature is disabled",
    ),
    "network-attached-device": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A, device(DEVICE1))],
        want=[expect(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, label_selector("region", REGION2), POOL1, DRIVER_A, device(DEVICE1))],
    ),
    "many-network-attached-devices": Case(
        [claim(CLAIM0, request(REQ0, count=4))],
        [device_class()],
        [
            resource_slice(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE2, ALL_NODES, POOL2, DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE3, label_selector("planet", "earth"), "pool-3", DRIVER_A, device(DEVICE1)),
            resource_slice("slice-4", NODE1, "pool-4", DRIVER_A, device(DEVICE1)),
        ],
        want=[
            expect(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, "pool-3", DEVICE1),
                result(REQ0, DRIVER_A, "pool-4", DEVICE1),
            )
        ],
    ),
    "local-and-network-attached-devices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
            resource_slice(SLICE2, label_selector("region", REGION1), POOL2, DRIVER_A, device(DEVICE1)),
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1)
            )
        ],
    ),
    "several-different-drivers": Case(
        [simple_claim(), simple_claim(CLAIM1, cls=CLASS_B)],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B)],
        want=[
            expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            expect(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
    ),
    "already-allocated-devices": Case(
        [simple_claim()],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "with-constraint": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                constraints=[
                    {"matchAttribute": f"{DRIVER_A}/numa"},
                    {"matchAttribute": f"{DRIVER_A}/driverVersion"},
                    {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                    {"matchAttribute": f"{DRIVER_A}/boolAttribute"},
                ],
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1,
                    attributes=attrs(driverVersion="v1.0.0", numa=1, stringAttribute="s", boolAttribute=True),
                ),
                device(
                    DEVICE2,
                    attributes=attrs(driverVersion="v1.0.0", numa=1, stringAttribute="s", boolAttribute=True),
                ),
            )
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)
            )
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        [claim(CLAIM0, request(REQ0), constraints=[{"matchAttribute": f"{DRIVER_A}/NonExistentAttribute"}])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "with-constraint-not-matching-int-attribute": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        [device_class()],
        [numa_devices()],
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        [claim(CLAIM0, all_request(REQ0), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        [device_class()],
        [numa_devices()],
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim "
        "constraint "
        "would not be satisfied",
    ),
    "with-constraint-for-request": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                constraints=[{"requests": [REQ0], "matchAttribute": f"{DRIVER_A}/driverVersion"}],
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes=attrs(driverVersion="v1.0.0")),
                device(DEVICE2, attributes=attrs(driverVersion="v2.0.0")),
            )
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)
            )
        ],
    ),
    "with-constraint-for-request-retry": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                constraints=[
                    {"requests": [REQ0], "matchAttribute": f"{DRIVER_A}/driverVersion"},
                    {"matchAttribute": f"{DRIVER_A}/stringAttribute"},
                ],
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes=attrs(driverVersion="v1.0.0", stringAttribute="a")),
                device(DEVICE2, attributes=attrs(driverVersion="v2.0.0", stringAttribute="b")),
                device(DEVICE3, attributes=attrs(driverVersion="v3.0.0", stringAttribute="b")),
            )
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3)
            )
        ],
    ),
    "with-class-device-config": Case(
        [simple_claim()],
        [device_class(config=[opaque(DRIVER_A, "classAttribute")])],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[
            expect(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[{"source": "FromClass", **opaque(DRIVER_A, "classAttribute")}],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1), request(REQ2, CLASS_B))],
        [
            device_class(config=[opaque(DRIVER_A, "classAttribute-A")]),
            device_class(CLASS_B, DRIVER_B, config=[opaque(DRIVER_B, "classAttribute-B")]),
        ],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 2), one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B)],
        want=[
            expect(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_B, POOL1, DEVICE1),
                config=[
                    {"source": "FromClass", "requests": [REQ0, REQ1], **opaque(DRIVER_A, "classAttribute-A")},
                    {"source": "FromClass", "requests": [REQ2], **opaque(DRIVER_B, "classAttribute-B")},
                ],
            )
        ],
    ),
    "with-claim-config-for-two-requests": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                request(REQ2),
                config=[{"requests": [REQ0, REQ1], **opaque(DRIVER_A, "deviceAttribute")}],
            )
        ],
        [device_class()],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 3)],
        want=[
            expect(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_A, POOL1, DEVICE2),
                config=[
                    {"source": "FromClaim", "requests": [REQ0, REQ1], **opaque(DRIVER_A, "deviceAttribute")}
                ],
            )
        ],
    ),
    "claim-config-covering-all-requests-is-cleared": Case(
        [claim(CLAIM0, request(REQ0), config=[{"requests": [REQ0], **opaque(DRIVER_A, "deviceAttribute")}])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[
            expect(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[{"source": "FromClaim", **opaque(DRIVER_A, "deviceAttribute")}],
            )
        ],
    ),
    "unknown-selector": Case(
        [claim(CLAIM0, request(REQ0, selectors=[{"future": {}}]))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-allocation-mode": Case(
        [claim(CLAIM0, request(REQ0, allocationMode="future-mode"))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        [claim(CLAIM0, request(REQ0), constraints=[{"requests": [REQ0]}])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        [claim(CLAIM0, request(REQ0, selectors=[selector("noSuchVar")]))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "invalid-CEL-one-device-class": Case(
        [simple_claim()],
        [
            DeviceClass.model_validate(
                {"metadata": {"name": CLASS_A}, "spec": {"selectors": [selector("noSuchVar")]}}
            )
        ],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
    ),
    "CEL-runtime-error-is-fatal": Case(
        [claim(CLAIM0, request(REQ0, selectors=[selector(f'device.attributes["{DRIVER_A}"].healthy')]))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime error: "
        "no such key: healthy",
    ),
    "too-many-devices-single-request": Case(
        [claim(CLAIM0, request(REQ0, count=500))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32",
    ),
    "many-devices-okay": Case(
        [claim(CLAIM0, request(REQ0, count=32))],
        [device_class()],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32)],
        want=[expect(local(NODE1), *(result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(32)))],
    ),
    "too-many-devices-total": Case(
        [claim(CLAIM0, request(REQ0, count=16), request(REQ1, count=17))],
        [device_class()],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33)],
        error="exceeds the claim limit",
    ),
    "prioritized-list-first-unavailable": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[expect(local(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-non-available": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A, count=2)))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "prioritized-list-class-config": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_A, count=2), sub_request(SUB1, CLASS_B)))],
        [
            device_class(config=[opaque(DRIVER_A, "classAttribute-A")]),
            device_class(CLASS_B, DRIVER_B, config=[opaque(DRIVER_B, "classAttribute-B")]),
        ],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        want=[
            expect(
                local(NODE1),
                result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1),
                config=[{"source": "FromClass", **opaque(DRIVER_B, "classAttribute-B")}],
            )
        ],
    ),
    "claim-config-scoped-to-subrequests-of-one-request": Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)),
                request(REQ1),
                config=[{"requests": [f"{REQ0}/{SUB1}"], **opaque(DRIVER_A, "deviceAttribute")}],
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [two_devices()],
        want=[
            expect(
                local(NODE1),
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                config=[
                    {
                        "source": "FromClaim",
                        "requests": [f"{REQ0}/{SUB1}"],
                        **opaque(DRIVER_A, "deviceAttribute"),
                    }
                ],
            )
        ],
    ),
    "prioritized-list-disabled": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=gates(DRAPrioritizedList=False),
        error="claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
    ),
    "prioritized-list-with-backtracking": Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0, count=2), sub_request(SUB1)),
                request(REQ1, count=2),
            )
        ],
        [device_class()],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 3)],
        want=[
            expect(
                local(NODE1),
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            )
        ],
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, count=500), sub_request(SUB1)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[expect(local(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-single-device": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, consumesCounters=consumes("cs-1", memory="4Gi")),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set("cs-1", memory="8Gi")]
            ),
        ],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1))],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE0, consumesCounters=consumes("cs-1", memory="4Gi")),
                device(DEVICE1, consumesCounters=consumes("cs-1", memory="6Gi")),
                device(DEVICE2, consumesCounters=consumes("cs-1", memory="4Gi")),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set("cs-1", memory="8Gi")]
            ),
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE2)
            )
        ],
    ),
    "partitionable-devices-no-capacity-available": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE0, consumesCounters=consumes("cs-1", memory="4Gi")),
                device(DEVICE1, consumesCounters=consumes("cs-1", memory="16Gi")),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set("cs-1", memory="18Gi")]
            ),
        ],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE0))],
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, consumesCounters=consumes("cs-1", memory="4Gi")),
            )
        ],
        feature_gates=gates(DRAPartitionableDevices=False),
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                PER_DEVICE,
                POOL1,
                DRIVER_A,
                device(DEVICE1, nodeName=NODE2),
                device(DEVICE2, nodeName=NODE1),
            )
        ],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                PER_DEVICE,
                POOL1,
                DRIVER_A,
                device(DEVICE1, nodeSelector=label_selector("region", REGION1)),
            )
        ],
        want=[expect(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 3),
                DRIVER_A,
                device(DEVICE1, consumesCounters=consumes("cs-1", memory="4Gi")),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, counter_sets=[counter_set("cs-1", memory="8Gi")]
            ),
            resource_slice(
                SLICE3, NODE1, pool(POOL1, 3), DRIVER_A, counter_sets=[counter_set("cs-1", memory="8Gi")]
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                device(DEVICE1, consumesCounters=consumes("cs-2", memory="4Gi")),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set("cs-1", memory="8Gi")]
            ),
        ],
        error="invalid resource pools were encountered",
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            one_device_slice(SLICE3, NODE1, POOL2, DRIVER_A),
        ],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "no-allocation-from-incomplete-pools": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1))],
    ),
    "tainted-two-devices": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1, taints=[{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]
                ),
                device(
                    DEVICE2, taints=[{"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}]
                ),
            )
        ],
    ),
    "tainted-two-devices-tolerated": Case(
        [
            claim(
                CLAIM0,
                request(
                    REQ0,
                    tolerations=[
                        {
                            "operator": "Equal",
                            "key": "taint-key",
                            "value": "taint-value-2",
                            "effect": "NoExecute",
                        }
                    ],
                ),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    DEVICE1, taints=[{"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}]
                ),
                device(
                    DEVICE2, taints=[{"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}]
                ),
            )
        ],
        want=[
            expect(
                local(NODE1),
                result(
                    REQ0,
                    DRIVER_A,
                    POOL1,
                    DEVICE2,
                    tolerations=[
                        {
                            "operator": "Equal",
                            "key": "taint-key",
                            "value": "taint-value-2",
                            "effect": "NoExecute",
                        }
                    ],
                ),
            )
        ],
    ),
    "tainted-no-effect": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[{"key": "k", "value": "v", "effect": "None"}]),
            )
        ],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-disabled": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            )
        ],
        feature_gates=gates(DRADeviceTaints=False),
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "binding-conditions-without-feature-gate": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, bindingConditions=["ready"], bindingFailureConditions=["failed"]),
            )
        ],
    ),
    "node-restriction": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1, label_selector("planet", "earth"), POOL1, DRIVER_A, device(DEVICE1, bindsToNode=True)
            )
        ],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-nodes-device-needs-no-node-selector": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, ALL_NODES, POOL1, DRIVER_A, device(DEVICE1))],
        want=[expect(None, result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "check-combinations-within-single-request-single-pool-single-slice": Case(
        [claim(CLAIM0, request(REQ0, count=5))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *(device(f"device-{i}") for i in range(1, 5)))],
        calls=16,
    ),
    "check-combinations-with-backtracking": Case(
        [
            claim(
                CLAIM0,
                request(REQ1, count=2),
                request(REQ2, selectors=[selector(f'device.attributes["{DRIVER_A}"].type == "X"')]),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes=attrs(type="X")),
                device(DEVICE2, attributes=attrs(type="Y")),
                device(DEVICE3, attributes=attrs(type="Y")),
            )
        ],
        want=[
            expect(
                local(NODE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        calls=12,
    ),
    "prioritized-list-max-allocation-limit-request": Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0, count=32), sub_request(SUB1, count=16)),
                prioritized(REQ1, sub_request(SUB0, count=32), sub_request(SUB1, count=16)),
            )
        ],
        [device_class()],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 64)],
        want=[
            expect(
                local(NODE1),
                *(result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, f"device-{i}") for i in range(16)),
                *(result(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, f"device-{i}") for i in range(16, 32)),
            )
        ],
        calls=75,
    ),
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0, sub_request(SUB0, count=0, allocationMode="All"), sub_request(SUB1, count=2)
                ),
                request(REQ1, CLASS_B, count=2),
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 31), n_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2)],
        want=[
            expect(
                local(NODE1),
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE0),
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE0),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
            )
        ],
        calls=42,
    ),
    # --- consumable capacity (KEP-5075) ---------------------------------------------------------------------
    "consumable-capacity-disabled-feature": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"})))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=gates(DRAConsumableCapacity=False, DRAExtendedResourceCapacity=False),
        error="claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature "
        "is disabled",
    ),
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, capacity=capacity(**{"capacity-0": "1"})),
                    sub_request(SUB1, capacity=capacity(**{"capacity-0": "1"})),
                ),
            )
        ],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=gates(DRAConsumableCapacity=False, DRAExtendedResourceCapacity=False),
        error="claim claim-0, subrequest subReq-0: has capacity requests, but the DRAConsumableCapacity "
        "feature is disabled",
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"})))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-1": "1"}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1))],
        want=[expect(local(NODE1), share(REQ0, DEVICE1)), expect(local(NODE1), share(REQ0, DEVICE1))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, {"capacity-0": "1"}),
                shared(DEVICE2, {"capacity-0": "1"}),
            )
        ],
        want=[
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "1"})),
            expect(local(NODE1), share(REQ0, DEVICE2, {"capacity-0": "1"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        [
            claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
            claim(CLAIM1, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
        ],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": "2"}))],
        want=[
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "1"})),
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "1"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("4")}))],
        want=[
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "2"})),
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": valid_values("1", "0")})
            )
        ],
        want=[
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "0"})),
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "0"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"})))],
        [multi_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": valid_values("1", "0")})
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        [
            claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
            claim(CLAIM1, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
        ],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("4")}))],
        want=[
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "2"})),
            expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "3"})))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("4")}))],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "4"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "2"})))],
        [multi_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": valid_values("3", "1", "3")})
            )
        ],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "3"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        [
            claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
            claim(CLAIM1, request(REQ0, capacity=capacity(**{"capacity-0": "2"}))),
        ],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("2")}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "6"})))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("10")}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "2"})))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("4")}))],
        allocated_claims=[
            prior("other", share(REQ0, DEVICE1, {"capacity-0": "2"}) | {"shareID": "b" * 8 + SHARE[8:]})
        ],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "2"})))],
        [multi_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, {"capacity-0": ranged("2")}),
                shared(DEVICE2, {"capacity-0": ranged("2")}),
            )
        ],
        allocated_claims=[
            prior("other", share(REQ0, DEVICE1, {"capacity-0": "2"}) | {"shareID": "b" * 8 + SHARE[8:]})
        ],
        want=[expect(local(NODE1), share(REQ0, DEVICE2, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, capacity=capacity(**{"capacity-0": "2"})),
                request(REQ1, capacity=capacity(**{"capacity-0": "2"})),
                constraints=[{"matchAttribute": f"{DRIVER_A}/stringAttribute"}],
            ),
            claim(CLAIM1, request(REQ0, capacity=capacity(**{"capacity-0": "2"}))),
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE2, {"capacity-0": ranged("2")}, attributes=attrs(stringAttribute="value1")),
                shared(DEVICE1, {"capacity-0": ranged("4")}, attributes=attrs(stringAttribute="value2")),
            )
        ],
        want=[
            expect(
                local(NODE1),
                share(REQ0, DEVICE1, {"capacity-0": "2"}),
                share(REQ1, DEVICE1, {"capacity-0": "2"}),
            ),
            expect(local(NODE1), share(REQ0, DEVICE2, {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, capacity=capacity(**{"capacity-0": "4"})),
                    sub_request(SUB1, capacity=capacity(**{"capacity-0": "2"})),
                ),
            )
        ],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("2")}))],
        want=[expect(local(NODE1), share(f"{REQ0}/{SUB1}", DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=capacity(**{"capacity-0": "2"})))],
        [multi_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, {"capacity-0": "2"}),
                shared(DEVICE2, {"capacity-0": "1"}),
            )
        ],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, capacity=capacity(**{"capacity-0": "1"})),
                all_request(REQ1, capacity=capacity(**{"capacity-0": "1"})),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, {"capacity-0": "2"}),
                shared(DEVICE2, {"capacity-0": "1"}),
            )
        ],
        want=[
            expect(
                local(NODE1),
                share(REQ0, DEVICE1, {"capacity-0": "1"}),
                share(REQ1, DEVICE1, {"capacity-0": "1"}),
                share(REQ1, DEVICE2, {"capacity-0": "1"}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, capacity=capacity(**{"capacity-0": "1"})),
                all_request(REQ1, capacity=capacity(**{"capacity-0": "1"})),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, {"capacity-0": "1"}),
                shared(DEVICE2, {"capacity-0": "1"}),
            )
        ],
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"})))],
        [dedicated_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"capacity-0": "1"}))],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        [
            claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
            claim(CLAIM1, request(REQ0, capacity=capacity(**{"capacity-0": "1"}))),
        ],
        [dedicated_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"capacity-0": ranged("2")}))],
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"})))],
        [dedicated_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": "1"}))],
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        [claim(CLAIM0, request(REQ0, capacity=capacity(**{"capacity-0": "1"})))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {"capacity-0": ranged("2")}))],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                prioritized(
                    REQ1,
                    sub_request(SUB0, selectors=[memory_selector("6Gi")]),
                    sub_request(SUB1, selectors=[memory_selector("4Gi")]),
                ),
            )
        ],
        [multi_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                shared(DEVICE1, {"memory": "4Gi"}, consumesCounters=consumes("cs-1", memory="4Gi")),
                shared(DEVICE2, {"memory": "6Gi"}, consumesCounters=consumes("cs-1", memory="6Gi")),
                shared(DEVICE3, {"memory": "4Gi"}, consumesCounters=consumes("cs-1", memory="4Gi")),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set("cs-1", memory="8Gi")]
            ),
        ],
        want=[
            expect(
                local(NODE1),
                share(REQ0, DEVICE1, {"memory": "4Gi"}),
                share(f"{REQ1}/{SUB1}", DEVICE3, {"memory": "4Gi"}),
            )
        ],
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        [
            claim(
                CLAIM0,
                request(
                    REQ0,
                    capacity=capacity(**{"capacity-0": "1"}),
                    selectors=[selector(f'device.attributes["{DRIVER_A}"].mode == "b"')],
                ),
            )
        ],
        [multi_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                shared(
                    DEVICE1,
                    {"capacity-0": "1"},
                    attributes=attrs(mode="a"),
                    consumesCounters=consumes("cs-1", **{"capacity-0": "1"}),
                ),
                shared(
                    DEVICE2,
                    {"capacity-0": "1"},
                    attributes=attrs(mode="b"),
                    consumesCounters=consumes("cs-1", **{"capacity-0": "1"}),
                ),
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set("cs-1", **{"capacity-0": "1"})],
            ),
        ],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {"capacity-0": "1"}))],
    ),
    "with-distinct-constraints": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                constraints=[{"distinctAttribute": f"{DRIVER_A}/stringAttribute"}],
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes=attrs(stringAttribute="a")),
                device(DEVICE2, attributes=attrs(stringAttribute="a")),
                device(DEVICE3, attributes=attrs(stringAttribute="b")),
            )
        ],
        want=[
            expect(
                local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE3)
            )
        ],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        [claim(CLAIM0, request(REQ0), constraints=[{"distinctAttribute": f"{DRIVER_A}/stringAttribute"}])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, capacity=capacity(**{"capacity-0": "1"})),
                request(REQ1, capacity=capacity(**{"capacity-0": "1"})),
                constraints=[{"distinctAttribute": f"{DRIVER_A}/stringAttribute"}],
            )
        ],
        [multi_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, {"capacity-0": "2"}, attributes=attrs(stringAttribute="a")),
                shared(DEVICE2, {"capacity-0": "2"}, attributes=attrs(stringAttribute="b")),
            )
        ],
        want=[
            expect(
                local(NODE1),
                share(REQ0, DEVICE1, {"capacity-0": "1"}),
                share(REQ1, DEVICE2, {"capacity-0": "1"}),
            )
        ],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, pool(POOL1, 2, generation=1), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE2, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2)),
            resource_slice(SLICE3, NODE2, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE3)),
        ],
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        ],
        want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
}


def list_case(
    kind: str,
    attribute: str,
    values: list[dict[str, Any]],
    count: int,
    want: list[str] | None,
    lists: bool = True,
) -> Case:
    """upstream's list-attributes-* cases: one request of `count` devices under one constraint."""
    devices = [device(f"device-{i + 1}", attributes={attribute: v}) for i, v in enumerate(values)]
    return Case(
        [claim(CLAIM0, request(REQ0, count=count), constraints=[{kind: f"{DRIVER_A}/{attribute}"}])],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devices)],
        want=None
        if want is None
        else [expect(local(NODE1), *(result(REQ0, DRIVER_A, POOL1, d) for d in want))],
        feature_gates=gates(DRAListTypeAttributes=lists),
    )


MATCH, DISTINCT = "matchAttribute", "distinctAttribute"


def strs(*v: str) -> dict[str, Any]:
    return {"strings": list(v)}


def one(v: str) -> dict[str, Any]:
    return {"string": v}


LIST_CASES: dict[str, Case] = {
    "list-attributes-match-constaint-scalar-string-values": list_case(
        MATCH, "stringAttribute", [one("value1"), one("value1")], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-list-of-string-values-with-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        [DEVICE1, DEVICE2],
    ),
    "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2"), strs("value2", "value3"), strs("value3", "value1")],
        3,
        None,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements": list_case(
        MATCH, "stringAttribute", [one("value1"), strs("value1", "value2")], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements": (
        list_case(MATCH, "stringAttribute", [one("value1"), strs("value2", "value3")], 2, None)
    ),
    "list-attributes-match-constaint-list-of-int-values-with-common-elements": list_case(
        MATCH, "numa", [{"ints": [0, 1, 2]}, {"ints": [1, 2, 3]}], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-list-of-version-values-with-common-elements": list_case(
        MATCH,
        "driverVersion",
        [{"versions": ["1.0.0", "1.1.0", "2.0.0"]}, {"versions": ["1.1.0", "2.0.0", "2.1.0"]}],
        2,
        [DEVICE1, DEVICE2],
    ),
    "list-attributes-disabled-match-constraint-with-lists": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        None,
        lists=False,
    ),
    "list-attributes-distinct-constraint-scalar-string-values-not-distinct": list_case(
        DISTINCT, "stringAttribute", [one("value1"), one("value1")], 2, None
    ),
    "list-attributes-distinct-constraint-list-of-string-values-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2"), strs("value2", "value3"), strs("value3", "value4")],
        2,
        [DEVICE1, DEVICE3],
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [one("value1"), strs("value1", "value2"), strs("value2", "value3")],
        2,
        [DEVICE1, DEVICE3],
    ),
    "list-attributes-distinct-constraint-list-of-bool-values-all-distinct": list_case(
        DISTINCT,
        "boolAttribute",
        [{"bools": [True]}, {"bools": [True, False]}, {"bools": [False]}],
        2,
        [DEVICE1, DEVICE3],
    ),
    "list-attributes-disabled-distinct-constraint-with-lists": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        None,
        lists=False,
    ),
}
CASES.update(LIST_CASES)


def versioned_memory(name: str, memory: str, version: str) -> dict[str, Any]:
    return device(name, {"memory": memory}, attributes={"driverVersion": {"version": version}})


def sub_constraint_case(scope: list[str], pool2_devices: list[dict[str, Any]], want_sub: str) -> Case:
    """upstream's prioritized-list-subrequests-with-constraints-ref-* cases."""
    return Case(
        [
            claim(
                CLAIM0,
                request(REQ0, selectors=[memory_selector("8Gi")]),
                prioritized(
                    REQ1,
                    sub_request(SUB0, selectors=[memory_selector("2Gi")]),
                    sub_request(SUB1, selectors=[memory_selector("1Gi")]),
                ),
                constraints=[{"requests": scope, "matchAttribute": f"{DRIVER_A}/driverVersion"}],
            )
        ],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, versioned_memory(DEVICE1, "8Gi", "1.0.0")),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, *pool2_devices),
        ],
        want=[
            expect(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(f"{REQ1}/{SUB1}", DRIVER_A, POOL2, want_sub),
            )
        ],
    )


def two_sets(memory1: str, cpus1: str, cpus2: str, memory2: str) -> list[dict[str, Any]]:
    return consumes("counter-set-1", memory=memory1, cpus=cpus1) + consumes(
        "counter-set-2", cpus=cpus2, memory=memory2
    )


CASES["partitionable-devices-multiple-counters"] = Case(
    [claim(CLAIM0, request(REQ0), request(REQ1))],
    [device_class()],
    [
        resource_slice(
            SLICE1,
            NODE1,
            pool(POOL1, 2),
            DRIVER_A,
            device(
                DEVICE1, {"memory": "4Gi", "cpus": "6"}, consumesCounters=two_sets("4Gi", "6", "4", "2Gi")
            ),
            device(
                DEVICE2, {"memory": "6Gi", "cpus": "4"}, consumesCounters=two_sets("6Gi", "4", "6", "6Gi")
            ),
            device(
                DEVICE3, {"memory": "4Gi", "cpus": "4"}, consumesCounters=two_sets("4Gi", "4", "4", "4Gi")
            ),
        ),
        resource_slice(
            SLICE2,
            NODE1,
            pool(POOL1, 2),
            DRIVER_A,
            counter_sets=[
                counter_set("counter-set-1", cpus="8", memory="18Gi"),
                counter_set("counter-set-2", cpus="12", memory="18Gi"),
            ],
        ),
    ],
    want=[
        expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3))
    ],
)


def shared_counter_pool(*device_slices: ResourceSlice) -> list[ResourceSlice]:
    """A 3-slice pool: the counter set (targeting node-1) plus the given device slices."""
    counters = resource_slice(
        SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, counter_sets=[counter_set("counter-set-1", memory="8Gi")]
    )
    return [counters, *device_slices]


def memory_device(name: str, memory: str, counter_set_name: str = "counter-set-1") -> dict[str, Any]:
    return device(name, {"memory": memory}, consumesCounters=consumes(counter_set_name, memory=memory))


CASES["allocation-mode-all-with-multi-host-resource-pool"] = Case(
    [claim(CLAIM0, all_request(REQ0))],
    [device_class()],
    [
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
    ],
    want=[expect(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
)
CASES["partitionable-devices-devices-on-different-nodes-consume-same-counter-set"] = Case(
    [
        claim(
            CLAIM0,
            prioritized(
                REQ0,
                sub_request(SUB0, selectors=[memory_selector("6Gi")]),
                sub_request(SUB1, selectors=[memory_selector("2Gi")]),
            ),
        )
    ],
    [device_class()],
    shared_counter_pool(
        resource_slice(
            SLICE2,
            NODE1,
            pool(POOL1, 3),
            DRIVER_A,
            memory_device(DEVICE1, "6Gi"),
            memory_device(DEVICE2, "2Gi"),
        ),
        resource_slice(SLICE3, NODE2, pool(POOL1, 3), DRIVER_A, memory_device(DEVICE3, "6Gi")),
    ),
    allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE3))],
    want=[expect(local(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE2))],
)
CASES["partitionable-devices-devices-consume-counter-set-in-different-nodes"] = Case(
    [simple_claim()],
    [device_class()],
    shared_counter_pool(
        resource_slice(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, memory_device(DEVICE1, "6Gi")),
        resource_slice(
            SLICE3,
            NODE2,
            pool(POOL1, 3),
            DRIVER_A,
            memory_device(DEVICE2, "6Gi"),
            memory_device(DEVICE3, "2Gi"),
        ),
    ),
    allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    on=(NODE2, REGION1),
    want=[expect(local(NODE2), result(REQ0, DRIVER_A, POOL1, DEVICE3))],
)
CASES["partitionable-devices-validation-error-on-non-targeting-slice"] = Case(
    [simple_claim()],
    [device_class()],
    shared_counter_pool(
        resource_slice(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, memory_device(DEVICE1, "6Gi")),
        resource_slice(
            SLICE3, NODE2, pool(POOL1, 3), DRIVER_A, memory_device(DEVICE3, "6Gi", "counter-set-2")
        ),
    ),
    error="invalid resource pools were encountered",
)
CASES["prioritized-list-subrequests-with-constraints-ref-parent-request"] = sub_constraint_case(
    [REQ0, REQ1],
    [versioned_memory(DEVICE2, "2Gi", "2.0.0"), versioned_memory(DEVICE3, "1Gi", "1.0.0")],
    DEVICE3,
)
CASES["prioritized-list-subrequests-with-constraints-ref-sub-request"] = sub_constraint_case(
    [REQ0, f"{REQ1}/{SUB0}"], [versioned_memory(DEVICE2, "2Gi", "2.0.0")], DEVICE2
)


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_allocate_matches_upstream(case: Case) -> None:
    check_case(case)
