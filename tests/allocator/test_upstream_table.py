"""The rest of upstream's shared allocator table (allocatortesting), ported case by case.

test_cluster.py holds the first part of the table. Here every case also keeps upstream's `features`: the gates
are all off except the ones the case names, as in upstream's `Features{...}`. Cases that need
DeviceBindingAndStatus (binding conditions) are not ported, because dra-capacity does not model that feature
(see docs/divergences.md, "Allocator core").
"""

from __future__ import annotations

from typing import Any

import pytest
from dra_objects import (
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
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
    POOL3,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
    SUB0,
    SUB1,
    all_request,
    capacity,
    claim,
    cluster,
    device,
    device_class,
    expect,
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
    selector,
    shared,
    simple_claim,
    sub_request,
)
from test_cluster import (
    Case,
    admin,
    admin_request,
    check_case,
    consumes,
    counter_set,
    memory_selector,
    multi_class,
    prior,
    ranged,
    share,
    valid_values,
)

from resourceapi import gates as g
from resourceapi.gates import FeatureGates
from resourceapi.resource_v1 import DeviceClass

SLICE4 = "slice-4"
POOL4 = "pool-4"
DEVICE4 = "device-4"
CAP0, CAP1 = "capacity-0", "capacity-1"
SET1, SET2 = "counter-set-1", "counter-set-2"
OTHER_SHARE = "bbbbbbbb-aaaa-aaaa-aaaa-aaaaaaaaaaaa"

_GATE_OF = {
    "AdminAccess": g.DRA_ADMIN_ACCESS,
    "ConsumableCapacity": g.DRA_CONSUMABLE_CAPACITY,
    "DeviceTaints": g.DRA_DEVICE_TAINTS,
    "ListTypeAttributes": g.DRA_LIST_TYPE_ATTRIBUTES,
    "PartitionableDevices": g.DRA_PARTITIONABLE_DEVICES,
    "PrioritizedList": g.DRA_PRIORITIZED_LIST,
}


def features(*names: str) -> FeatureGates:
    """upstream `Features{<name>: true, ...}`: every other allocator feature is off."""
    return FeatureGates.from_mapping({_GATE_OF[n]: True for n in names}, base={})


def s(value: str) -> dict[str, Any]:
    return {"string": value}


def b(value: bool) -> dict[str, Any]:
    return {"bool": value}


def sub(req: str, sub_name: str) -> str:
    return f"{req}/{sub_name}"


def cel(expression: str) -> dict[str, Any]:
    return selector(expression)


def attr_selector(attribute: str, value: str) -> dict[str, Any]:
    return cel(f'device.attributes["{DRIVER_A}"].{attribute} == "{value}"')


def cap_request(amount: str) -> dict[str, Any]:
    """upstream withCapacityRequest: the request's `capacity-0`."""
    return capacity(**{CAP0: amount})


def from_counters(name: str, *consumption: tuple[str, dict[str, str]], **extra: Any) -> dict[str, Any]:
    """upstream device(name, fromCounters, nil).withDeviceCounterConsumption(...): capacities = counters."""
    consumes_counters = [
        {"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}
        for set_name, counters in consumption
    ]
    caps = {k: v for _, counters in consumption for k, v in counters.items()}
    return device(name, caps, consumesCounters=consumes_counters, **extra)


def counter_device(name: str, *consumption: tuple[str, dict[str, str]], **extra: Any) -> dict[str, Any]:
    """upstream device(name, nil, ...).withDeviceCounterConsumption(...): counters without capacity."""
    consumes_counters = [
        {"counterSet": set_name, "counters": {k: {"value": v} for k, v in counters.items()}}
        for set_name, counters in consumption
    ]
    return device(name, consumesCounters=consumes_counters, **extra)


def class_with_selector(name: str, expression: str) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": name}, "spec": {"selectors": [selector(expression)]}}
    )


TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOLERATE_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOLERATE_NO_EXECUTE = {
    "operator": "Equal",
    "key": "taint-key",
    "value": "taint-value-2",
    "effect": "NoExecute",
}


def all_sub(name: str, cls: str = CLASS_A, **fields: Any) -> dict[str, Any]:
    """A subrequest with allocationMode All (upstream sets count 0 with it)."""
    out = sub_request(name, cls, **fields)
    out["allocationMode"] = "All"
    del out["count"]
    return out


