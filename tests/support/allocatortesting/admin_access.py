"""Upstream's shared allocator table: adminAccess."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        [simple_claim(), claim(CLAIM1, admin_request(request(REQ0)))],
        [device_class()],
        [two_devices()],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1)), on_node1(admin(REQ0, DEVICE1))],
    ),
    "admin-access-disabled": Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=stable_features_without("AdminAccess"),
        error="claim claim-0, request req-0: admin access is requested, but the feature is disabled",
    ),
    "admin-access-enabled": Case(
        [claim(CLAIM0, admin_request(request(REQ0)))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        allocated_claims=[
            prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1), result(REQ0, DRIVER_A, POOL1, DEVICE2))
        ],
        want=[on_node1(admin(REQ0, DEVICE1))],
        feature_gates=features("AdminAccess"),
    ),
}
