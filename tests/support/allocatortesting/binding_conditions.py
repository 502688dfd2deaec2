"""Upstream's shared allocator table: devices with binding conditions (DeviceBindingAndStatus), v0.37.2
allocator_testing.go:5355-5735 and :8808, lexicographical_testing.go:56 and :95.
`binding-conditions-without-feature-gate` is in basics.py."""

from __future__ import annotations

from typing import Any

from resourceapi.api.resource_v1 import ResourceSlice
from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *


def conditions(ready: str, failed: str) -> dict[str, Any]:
    """upstream `.withBindingConditions([]string{ready}, []string{failed})`, as device and result fields."""
    return {"bindingConditions": [ready], "bindingFailureConditions": [failed]}


PREPARE = conditions("IsPrepare", "BindingFailed")
PREPARE2 = conditions("IsPrepare2", "BindingFailed2")
PREPARE3 = conditions("IsPrepare3", "BindingFailed3")
READY = conditions("IsReady", "BindingTimeout")
TAINT_KEY1 = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
TOLERATE_KEY1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}
BINDING = features("DeviceBindingAndStatus")
PARTITIONABLE_BINDING = features("PartitionableDevices", "DeviceBindingAndStatus")
PARTITIONABLE_BINDING_TAINTS = features("PartitionableDevices", "DeviceBindingAndStatus", "DeviceTaints")


def counters_8gi(name: str, pool_obj: str | dict[str, Any], set_name: str = SET1) -> ResourceSlice:
    """upstream sliceWithCounterSets(name, node1, pool, driverA, counterSet(set_name, memory: 8Gi))."""
    return resource_slice(name, NODE1, pool_obj, DRIVER_A, counter_sets=[counter_set(set_name, memory="8Gi")])


def fabric(name: str, memory: str, bound: dict[str, Any], set_name: str = SET1) -> dict[str, Any]:
    """upstream device(name, fromCounters, nil).withDeviceCounterConsumption(...).withBindingConditions()."""
    return {**consuming(name, set_name, memory=memory), **bound}


CASES: dict[str, Case] = {
    "device-binding-conditions": Case(
        [simple_claim()],
        [device_class()],
        [slice1(device(DEVICE1, **PREPARE))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE))],
        feature_gates=BINDING,
    ),
    "binding-conditions-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0, count=2), request(REQ1))],
        [device_class()],
        [slice1(device(DEVICE1, **PREPARE), device(DEVICE2, **PREPARE2), device(DEVICE3, **PREPARE3))],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, **PREPARE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3, **PREPARE3),
            )
        ],
        feature_gates=BINDING,
    ),
    "binding-conditions-with-and-without": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1))],
        [device_class()],
        [slice1(device(DEVICE1), device(DEVICE2, **PREPARE))],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2, **PREPARE)
            )
        ],
        feature_gates=BINDING,
    ),
    "partitionable-devices-with-binding-conditions": Case(
        [simple_claim()],
        [device_class()],
        [in_pool1(SLICE1, 2, fabric(DEVICE1, "4Gi", PREPARE)), counters_8gi(SLICE2, pool(POOL1, 2))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE))],
        feature_gates=PARTITIONABLE_BINDING,
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            in_pool1(SLICE1, 2, fabric(DEVICE1, "4Gi", PREPARE), fabric(DEVICE2, "4Gi", PREPARE2)),
            counters_8gi(SLICE2, pool(POOL1, 2)),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, **PREPARE2),
            )
        ],
        feature_gates=PARTITIONABLE_BINDING,
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        [claim(CLAIM0, request(REQ0, count=3))],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                fabric(DEVICE1, "2Gi", PREPARE),
                consuming(DEVICE2, SET1, memory="2Gi"),
                fabric(DEVICE3, "4Gi", READY),
            ),
            counters_8gi(SLICE2, pool(POOL1, 2)),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3, **READY),
            )
        ],
        feature_gates=PARTITIONABLE_BINDING,
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            in_pool1(SLICE4, 4, fabric(DEVICE1, "4Gi", PREPARE)),
            counters_8gi(SLICE3, pool(POOL1, 4)),
            in_pool1(SLICE2, 4, consuming(DEVICE2, SET2, memory="4Gi")),
            counters_8gi(SLICE1, pool(POOL1, 4), SET2),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE)
            )
        ],
        feature_gates=PARTITIONABLE_BINDING,
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            slice1(
                {**fabric(DEVICE1, "4Gi", PREPARE), "taints": [TAINT_KEY1]},
                consuming(DEVICE2, SET1, memory="4Gi"),
            ),
            counters_8gi(SLICE2, POOL1),
        ],
        want=None,
        feature_gates=PARTITIONABLE_BINDING_TAINTS,
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        [claim(CLAIM0, request(REQ0, count=2, tolerations=[TOLERATE_KEY1]))],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                {**fabric(DEVICE1, "4Gi", PREPARE), "taints": [TAINT_KEY1]},
                consuming(DEVICE2, SET1, memory="4Gi"),
            ),
            counters_8gi(SLICE2, pool(POOL1, 2)),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1, tolerations=[TOLERATE_KEY1], **PREPARE),
                result(REQ0, DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_KEY1]),
            )
        ],
        feature_gates=PARTITIONABLE_BINDING_TAINTS,
    ),
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        [
            claim(
                CLAIM0,
                request(REQ1, count=2),
                request(REQ2, selectors=[selector(f'device.attributes["{DRIVER_A}"].type == "X"')]),
            )
        ],
        [device_class()],
        [
            in_pool1(SLICE1, 2, device(DEVICE1, attributes=attrs(type="X"))),
            in_pool1(SLICE2, 2, device(DEVICE2, attributes=attrs(type="Y"))),
            # a binding condition puts pool2 after pool1, so the search order is fixed
            resource_slice(
                SLICE3,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEVICE3, attributes=attrs(type="Y"), bindingConditions=["IsPrepare"]),
            ),
        ],
        want=[
            on_node1(
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL2, DEVICE3, bindingConditions=["IsPrepare"]),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        calls=12,
        feature_gates=BINDING,
    ),
    "lexicographical-sorting-pools-with-binding-conditions": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            # pools with binding conditions are considered after the pools without
            resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, **PREPARE)),
            resource_slice(SLICE3, NODE1, POOL3, DRIVER_A, device(DEVICE3)),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL2, DEVICE2), result(REQ0, DRIVER_A, POOL3, DEVICE3))],
        feature_gates=BINDING,
    ),
    "lexicographical-sorting-slices-with-binding-conditions": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            in_pool1(SLICE1, 3, device(DEVICE1, **PREPARE)),
            in_pool1(SLICE3, 3, device(DEVICE3)),
            in_pool1(SLICE2, 3, device(DEVICE2)),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1, **PREPARE), result(REQ0, DRIVER_A, POOL1, DEVICE2)
            )
        ],
        feature_gates=BINDING,
    ),
}