def a(req: str, driver: str, pool_name: str, dev: str) -> dict[str, Any]:
    return result(req, driver, pool_name, dev)


def multi_host(first: str, second: str, *, second_complete: bool) -> list[Any]:
    """upstream's multi-host-resource-pool-* slices: generation 1 on `first`, generation 2 on `second`.

    Upstream gives both slices of one generation the same name; names are unique here (`Cluster` keys slices
    by name, as the API does), sorted in upstream's order.
    """
    slices = [
        resource_slice("slice-1a", first, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE1)),
        resource_slice("slice-1b", first, pool(POOL1, 2, 1), DRIVER_A, device(DEVICE2)),
        resource_slice("slice-2a", second, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE1)),
    ]
    if second_complete:
        slices.append(resource_slice("slice-2b", second, pool(POOL1, 2, 2), DRIVER_A, device(DEVICE2)))
    return slices


def typed_devices(*types: str) -> Any:
    """A slice of devices device-1.. with a string attribute `type`."""
    return resource_slice(
        SLICE1,
        NODE1,
        POOL1,
        DRIVER_A,
        *(device(f"device-{i + 1}", attributes={"type": s(t)}) for i, t in enumerate(types)),
    )


def generation_devices(*generations: tuple[str, bool | None]) -> list[dict[str, Any]]:
    out = []
    for i, (gen, selected) in enumerate(generations):
        attributes: dict[str, Any] = {"generation": s(gen)}
        if selected is not None:
            attributes["selected"] = b(selected)
        out.append(device(f"device-{i + 1}", attributes=attributes))
    return out


GENERATION_SUBS = prioritized(
    REQ0,
    all_sub(SUB0, selectors=[attr_selector("generation", "v6")]),
    all_sub(SUB1, selectors=[attr_selector("generation", "v5")]),
)

ALL_OR_B = prioritized(REQ0, all_sub(SUB0), sub_request(SUB1, CLASS_B))


def combinations(*slices: Any) -> Case:
    """upstream's check-combinations-within-single-request-* cases: 5 of 4 devices, 16 recursions."""
    return Case(
        [claim(CLAIM0, request(REQ0, count=5))],
        [device_class()],
        list(slices),
        calls=16,
        feature_gates=features(),
    )


