"""Upstream's shared allocator table: matchAttribute and distinctAttribute constraints."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "with-constraint": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                constraints=[
                    match_attribute("numa"),
                    match_attribute("driverVersion"),
                    match_attribute("stringAttribute"),
                    match_attribute("boolAttribute"),
                ],
            )
        ],
        [device_class()],
        [
            slice1(
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
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "with-constraint-non-existent-attribute": Case(
        [claim(CLAIM0, request(REQ0), constraints=[match_attribute("NonExistentAttribute")])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "with-constraint-not-matching-int-attribute": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1), constraints=[match_attribute("numa")])],
        [device_class()],
        [numa_devices()],
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        [claim(CLAIM0, all_request(REQ0), constraints=[match_attribute("numa")])],
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
        two_classes(),
        [
            slice1(
                device(DEVICE1, attributes=attrs(driverVersion="v1.0.0")),
                device(DEVICE2, attributes=attrs(driverVersion="v2.0.0")),
            )
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE2))],
    ),
    "with-constraint-for-request-retry": Case(
        [
            claim(
                CLAIM0,
                request(REQ0),
                request(REQ1),
                constraints=[
                    {"requests": [REQ0], "matchAttribute": f"{DRIVER_A}/driverVersion"},
                    match_attribute("stringAttribute"),
                ],
            )
        ],
        [device_class()],
        [
            slice1(
                device(DEVICE1, attributes=attrs(driverVersion="v1.0.0", stringAttribute="a")),
                device(DEVICE2, attributes=attrs(driverVersion="v2.0.0", stringAttribute="b")),
                device(DEVICE3, attributes=attrs(driverVersion="v3.0.0", stringAttribute="b")),
            )
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE2), result(REQ1, DRIVER_A, POOL1, DEVICE3))],
    ),
    "unknown-constraint": Case(
        [claim(CLAIM0, request(REQ0), constraints=[{"requests": [REQ0]}])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)",
    ),
    "with-distinct-constraints": Case(
        [claim(CLAIM0, request(REQ0), request(REQ1), constraints=[distinct_attribute("stringAttribute")])],
        [device_class()],
        [
            slice1(
                device(DEVICE1, attributes=attrs(stringAttribute="a")),
                device(DEVICE2, attributes=attrs(stringAttribute="a")),
                device(DEVICE3, attributes=attrs(stringAttribute="b")),
            )
        ],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ1, DRIVER_A, POOL1, DEVICE3))],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        [claim(CLAIM0, request(REQ0), constraints=[distinct_attribute("stringAttribute")])],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        [two_shares_of_distinct_strings()],
        [multi_class()],
        [
            slice1(
                shared(DEVICE1, {"capacity-0": "2"}, attributes=attrs(stringAttribute="a")),
                shared(DEVICE2, {"capacity-0": "2"}, attributes=attrs(stringAttribute="b")),
            )
        ],
        want=[on_node1(share(REQ0, DEVICE1, {"capacity-0": "1"}), share(REQ1, DEVICE2, {"capacity-0": "1"}))],
    ),
    "with-constraint-not-matching-string-attribute": Case(
        [claim(CLAIM0, request(REQ0, count=2), constraints=[match_attribute("stringAttribute")])],
        two_classes(),
        [
            slice1(
                device(DEVICE1, attributes={"stringAttribute": s("stringAttributeValue")}),
                device(DEVICE2, attributes={"stringAttribute": s("stringAttributeValue2")}),
            )
        ],
        feature_gates=features(),
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        [claim(CLAIM0, request(REQ0, count=2), constraints=[match_attribute("boolAttribute")])],
        two_classes(),
        [
            slice1(
                device(DEVICE1, attributes={"boolAttribute": b(True)}),
                device(DEVICE2, attributes={"boolAttribute": b(False)}),
            )
        ],
        feature_gates=features(),
    ),
    "with-constraint-not-matching-version-attribute": Case(
        [claim(CLAIM0, request(REQ0, count=2), constraints=[match_attribute("driverVersion")])],
        two_classes(),
        [
            slice1(
                device(DEVICE1, attributes={"driverVersion": {"version": "1.0.0"}}),
                device(DEVICE2, attributes={"driverVersion": {"version": "2.0.0"}}),
            )
        ],
        feature_gates=features(),
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
        [slice1(shared(DEVICE1, attributes={"boolAttribute": {}}))],
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
            slice1(
                shared(DEVICE1, attributes={"boolAttribute": b(True)}),
                shared(DEVICE2, attributes={"boolAttribute": b(False)}),
            )
        ],
        want=[
            on_node1(
                share(sub(REQ0, SUB0), DEVICE1),
                share(sub(REQ1, SUB1), DEVICE2),
                share(sub(REQ2, SUB0), DEVICE1),
            )
        ],
        feature_gates=features("ConsumableCapacity", "PrioritizedList"),
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        [two_shares_of_distinct_strings()],
        [multi_class()],
        [
            slice1(
                shared(
                    DEVICE1, {CAP0: ranged("2")}, attributes={"stringAttribute": s("stringAttributeValue")}
                )
            )
        ],
        feature_gates=features("ConsumableCapacity"),
    ),
}
