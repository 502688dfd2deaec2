"""Upstream's shared allocator table: allocationMode: All."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "all-devices-single": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-many": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [in_pool1(SLICE1, 2, device(DEVICE1))],
        error="claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is "
        "currently "
        "being updated",
    ),
    "all-devices-plus-another": Case(
        [claim(CLAIM0, all_request(REQ0)), claim(CLAIM1, request(REQ0, CLASS_B))],
        two_classes(),
        one_device_per_driver(),
        want=one_result_per_driver(),
    ),
    "all-devices-no-solution": Case(
        [claim(CLAIM0, request(REQ0)), claim(CLAIM1, all_request(REQ0))], [device_class()], [two_devices()]
    ),
    "all-devices-slice-without-devices": Case(
        [claim(CLAIM0, all_request(REQ0))], [device_class()], [slice1()]
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
        want=[on_node1(admin(REQ0, DEVICE1), admin(REQ0, DEVICE2))],
    ),
    "all-devices-some-allocating-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0)), admin_request(all_request(REQ1)))],
        [device_class()],
        [two_devices()],
    ),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [
            in_pool1(SLICE1, 2, device(DEVICE1)),
            resource_slice(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "all-devices-with-consumed-counters": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [
            in_pool1(SLICE1, 2, counter_device(DEVICE1, (SET1, {"memory": "4Gi"}))),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, memory="8Gi")]),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PartitionableDevices"),
    ),
    "all-devices-plus-another-reversed": Case(
        [simple_claim(CLAIM1, cls=CLASS_B), claim(CLAIM0, all_request(REQ0))],
        two_classes(),
        one_device_per_driver(),
        want=[
            on_node1(result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ],
        feature_gates=features(),
    ),
    "all-devices-many-plus-another": Case(
        [claim(CLAIM0, all_request(REQ0)), simple_claim(CLAIM1, cls=CLASS_B)],
        two_classes(),
        [slice1(device(DEVICE1), device(DEVICE2)), one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B)],
        want=[
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),
            on_node1(result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ],
        feature_gates=features(),
    ),
    "all-devices-many-plus-another-reversed": Case(
        [simple_claim(CLAIM1, cls=CLASS_B), claim(CLAIM0, all_request(REQ0))],
        two_classes(),
        [slice1(device(DEVICE1), device(DEVICE2)), one_device_slice(SLICE2, NODE1, POOL1, DRIVER_B)],
        want=[
            on_node1(result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2)),
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
        two_classes(),
        [slice1(), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_B, POOL2, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "all-devices-no-slices-prioritized-list": Case(
        [claim(CLAIM0, ALL_OR_B)],
        two_classes(),
        [one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_B, POOL2, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        [claim(CLAIM0, ALL_OR_B)],
        two_classes(),
        [slice1(device(DEVICE1), device(DEVICE2)), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_B)],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_B, POOL2, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "all-devices-invalid-CEL": Case(
        [claim(CLAIM0, request(REQ0, count=500))],
        [device_class()],
        [],
        error="claim claim-0: number of requested devices 500 exceeds the claim limit of 32",
        feature_gates=features(),
    ),
}
