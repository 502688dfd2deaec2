"""Upstream's shared allocator table: partitionable devices (counters)."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "partitionable-devices-single-device": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, consuming(DEVICE1, "cs-1", memory="4Gi")),
            in_pool1(SLICE2, 2, counter_sets=[counter_set("cs-1", memory="8Gi")]),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1))],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                consuming(DEVICE0, "cs-1", memory="4Gi"),
                consuming(DEVICE1, "cs-1", memory="6Gi"),
                consuming(DEVICE2, "cs-1", memory="4Gi"),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set("cs-1", memory="8Gi")]),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE0), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-no-capacity-available": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(
                SLICE1, 2, consuming(DEVICE0, "cs-1", memory="4Gi"), consuming(DEVICE1, "cs-1", memory="16Gi")
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set("cs-1", memory="18Gi")]),
        ],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE0))],
    ),
    "partitionable-devices-disabled-device-consumes-counters": Case(
        [simple_claim()],
        [device_class()],
        [slice1(consuming(DEVICE1, "cs-1", memory="4Gi"))],
        feature_gates=stable_features_without("PartitionableDevices"),
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        [simple_claim()],
        [device_class()],
        [per_device_slice(device(DEVICE1, nodeName=NODE2), device(DEVICE2, nodeName=NODE1))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        [simple_claim()],
        [device_class()],
        [per_device_slice(device(DEVICE1, nodeSelector=label_selector("region", REGION1)))],
        want=[expect(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 3, consuming(DEVICE1, "cs-1", memory="4Gi")),
            in_pool1(SLICE2, 3, counter_sets=[counter_set("cs-1", memory="8Gi")]),
            in_pool1(SLICE3, 3, counter_sets=[counter_set("cs-1", memory="8Gi")]),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, consuming(DEVICE1, "cs-2", memory="4Gi")),
            in_pool1(SLICE2, 2, counter_sets=[counter_set("cs-1", memory="8Gi")]),
        ],
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-multiple-counters": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1))],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
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
            in_pool1(
                SLICE2,
                2,
                counter_sets=[
                    counter_set("counter-set-1", cpus="8", memory="18Gi"),
                    counter_set("counter-set-2", cpus="12", memory="18Gi"),
                ],
            ),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3))],
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        [claim(CLAIM0, prioritized(REQ0, memory_sub(SUB0, "6Gi"), memory_sub(SUB1, "2Gi")))],
        [device_class()],
        shared_counter_pool(
            in_pool1(SLICE2, 3, memory_device(DEVICE1, "6Gi"), memory_device(DEVICE2, "2Gi")),
            resource_slice(SLICE3, NODE2, pool(POOL1, 3), DRIVER_A, memory_device(DEVICE3, "6Gi")),
        ),
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE3))],
        want=[on_node1(result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        [simple_claim()],
        [device_class()],
        shared_counter_pool(
            in_pool1(SLICE2, 3, memory_device(DEVICE1, "6Gi")),
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
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        [simple_claim()],
        [device_class()],
        shared_counter_pool(
            in_pool1(SLICE2, 3, memory_device(DEVICE1, "6Gi")),
            resource_slice(
                SLICE3, NODE2, pool(POOL1, 3), DRIVER_A, memory_device(DEVICE3, "6Gi", "counter-set-2")
            ),
        ),
        error="invalid resource pools were encountered",
    ),
    "partitionable-devices-prioritized-list": Case(
        [device_and_6gi_or_4gi()],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                from_counters(DEVICE1, (SET1, {"memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"memory": "6Gi"})),
                from_counters(DEVICE3, (SET1, {"memory": "4Gi"})),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, memory="8Gi")]),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1), result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE3)
            )
        ],
        feature_gates=features("PrioritizedList", "PartitionableDevices"),
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
        [device_and_6gi_or_4gi()],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                from_counters(DEVICE1, (SET1, {"memory": "4Gi"}), (SET2, {"cpus": "4"})),
                from_counters(DEVICE2, (SET1, {"memory": "6Gi"}), (SET2, {"cpus": "6"})),
                from_counters(DEVICE3, (SET1, {"memory": "4Gi"}), (SET2, {"cpus": "4"})),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, memory="18Gi"), counter_set(SET2, cpus="8")]),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1), result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE3)
            )
        ],
        feature_gates=features("PrioritizedList", "PartitionableDevices"),
    ),
    "partitionable-devices-multiple-pools": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1))],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                from_counters(DEVICE1, (SET1, {"cpus": "6", "memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"cpus": "4", "memory": "6Gi"})),
                from_counters(DEVICE3, (SET1, {"cpus": "4", "memory": "4Gi"})),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, cpus="8", memory="18Gi")]),
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
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            )
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL2, DEVICE2), result(REQ1, DRIVER_A, POOL2, DEVICE3))],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                counter_device(DEVICE1, (SET1, {"memory": "5Gi"})),
                counter_device(DEVICE2, (SET1, {"memory": "4Gi"})),
                counter_device(DEVICE3, (SET1, {"memory": "4Gi"})),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, memory="8Gi", unused="1Gi")]),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ0, DRIVER_A, POOL1, DEVICE3))],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-overallocated-capacity-pool": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(
                SLICE1,
                2,
                from_counters(DEVICE1, (SET1, {"memory": "4Gi"})),
                from_counters(DEVICE2, (SET1, {"memory": "20Gi"})),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, memory="18Gi")]),
        ],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, counter_device(DEVICE1, (SET1, {"memory": "4Gi"})), device(DEVICE2)),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, memory="18Gi")]),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features(),
    ),
    "partitionable-devices-disabled-per-device-node-selection": Case(
        [simple_claim()],
        [device_class()],
        [per_device_slice(device(DEVICE2, nodeName=NODE1))],
        feature_gates=features(),
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        [claim(CLAIM0, request(REQ0, count=3), request(REQ1, CLASS_B, count=3))],
        two_classes(),
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
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE2),
                result(REQ1, DRIVER_B, POOL2, DEVICE3),
            )
        ],
        feature_gates=features("PartitionableDevices", "PrioritizedList"),
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
            in_pool1(
                SLICE1,
                2,
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
            in_pool1(
                SLICE2,
                2,
                counter_sets=[counter_set(SET1, cpu1="1", cpu2="1", cpu3="1"), counter_set(SET2, mem="30Gi")],
            ),
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, counter_device(DEVICE1, (SET1, {"memory": "8Gi"}))),
            in_pool1(SLICE2, 2, counter_sets=[counter_set(SET1, **{"other-memory": "8Gi"})]),
        ],
        error="invalid resource pools were encountered",
        feature_gates=features("PartitionableDevices"),
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        [simple_claim()],
        [device_class()],
        [
            slice1(counter_device(DEVICE1, (SET1, {"memory": "8Gi"}))),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, counter_sets=[counter_set(SET1, memory="8Gi")]),
        ],
        error="invalid resource pools were encountered",
        feature_gates=features("PartitionableDevices"),
    ),
}