CASES: dict[str, Case] = {
    "no-claims-to-allocate": Case(
        [],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[],
        feature_gates=features(),
    ),
    "all-devices-with-consumed-counters": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, counter_device(DEVICE1, (SET1, {"memory": "4Gi"}))
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(SET1, memory="8Gi")]
            ),
        ],
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PartitionableDevices"),
    ),
    "all-devices-plus-another-reversed": Case(
        [simple_claim(CLAIM1, cls=CLASS_B), claim(CLAIM0, all_request(REQ0))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B)],
        want=[
            expect(local(NODE1), a(REQ0, DRIVER_B, POOL1, DEVICE1)),
            expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ],
        feature_gates=features(),
    ),
    "all-devices-many-plus-another": Case(
        [claim(CLAIM0, all_request(REQ0)), simple_claim(CLAIM1, cls=CLASS_B)],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B),
        ],
        want=[
            expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL1, DEVICE2)),
            expect(local(NODE1), a(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
        feature_gates=features(),
    ),
    "all-devices-many-plus-another-reversed": Case(
        [simple_claim(CLAIM1, cls=CLASS_B), claim(CLAIM0, all_request(REQ0))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B),
        ],
        want=[
            expect(local(NODE1), a(REQ0, DRIVER_B, POOL1, DEVICE1)),
            expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL1, DEVICE2)),
        ],
        feature_gates=features(),
    ),
    "all-devices-no-solution-reversed": Case(
        [claim(CLAIM0, all_request(REQ0)), simple_claim(CLAIM1)],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=features(),
    ),
    "all-devices-no-slices": Case(
        [claim(CLAIM0, all_request(REQ0))], [device_class()], [], feature_gates=features()
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        [claim(CLAIM0, ALL_OR_B)],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_B, POOL2, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "all-devices-no-slices-prioritized-list": Case(
        [claim(CLAIM0, ALL_OR_B)],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_B, POOL2, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        [claim(CLAIM0, ALL_OR_B)],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        allocated_claims=[prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_B, POOL2, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "admin-access-enabled": Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated_claims=[
            prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL1, DEVICE2))
        ],
        want=[expect(local(NODE1), admin(REQ0, DEVICE1))],
        feature_gates=features("AdminAccess"),
    ),
    "with-constraint-not-matching-string-attribute": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, count=2),
                constraints=[{"matchAttribute": f"{DRIVER_A}/stringAttribute"}],
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes={"stringAttribute": s("stringAttributeValue")}),
                device(DEVICE2, attributes={"stringAttribute": s("stringAttributeValue2")}),
            )
        ],
        feature_gates=features(),
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        [
            claim(
                CLAIM0, request(REQ0, count=2), constraints=[{"matchAttribute": f"{DRIVER_A}/boolAttribute"}]
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes={"boolAttribute": b(True)}),
                device(DEVICE2, attributes={"boolAttribute": b(False)}),
            )
        ],
        feature_gates=features(),
    ),
    "with-constraint-not-matching-version-attribute": Case(
        [
            claim(
                CLAIM0, request(REQ0, count=2), constraints=[{"matchAttribute": f"{DRIVER_A}/driverVersion"}]
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, attributes={"driverVersion": {"version": "1.0.0"}}),
                device(DEVICE2, attributes={"driverVersion": {"version": "2.0.0"}}),
            )
        ],
        feature_gates=features(),
    ),
    "claim-with-device-config": Case(
        [simple_claim(config=[opaque(DRIVER_A, "deviceAttribute")])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[
            expect(
                local(NODE1),
                a(REQ0, DRIVER_A, POOL1, DEVICE1),
                config=[{"source": "FromClaim", **opaque(DRIVER_A, "deviceAttribute")}],
            )
        ],
        feature_gates=features(),
    ),
    "invalid-CEL-all-devices": Case(
        [claim(CLAIM0, all_request(REQ0, selectors=[cel("noSuchVar")]))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="undeclared reference",
        feature_gates=features(),
    ),
    "all-devices-invalid-CEL": Case(
        [claim(CLAIM0, request(REQ0, count=500))],
        [device_class()],
        [],
        error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32",
        feature_gates=features(),
    ),
    "prioritized-list-device-config": Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0), sub_request(SUB1, CLASS_B, count=2)),
                config=[
                    {"requests": [sub(REQ0, SUB0)], **opaque(DRIVER_A, "foo")},
                    {"requests": [sub(REQ0, SUB1)], **opaque(DRIVER_B, "bar")},
                ],
            )
        ],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))],
        want=[
            expect(
                local(NODE1),
                a(sub(REQ0, SUB1), DRIVER_B, POOL1, DEVICE1),
                a(sub(REQ0, SUB1), DRIVER_B, POOL1, DEVICE2),
                config=[{"source": "FromClaim", **opaque(DRIVER_B, "bar")}],
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, selectors=[memory_selector("1Gi")]),
                prioritized(
                    REQ1,
                    sub_request(SUB0, selectors=[memory_selector("4Gi")]),
                    sub_request(SUB1, count=2, selectors=[memory_selector("2Gi")]),
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
                device(DEVICE1, {"memory": "2Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE3, {"memory": "1Gi"}),
            )
        ],
        want=[
            expect(
                local(NODE1),
                a(REQ0, DRIVER_A, POOL1, DEVICE3),
                a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE1),
                a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE2),
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        [claim(CLAIM0, prioritized(REQ0, all_sub(SUB0), sub_request(SUB1)))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated_claims=[prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        [claim(CLAIM0, request(REQ0), prioritized(REQ1, all_sub(SUB0), sub_request(SUB1)))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        want=[
            expect(
                local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE2)
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-multi-request": Case(
        [
            claim(
                CLAIM0,
                request(REQ1, selectors=[memory_selector("8Gi")]),
                prioritized(
                    REQ0,
                    sub_request(SUB0, selectors=[memory_selector("8Gi")]),
                    sub_request(SUB1, selectors=[memory_selector("4Gi")]),
                ),
            )
        ],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {"memory": "8Gi"}, attributes={})),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"}, attributes={})),
        ],
        want=[
            expect(
                local(NODE1), a(REQ1, DRIVER_A, POOL1, DEVICE1), a(sub(REQ0, SUB1), DRIVER_A, POOL2, DEVICE2)
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "partitionable-devices-prioritized-list": Case(
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
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(DEVICE1, (SET1, {"memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"memory": "6Gi"})),
                from_counters(DEVICE3, (SET1, {"memory": "4Gi"})),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(SET1, memory="8Gi")]
            ),
        ],
        want=[
            expect(
                local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE3)
            )
        ],
        feature_gates=features("PrioritizedList", "PartitionableDevices"),
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
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
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(DEVICE1, (SET1, {"memory": "4Gi"}), (SET2, {"cpus": "4"})),
                from_counters(DEVICE2, (SET1, {"memory": "6Gi"}), (SET2, {"cpus": "6"})),
                from_counters(DEVICE3, (SET1, {"memory": "4Gi"}), (SET2, {"cpus": "4"})),
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, memory="18Gi"), counter_set(SET2, cpus="8")],
            ),
        ],
        want=[
            expect(
                local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE3)
            )
        ],
        feature_gates=features("PrioritizedList", "PartitionableDevices"),
    ),
    "partitionable-devices-multiple-pools": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1))],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(DEVICE1, (SET1, {"cpus": "6", "memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"cpus": "4", "memory": "6Gi"})),
                from_counters(DEVICE3, (SET1, {"cpus": "4", "memory": "4Gi"})),
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, cpus="8", memory="18Gi")],
            ),
            resource_slice(
                SLICE3,
                NODE1,
                pool(POOL2, 2),
                DRIVER_A,
                from_counters(DEVICE1, (SET1, {"cpus": "6", "memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"cpus": "1", "memory": "7Gi"})),
                from_counters(DEVICE3, (SET1, {"cpus": "1", "memory": "7Gi"})),
            ),
            resource_slice(
                SLICE4,
                NODE1,
                pool(POOL2, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, cpus="8", memory="18Gi")],
            ),
        ],
        allocated_claims=[
            prior(
                "other",
                a(REQ0, DRIVER_A, POOL1, DEVICE2),
                a(REQ0, DRIVER_A, POOL1, DEVICE3),
                a(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL2, DEVICE2), a(REQ1, DRIVER_A, POOL2, DEVICE3))],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_device(DEVICE1, (SET1, {"memory": "5Gi"})),
                counter_device(DEVICE2, (SET1, {"memory": "4Gi"})),
                counter_device(DEVICE3, (SET1, {"memory": "4Gi"})),
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, memory="8Gi", unused="1Gi")],
            ),
        ],
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE2), a(REQ0, DRIVER_A, POOL1, DEVICE3))],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(DEVICE1, (SET1, {"memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"memory": "20Gi"})),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(SET1, memory="18Gi")]
            ),
        ],
        allocated_claims=[prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_device(DEVICE1, (SET1, {"memory": "4Gi"})),
                device(DEVICE2),
            ),
            resource_slice(
                SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(SET1, memory="18Gi")]
            ),
        ],
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features(),
    ),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, PER_DEVICE, POOL1, DRIVER_A, device(DEVICE2, nodeName=NODE1))],
        feature_gates=features(),
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0, count=3), request(REQ1, CLASS_B, count=3))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [
            resource_slice(
                SLICE1,
                PER_DEVICE,
                pool(POOL1, 2),
                DRIVER_A,
                from_counters(
                    DEVICE1, (SET1, {"memory": "4Gi"}), nodeSelector=label_selector("region", "region-1")
                ),
                from_counters(DEVICE2, (SET1, {"memory": "4Gi"}), nodeName=NODE1),
                from_counters(DEVICE3, (SET1, {"memory": "4Gi"}), allNodes=True),
            ),
            resource_slice(
                SLICE2, PER_DEVICE, pool(POOL1, 2), DRIVER_A, counter_sets=[counter_set(SET1, memory="18Gi")]
            ),
            resource_slice(
                SLICE3,
                NODE1,
                pool(POOL2, 2),
                DRIVER_B,
                from_counters(DEVICE1, (SET2, {"memory": "4Gi"})),
                from_counters(DEVICE2, (SET2, {"memory": "4Gi"})),
                from_counters(DEVICE3, (SET2, {"memory": "4Gi"})),
            ),
            resource_slice(
                SLICE4, NODE1, pool(POOL2, 2), DRIVER_B, counter_sets=[counter_set(SET2, memory="12Gi")]
            ),
        ],
        want=[
            expect(
                local(NODE1),
                a(REQ0, DRIVER_A, POOL1, DEVICE1),
                a(REQ0, DRIVER_A, POOL1, DEVICE2),
                a(REQ0, DRIVER_A, POOL1, DEVICE3),
                a(REQ1, DRIVER_B, POOL2, DEVICE1),
                a(REQ1, DRIVER_B, POOL2, DEVICE2),
                a(REQ1, DRIVER_B, POOL2, DEVICE3),
            )
        ],
        feature_gates=features("PartitionableDevices", "PrioritizedList"),
    ),
    "tainted-one-device-two-taints": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE])
            )
        ],
        feature_gates=features("DeviceTaints"),
    ),
    "tainted-two-devices-prioritized-list-tolerated": Case(
        [
            claim(
                CLAIM0,
                prioritized(REQ0, sub_request(SUB0), sub_request(SUB1, tolerations=[TOLERATE_NO_EXECUTE])),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, taints=[TAINT_NO_SCHEDULE]),
                device(DEVICE2, taints=[TAINT_NO_EXECUTE]),
            )
        ],
        want=[
            expect(
                local(NODE1),
                result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_NO_EXECUTE]),
            )
        ],
        feature_gates=features("DeviceTaints", "PrioritizedList"),
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        [claim(CLAIM0, request(REQ0, tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE])
            )
        ],
        want=[
            expect(
                local(NODE1),
                result(
                    REQ0, DRIVER_A, POOL1, DEVICE1, tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]
                ),
            )
        ],
        feature_gates=features("DeviceTaints"),
    ),
    "tainted-prioritized-list": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1)))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        feature_gates=features("DeviceTaints", "PrioritizedList"),
    ),
    "tainted-prioritized-list-disabled": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1)))],
        [device_class(), device_class(CLASS_B, DRIVER_B)],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "tainted-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        allocated_claims=[
            prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL1, DEVICE2))
        ],
        feature_gates=features("DeviceTaints", "AdminAccess"),
    ),
    "tainted-admin-access-disabled": Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        allocated_claims=[
            prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL1, DEVICE2))
        ],
        want=[expect(local(NODE1), admin(REQ0, DEVICE1))],
        feature_gates=features("AdminAccess"),
    ),
    "tainted-all-devices-single": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        feature_gates=features("DeviceTaints"),
    ),
    "tainted-all-devices-single-disabled": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "prioritized-list-allocation-mode-all": Case(
        [claim(CLAIM0, prioritized(REQ0, all_sub(SUB0), sub_request(SUB1)))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2))],
        allocated_claims=[prior("other", a(REQ0, DRIVER_A, POOL1, DEVICE2))],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *generation_devices(("v5", None)))],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *generation_devices(("v5", None))),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, *generation_devices(("v5", None))),
        ],
        want=[
            expect(
                local(NODE1),
                a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1),
                a(sub(REQ0, SUB1), DRIVER_A, POOL2, DEVICE1),
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *generation_devices(("v5", None))),
            resource_slice(SLICE2, NODE2, POOL2, DRIVER_A, *generation_devices(("v5", None), ("v6", None))),
        ],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [
            class_with_selector(
                CLASS_A, f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected'
            )
        ],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                *generation_devices(("v6", False), ("v5", False), ("v5", True)),
            )
        ],
        want=[expect(local(NODE1), a(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE3))],
        feature_gates=features("PrioritizedList"),
    ),
    "max-number-devices": Case(
        [claim(CLAIM0, request(REQ0, count=32))],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *(device(f"device-{i}") for i in range(32)))],
        want=[expect(local(NODE1), *(a(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(32)))],
        feature_gates=features(),
    ),
    "partitionable-devices-with-attribute-selector": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, count=2),
                request(REQ1, selectors=[cel(f'device.attributes["{DRIVER_A}"].special')]),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_device(
                    DEVICE1, (SET1, {"cpu1": "1"}), (SET2, {"mem": "10Gi"}), attributes={"special": b(True)}
                ),
                counter_device(
                    DEVICE2, (SET1, {"cpu2": "1"}), (SET2, {"mem": "10Gi"}), attributes={"special": b(False)}
                ),
                counter_device(
                    DEVICE3, (SET1, {"cpu3": "1"}), (SET2, {"mem": "10Gi"}), attributes={"special": b(False)}
                ),
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, cpu1="1", cpu2="1", cpu3="1"), counter_set(SET2, mem="30Gi")],
            ),
        ],
        want=[
            expect(
                local(NODE1),
                a(REQ0, DRIVER_A, POOL1, DEVICE2),
                a(REQ0, DRIVER_A, POOL1, DEVICE3),
                a(REQ1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        feature_gates=features("PartitionableDevices"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("1")))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {CAP1: "1"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        [claim(CLAIM0, request(REQ0, capacity=cap_request("2")))],
        [multi_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {CAP0: valid_values("4", "1", "2")})
            )
        ],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {CAP0: "2"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        [claim(CLAIM0, request(REQ0, capacity=cap_request("2")))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {CAP0: ranged("2")}))],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "2"}) | {"shareID": OTHER_SHARE})],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("2")))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {CAP0: "2"}), shared(DEVICE2))],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {CAP0: "2"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("1")))],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {CAP0: "2"}), shared(DEVICE2, {CAP0: "1"})
            )
        ],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "1"}) | {"shareID": OTHER_SHARE})],
        want=[expect(local(NODE1), share(REQ0, DEVICE1, {CAP0: "1"}), share(REQ0, DEVICE2, {CAP0: "1"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("1")))],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, {CAP0: "1"}), shared(DEVICE2, {CAP0: "1"})
            )
        ],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "1"}) | {"shareID": OTHER_SHARE})],
        want=[expect(local(NODE1), share(REQ0, DEVICE2, {CAP0: "1"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        [claim(CLAIM0, request(REQ0, capacity=cap_request("1")))],
        [multi_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, {CAP0: ranged("2")}))],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "1"}) | {"shareID": OTHER_SHARE})],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, capacity=cap_request("1")),
                request(REQ2, capacity=cap_request("2")),
                prioritized(
                    REQ1,
                    sub_request(
                        SUB0,
                        selectors=[
                            cel(f'device.capacity["{DRIVER_A}"]["{CAP0}"].compareTo(quantity("4")) >= 0')
                        ],
                        capacity=cap_request("1"),
                    ),
                    sub_request(
                        SUB1,
                        selectors=[
                            cel(f'device.capacity["{DRIVER_A}"]["{CAP0}"].compareTo(quantity("2")) >= 0')
                        ],
                        capacity=cap_request("1"),
                    ),
                ),
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                *(
                    shared(
                        name,
                        {CAP0: cap0, CAP1: ranged("4")},
                        consumesCounters=consumes(SET1, **{CAP0: cap0}) + consumes(SET2, **{CAP1: "4"}),
                    )
                    for name, cap0 in ((DEVICE1, "2"), (DEVICE2, "4"), (DEVICE3, "2"))
                ),
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, **{CAP0: "4"}), counter_set(SET2, **{CAP1: "8"})],
            ),
        ],
        want=[
            expect(
                local(NODE1),
                share(REQ0, DEVICE1, {CAP0: "1", CAP1: "2"}),
                share(REQ2, DEVICE3, {CAP0: "2", CAP1: "2"}),
                share(sub(REQ1, SUB1), DEVICE1, {CAP0: "1", CAP1: "2"}),
            )
        ],
        feature_gates=features("PrioritizedList", "PartitionableDevices", "ConsumableCapacity"),
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                constraints=[{"distinctAttribute": f"{DRIVER_A}/boolAttribute", "requests": [REQ0]}],
            )
        ],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, shared(DEVICE1, attributes={"boolAttribute": {}}))],
        error="unsupported attribute value",
        feature_gates=features("ConsumableCapacity"),
    ),
    "with-distinct-constraints-with-subrequests": Case(
        [
            claim(
                CLAIM0,
                *(
                    prioritized(
                        req,
                        sub_request(SUB0, selectors=[cel(f'device.attributes["{DRIVER_A}"].boolAttribute')]),
                        sub_request(SUB1),
                    )
                    for req in (REQ0, REQ1, REQ2)
                ),
                constraints=[{"distinctAttribute": f"{DRIVER_A}/boolAttribute", "requests": [REQ0, REQ1]}],
            )
        ],
        [device_class()],
        [
            resource_slice(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                shared(DEVICE1, attributes={"boolAttribute": b(True)}),
                shared(DEVICE2, attributes={"boolAttribute": b(False)}),
            )
        ],
        want=[
            expect(
                local(NODE1),
                share(sub(REQ0, SUB0), DEVICE1),
                share(sub(REQ1, SUB1), DEVICE2),
                share(sub(REQ2, SUB0), DEVICE1),
            )
        ],
        feature_gates=features("ConsumableCapacity", "PrioritizedList"),
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        [
            claim(
                CLAIM0,
                request(REQ0, capacity=cap_request("1")),
                request(REQ1, capacity=cap_request("1")),
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
                shared(
                    DEVICE1, {CAP0: ranged("2")}, attributes={"stringAttribute": s("stringAttributeValue")}
                ),
            )
        ],
        feature_gates=features("ConsumableCapacity"),
    ),
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE1, NODE2, second_complete=True),
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE2, NODE1, second_complete=True),
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE1, NODE2, second_complete=False),
        want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE2, NODE1, second_complete=False),
        feature_gates=features(),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, counter_device(DEVICE1, (SET1, {"memory": "8Gi"}))
            ),
            resource_slice(
                SLICE2,
                NODE1,
                pool(POOL1, 2),
                DRIVER_A,
                counter_sets=[counter_set(SET1, **{"other-memory": "8Gi"})],
            ),
        ],
        error="invalid resource pools were encountered",
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1, NODE1, POOL1, DRIVER_A, counter_device(DEVICE1, (SET1, {"memory": "8Gi"}))
            ),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, counter_sets=[counter_set(SET1, memory="8Gi")]),
        ],
        error="invalid resource pools were encountered",
        feature_gates=features("PartitionableDevices"),
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE3, NODE1, pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
        ],
        allocated_claims=[prior("other", a(REQ0, DRIVER_A, POOL2, DEVICE2))],
        error="invalid resource pools were encountered",
        feature_gates=features(),
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": combinations(
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1), device(DEVICE2)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE3), device(DEVICE4)),
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": combinations(
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        resource_slice(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE3), device(DEVICE4)),
    ),
    "check-combinations-within-single-request-many-pools": combinations(
        resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
        resource_slice(SLICE3, NODE1, POOL3, DRIVER_A, device(DEVICE3)),
        resource_slice(SLICE4, NODE1, POOL4, DRIVER_A, device(DEVICE4)),
    ),
    "check-combinations-with-prioritized-list": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ1,
                    sub_request(SUB0, count=3, selectors=[attr_selector("type", "Y")]),
                    sub_request(SUB1, count=2),
                ),
                prioritized(
                    REQ2,
                    sub_request(SUB0, count=2),
                    sub_request(SUB1, selectors=[attr_selector("type", "X")]),
                ),
            )
        ],
        [device_class()],
        [typed_devices("X", "Y", "Y")],
        want=[
            expect(
                local(NODE1),
                a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE2),
                a(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE3),
                a(sub(REQ2, SUB1), DRIVER_A, POOL1, DEVICE1),
            )
        ],
        calls=26,
        feature_gates=features("PrioritizedList"),
    ),
}


