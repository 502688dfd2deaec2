"""Upstream's shared allocator table: claims, classes, pools, selectors, config and errors."""

from __future__ import annotations

from resourceapi.api.resource_v1 import DeviceClass
from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "empty": Case([], [], [], want=[]),
    "simple": Case(
        [simple_claim()],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "other-node": Case(
        [simple_claim()],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_B), one_device_slice(SLICE2, NODE2, POOL2, DRIVER_A)],
        on=(NODE2, REGION2),
        want=[expect(local(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "small-and-large": Case(
        [claim(CLAIM0, memory_request(REQ0, "1Gi"), memory_request(REQ1, "2Gi"))],
        [device_class()],
        [slice1(device(DEVICE1, {"memory": "1Gi"}), device(DEVICE2, {"memory": "2Gi"}))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "small-and-large-backtrack-requests": Case(
        [claim(CLAIM0, memory_request(REQ0, "1Gi"), memory_request(REQ1, "2Gi"))],
        [device_class()],
        [slice1(device(DEVICE2, {"memory": "2Gi"}), device(DEVICE1, {"memory": "1Gi"}))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "small-and-large-backtrack-claims": Case(
        [claim(CLAIM0, memory_request(REQ0, "1Gi")), claim(CLAIM1, memory_request(REQ1, "2Gi"))],
        [device_class()],
        [slice1(device(DEVICE2, {"memory": "2Gi"}), device(DEVICE1, {"memory": "1Gi"}))],
        want=[
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            on_node1(result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ],
    ),
    "devices-split-across-different-slices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A), one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A)],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "obsolete-slice": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1("slice-1-obsolete", 2, device(DEVICE1)),
            resource_slice("slice-1-newer", NODE1, pool(POOL1, 2, generation=2), DRIVER_A, device(DEVICE2)),
        ],
        want=None,
    ),
    "duplicate-slice": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, device(DEVICE1)),
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
    "count-devices-some-allocated-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0, count=2)))],
        [device_class()],
        [two_devices()],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        want=[on_node1(admin(REQ0, DEVICE1), admin(REQ0, DEVICE2))],
    ),
    "separate-claims-share-device-admin-access": Case(
        [claim(CLAIM0, admin_request(request(REQ0))), claim(CLAIM1, admin_request(request(REQ0)))],
        [device_class()],
        [two_devices()],
        want=[on_node1(admin(REQ0, DEVICE1)), on_node1(admin(REQ0, DEVICE1))],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        [simple_claim()],
        [device_class()],
        [resource_slice(SLICE1, label_selector("region", REGION2), POOL1, DRIVER_A, device(DEVICE1))],
    ),
    "local-and-network-attached-devices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
            resource_slice(SLICE2, label_selector("region", REGION1), POOL2, DRIVER_A, device(DEVICE1)),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "several-different-drivers": Case(
        [simple_claim(), simple_claim(CLAIM1, cls=CLASS_B)],
        two_classes(),
        one_device_per_driver(),
        want=one_result_per_driver(),
    ),
    "already-allocated-devices": Case(
        [simple_claim()],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "with-class-device-config": Case(
        [simple_claim()],
        [device_class(config=[opaque(DRIVER_A, "classAttribute")])],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[from_class(DRIVER_A, "classAttribute")])
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
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_B, POOL1, DEVICE1),
                config=[
                    from_class(DRIVER_A, "classAttribute-A", REQ0, REQ1),
                    from_class(DRIVER_B, "classAttribute-B", REQ2),
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
            on_node1(
                result(REQ0, DRIVER_A, POOL1, DEVICE0),
                result(REQ1, DRIVER_A, POOL1, DEVICE1),
                result(REQ2, DRIVER_A, POOL1, DEVICE2),
                config=[from_claim(DRIVER_A, "deviceAttribute", REQ0, REQ1)],
            )
        ],
    ),
    "claim-config-covering-all-requests-is-cleared": Case(
        [claim(CLAIM0, request(REQ0), config=[{"requests": [REQ0], **opaque(DRIVER_A, "deviceAttribute")}])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[from_claim(DRIVER_A, "deviceAttribute")])
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
        want=[on_node1(*(result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(32)))],
    ),
    "too-many-devices-total": Case(
        [claim(CLAIM0, request(REQ0, count=16), request(REQ1, count=17))],
        [device_class()],
        [n_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33)],
        error="exceeds the claim limit",
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
        two_classes(),
        [two_devices()],
        want=[
            on_node1(
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
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, device(DEVICE1)),
            in_pool1(SLICE2, 2, device(DEVICE1)),
            one_device_slice(SLICE3, NODE1, POOL2, DRIVER_A),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL2, DEVICE1))],
    ),
    "no-allocation-from-incomplete-pools": Case(
        [simple_claim()], [device_class()], [in_pool1(SLICE1, 2, device(DEVICE1))]
    ),
    "binding-conditions-without-feature-gate": Case(
        [simple_claim()],
        [device_class()],
        [slice1(device(DEVICE1, bindingConditions=["ready"], bindingFailureConditions=["failed"]))],
    ),
    "node-restriction": Case(
        [simple_claim()],
        [device_class()],
        [
            resource_slice(
                SLICE1, label_selector("planet", "earth"), POOL1, DRIVER_A, device(DEVICE1, bindsToNode=True)
            )
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
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
        [slice1(*(device(f"device-{i}") for i in range(1, 5)))],
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
            slice1(
                device(DEVICE1, attributes=attrs(type="X")),
                device(DEVICE2, attributes=attrs(type="Y")),
                device(DEVICE3, attributes=attrs(type="Y")),
            )
        ],
        want=[
            on_node1(
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
                result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        calls=12,
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, device(DEVICE1)),
            resource_slice(SLICE2, NODE2, pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "no-claims-to-allocate": Case(
        [],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[],
        feature_gates=features(),
    ),
    "claim-with-device-config": Case(
        [simple_claim(config=[opaque(DRIVER_A, "deviceAttribute")])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        want=[
            on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), config=[from_claim(DRIVER_A, "deviceAttribute")])
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
    "max-number-devices": Case(
        [claim(CLAIM0, request(REQ0, count=32))],
        [device_class()],
        [slice1(*(device(f"device-{i}") for i in range(32)))],
        want=[on_node1(*(result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(32)))],
        feature_gates=features(),
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        [simple_claim()],
        [device_class()],
        [
            in_pool1(SLICE1, 2, device(DEVICE1)),
            in_pool1(SLICE2, 2, device(DEVICE1)),
            resource_slice(SLICE3, NODE1, pool(POOL2, 1), DRIVER_A, device(DEVICE2)),
        ],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL2, DEVICE2))],
        error="invalid resource pools were encountered",
        feature_gates=features(),
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": combinations(
        in_pool1(SLICE1, 2, device(DEVICE1), device(DEVICE2)),
        in_pool1(SLICE2, 2, device(DEVICE3), device(DEVICE4)),
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": combinations(
        in_pool1(SLICE1, 2, device(DEVICE1)),
        in_pool1(SLICE2, 2, device(DEVICE2)),
        resource_slice(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE3), device(DEVICE4)),
    ),
    "check-combinations-within-single-request-many-pools": combinations(
        slice1(device(DEVICE1)),
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
            on_node1(
                result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE2),
                result(sub(REQ1, SUB1), DRIVER_A, POOL1, DEVICE3),
                result(sub(REQ2, SUB1), DRIVER_A, POOL1, DEVICE1),
            )
        ],
        calls=26,
        feature_gates=features("PrioritizedList"),
    ),
    "lexicographical-sorting-pools": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            one_device_slice(SLICE1, NODE1, POOL3, DRIVER_A),
            one_device_slice(SLICE2, NODE1, POOL2, DRIVER_A),
            one_device_slice(SLICE3, NODE1, POOL1, DRIVER_A),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL2, DEVICE1))],
        feature_gates=features(),
    ),
    "lexicographical-sorting-slices": Case(
        [claim(CLAIM0, request(REQ0, count=2))],
        [device_class()],
        [
            in_pool1(SLICE3, 3, device(DEVICE3)),
            in_pool1(SLICE2, 3, device(DEVICE2)),
            in_pool1(SLICE1, 3, device(DEVICE1)),
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2))],
        feature_gates=features(),
    ),
}
