"""Upstream's shared allocator table: multi-host and network-attached pools."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "network-attached-device": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A, device(DEVICE1))],
        want=[expect(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
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
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, "pool-3", DEVICE1),
                result(REQ0, DRIVER_A, "pool-4", DEVICE1),
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
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE1, NODE2, second_complete=True),
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE2, NODE1, second_complete=True),
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE1, NODE2, second_complete=False),
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        [simple_claim()],
        [device_class()],
        multi_host(NODE2, NODE1, second_complete=False),
        feature_gates=features(),
    ),
}