def list_case(
    kind: str,
    attribute: str,
    values: list[dict[str, Any]],
    count: int,
    want: list[str] | None,
    *extra_features: str,
    requests: int = 1,
    error: str | None = None,
) -> Case:
    """upstream's list-attributes-* cases: `requests` requests of `count` devices under one constraint."""
    devices = [device(f"device-{i + 1}", attributes={attribute: v}) for i, v in enumerate(values)]
    return Case(
        [
            claim(
                CLAIM0,
                *(request(REQ0, count=count) for _ in range(requests)),
                constraints=[{kind: f"{DRIVER_A}/{attribute}"}],
            )
        ],
        [device_class()],
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devices)],
        want=None if want is None else [expect(local(NODE1), *(a(REQ0, DRIVER_A, POOL1, d) for d in want))],
        error=error,
        feature_gates=features("ListTypeAttributes", *extra_features),
    )


MATCH, DISTINCT = "matchAttribute", "distinctAttribute"


def strs(*values: str) -> dict[str, Any]:
    return {"strings": list(values)}


# The cases of upstream's experimental allocator (ListTypeAttributes).
LIST_CASES: dict[str, Case] = {
    "list-attributes-match-constaint-list-of-string-values-without-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2"), strs("value3", "value4")],
        1,
        None,
        requests=2,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements": (
        list_case(
            MATCH,
            "stringAttribute",
            [s("value1"), strs("value1", "value2"), strs("value2", "value3")],
            3,
            None,
        )
    ),
    "list-attributes-match-constaint-list-of-bool-values-with-common-elements": list_case(
        MATCH, "boolAttribute", [{"bools": [True, False]}, {"bools": [True]}], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-with-empty-or-unknown-type": list_case(
        MATCH, "stringAttribute", [{}, strs()], 2, None, error="unsupported attribute value"
    ),
    "list-attributes-distinct-constraint-scalar-string-values-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [s("value1"), s("value2")],
        2,
        [DEVICE1, DEVICE2],
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-list-of-string-values-with-common-elements": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value4", "value5")],
        2,
        None,
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements": list_case(
        DISTINCT,
        "stringAttribute",
        [s("value1"), strs("value1", "value2")],
        2,
        None,
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-list-of-int-values-all-distinct": list_case(
        DISTINCT,
        "numa",
        [{"ints": [0, 1]}, {"ints": [1, 2]}, {"ints": [2, 3]}],
        2,
        [DEVICE1, DEVICE3],
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-list-of-version-values-all-distinct": list_case(
        DISTINCT,
        "driverVersion",
        [
            {"versions": ["1.0.0", "1.1.0"]},
            {"versions": ["1.1.0", "2.0.0"]},
            {"versions": ["2.0.0", "2.1.0"]},
        ],
        2,
        [DEVICE1, DEVICE3],
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constaint-with-empty-or-unknown-type": list_case(
        DISTINCT,
        "driverVersion",
        [{"versions": []}, {}],
        2,
        None,
        "ConsumableCapacity",
        error="unsupported attribute value",
    ),
}
CASES.update(LIST_CASES)

