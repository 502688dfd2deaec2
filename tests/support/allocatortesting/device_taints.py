"""Upstream's shared allocator table: device taints and tolerations."""

from __future__ import annotations

from typing import Any

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *


def _admin_access_to_the_tainted_device(*gates: str, want: list[dict[str, Any]] | None = None) -> Case:
    """An admin-access request for the one device, tainted NoSchedule and already allocated to another claim,
    with these feature gates on."""
    return Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        allocated_claims=[
            prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2))
        ],
        want=want,
        feature_gates=features(*gates),
    )


CASES: dict[str, Case] = {
    "tainted-two-devices": Case(
        [simple_claim()],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]), device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
    ),
    "tainted-two-devices-tolerated": Case(
        [claim(CLAIM0, request(REQ0, tolerations=[TOLERATE_NO_EXECUTE]))],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]), device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_NO_EXECUTE]))],
    ),
    "tainted-no-effect": Case(
        [simple_claim()],
        [device_class()],
        [slice1(device(DEVICE1, taints=[{"key": "k", "value": "v", "effect": "None"}]))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-disabled": Case(
        [simple_claim()],
        [device_class()],
        [slice1(device(DEVICE1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))],
        feature_gates=stable_features_without("DeviceTaints"),
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "tainted-one-device-two-taints": Case(
        [simple_claim()],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
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
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]), device(DEVICE2, taints=[TAINT_NO_EXECUTE]))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE2, tolerations=[TOLERATE_NO_EXECUTE]))],
        feature_gates=features("DeviceTaints", "PrioritizedList"),
    ),
    "tainted-one-device-two-taints-both-tolerated": Case(
        [claim(CLAIM0, request(REQ0, tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]))],
        want=[
            on_node1(
                result(
                    REQ0, DRIVER_A, POOL1, DEVICE1, tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]
                )
            )
        ],
        feature_gates=features("DeviceTaints"),
    ),
    "tainted-prioritized-list": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1)))],
        two_classes(),
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        feature_gates=features("DeviceTaints", "PrioritizedList"),
    ),
    "tainted-prioritized-list-disabled": Case(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, CLASS_B), sub_request(SUB1)))],
        two_classes(),
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        want=[on_node1(result(sub(REQ0, SUB1), DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features("PrioritizedList"),
    ),
    "tainted-admin-access": _admin_access_to_the_tainted_device("DeviceTaints", "AdminAccess"),
    "tainted-admin-access-disabled": _admin_access_to_the_tainted_device(
        "AdminAccess", want=[on_node1(admin(REQ0, DEVICE1))]
    ),
    "tainted-all-devices-single": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        feature_gates=features("DeviceTaints"),
    ),
    "tainted-all-devices-single-disabled": Case(
        [claim(CLAIM0, all_request(REQ0))],
        [device_class()],
        [slice1(device(DEVICE1, taints=[TAINT_NO_SCHEDULE]))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
        feature_gates=features(),
    ),
}
