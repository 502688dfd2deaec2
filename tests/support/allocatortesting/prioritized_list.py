"""Upstream's shared allocator table: prioritized lists (firstAvailable)."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "prioritized-list-first-unavailable": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A)))],
        two_classes(),
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[on_node1(result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
    ),
    "prioritized-list-non-available": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1, CLASS_A, count=2)))],
        two_classes(),
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
            on_node1(
                result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1),
                config=[from_class(DRIVER_B, "classAttribute-B")],
            )
        ],
    ),
    "prioritized-list-disabled": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=stable_features_without("PrioritizedList"),
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
            on_node1(
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
        want=[on_node1(result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1))],
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
            on_node1(
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
        two_classes(),
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 31), n_devices(SLICE2, NODE1, POOL2, DRIVER_B, 2)],
        want=[
            on_node1(
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE0),
                result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_B, POOL2, DEVICE0),
                result(REQ1, DRIVER_B, POOL2, DEVICE1),
            )
        ],
        calls=42,
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": sub_constraint_case(
        [REQ0, REQ1],
        [versioned_memory(DEVICE2, "2Gi", "2.0.0"), versioned_memory(DEVICE3, "1Gi", "1.0.0")],
        DEVICE3,
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": sub_constraint_case(
        [REQ0, f"{REQ1}/{SUB0}"], [versioned_memory(DEVICE2, "2Gi", "2.0.0")], DEVICE2
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
        two_classes(),
        [resource_slice(SLICE1, NODE1, POOL1, DRIVER_B, device(DEVICE1), device(DEVICE2))],
        want=[
            on_node1(
                result(sub(REQ0, SUB1), DRIVER_B, POOL1, DEVICE1),
                result(sub(REQ0, SUB1), DRIVER_B, POOL1, DEVICE2),
                config=[from_claim(DRIVER_B, "bar")],
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        [
            claim(
                CLAIM0,
                memory_request(REQ0, "1Gi"),
                prioritized(
                    REQ1,
                    memory_sub(SUB0, "4Gi"),
                    sub_request(SUB1, count=2, selectors=[memory_selector("2Gi")]),
                ),
            )
        ],
        [device_class()],
        [
            slice1(
                device(DEVICE1, {"memory": "2Gi"}),
                device(DEVICE2, {"memory": "2Gi"}),
                device(DEVICE3, {"memory": "1Gi"}),
            )
        ],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE3),
                result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE1),
                result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE2),
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        [claim(CLAIM0, prioritized(REQ0, all_sub(SUB0), sub_request(SUB1)))],
        [device_class()],
        [slice1(device(DEVICE1), device(DEVICE2))],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        [claim(CLAIM0, request(REQ0), prioritized(REQ1, all_sub(SUB0), sub_request(SUB1)))],
        [device_class()],
        [slice1(device(DEVICE1), device(DEVICE2))],
        want=[
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE1), result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE2)
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-multi-request": Case(
        [
            claim(
                CLAIM0,
                memory_request(REQ1, "8Gi"),
                prioritized(REQ0, memory_sub(SUB0, "8Gi"), memory_sub(SUB1, "4Gi")),
            )
        ],
        [device_class()],
        [
            slice1(device(DEVICE1, {"memory": "8Gi"}, attributes={})),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2, {"memory": "4Gi"}, attributes={})),
        ],
        want=[
            on_node1(
                result(REQ1, DRIVER_A, POOL1, DEVICE1), result(sub(REQ0, SUB1), DRIVER_A, POOL2, DEVICE2)
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all": Case(
        [claim(CLAIM0, prioritized(REQ0, all_sub(SUB0), sub_request(SUB1)))],
        [device_class()],
        [slice1(device(DEVICE1), device(DEVICE2))],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE2))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [device_class()],
        [slice1(*generation_devices(("v5", None)))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [device_class()],
        [
            slice1(*generation_devices(("v5", None))),
            resource_slice(SLICE2, NODE1, POOL2, DRIVER_A, *generation_devices(("v5", None))),
        ],
        want=[
            on_node1(
                result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1),
                result(sub(REQ0, SUB1), DRIVER_A, POOL2, DEVICE1),
            )
        ],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [device_class()],
        [
            slice1(*generation_devices(("v5", None))),
            resource_slice(SLICE2, NODE2, POOL2, DRIVER_A, *generation_devices(("v5", None), ("v6", None))),
        ],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        [claim(CLAIM0, GENERATION_SUBS)],
        [
            class_with_selector(
                CLASS_A, f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected'
            )
        ],
        [slice1(*generation_devices(("v6", False), ("v5", False), ("v5", True)))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE3))],
        feature_gates=features("PrioritizedList"),
    ),
}