# upstream lexicographical_testing.go (TestLexicographicalAllocator), without the binding-condition cases.
CASES["lexicographical-sorting-pools"] = Case(
    [claim(CLAIM0, request(REQ0, count=2))],
    [device_class()],
    [
        one_device_slice(SLICE1, NODE1, POOL3, DRIVER_A),
        one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A),
        one_device_slice(SLICE3, NODE1, POOL1, DRIVER_A),
    ],
    want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL2, DEVICE1))],
    feature_gates=features(),
)
CASES["lexicographical-sorting-slices"] = Case(
    [claim(CLAIM0, request(REQ0, count=2))],
    [device_class()],
    [
        resource_slice(SLICE3, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE3)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE2)),
        resource_slice(SLICE1, NODE1, pool(POOL1, 3), DRIVER_A, device(DEVICE1)),
    ],
    want=[expect(local(NODE1), a(REQ0, DRIVER_A, POOL1, DEVICE1), a(REQ0, DRIVER_A, POOL1, DEVICE2))],
    feature_gates=features(),
)


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_allocate_matches_upstream(case: Case) -> None:
    check_case(case)


# upstream's "interrupt" test: a search that cannot succeed (6 of 5 devices), run to the end or interrupted.
# Upstream interrupts through the context (filter timeout); here the bound is a number of allocateOne steps.
def interrupt(max_steps: int | None) -> Any:
    slices = [resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *(device(f"device-{i}") for i in range(1, 6)))]
    core = cluster([device_class()], slices, feature_gates=features())
    return core.allocate(node(), [claim(CLAIM0, request(REQ0, count=6))], max_steps=max_steps)


def test_interrupt_off_searches_to_the_end() -> None:
    outcome = interrupt(None)
    assert (outcome.results, outcome.error) == (None, None)


def test_interrupt_makes_the_node_fail_as_timed_out() -> None:
    outcome = interrupt(1)
    assert (outcome.results, outcome.error, outcome.node_failure) == (
        None,
        "timed out trying to allocate devices",
        True,
    )


def test_interrupt_budget_covering_the_whole_search_changes_nothing() -> None:
    steps = interrupt(None).allocate_one_calls
    assert interrupt(steps).error is None
    assert interrupt(steps - 1).error == "timed out trying to allocate devices"
