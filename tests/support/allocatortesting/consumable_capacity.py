"""Upstream's shared allocator table: consumable capacity (KEP-5075)."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    # --- consumable capacity (KEP-5075) ---------------------------------------------------------------------
    "consumable-capacity-disabled-feature": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=stable_features_without("ConsumableCapacity"),
        error="claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature "
        "is disabled",
    ),
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, capacity=cap_request("1")),
                    sub_request(SUB1, capacity=cap_request("1")),
                ),
            )
        ],
        [device_class()],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        feature_gates=stable_features_without("ConsumableCapacity"),
        error="claim claim-0, subrequest subReq-0: has capacity requests, but the DRAConsumableCapacity "
        "feature is disabled",
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [device_class()],
        [slice1(shared(DEVICE1, {"capacity-1": "1"}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [slice1(shared(DEVICE1))],
        want=[on_node1(share(REQ0, DEVICE1)), on_node1(share(REQ0, DEVICE1))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "1"}), shared(DEVICE2, {"capacity-0": "1"}))],
        want=[
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "1"})),
            on_node1(share(REQ0, DEVICE2, {"capacity-0": "1"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1")), claim(CLAIM1, capacity_request(REQ0, "1"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "2"}))],
        want=[
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "1"})),
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "1"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("4")}))],
        want=[
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"})),
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        [simple_claim(), simple_claim(CLAIM1)],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": valid_values("1", "0")}))],
        want=[
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "0"})),
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "0"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": valid_values("1", "0")}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1")), claim(CLAIM1, capacity_request(REQ0, "1"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("4")}))],
        want=[
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"})),
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        [claim(CLAIM0, capacity_request(REQ0, "3"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("4")}))],
        want=[on_node1(share(REQ0, DEVICE1, {"capacity-0": "4"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        [claim(CLAIM0, capacity_request(REQ0, "2"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": valid_values("3", "1", "3")}))],
        want=[on_node1(share(REQ0, DEVICE1, {"capacity-0": "3"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1")), claim(CLAIM1, capacity_request(REQ0, "2"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("2")}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        [claim(CLAIM0, capacity_request(REQ0, "6"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("10")}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        [claim(CLAIM0, capacity_request(REQ0, "2"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("4")}))],
        allocated_claims=[
            prior("other", share(REQ0, DEVICE1, {"capacity-0": "2"}) | {"shareID": "b" * 8 + SHARE[8:]})
        ],
        want=[on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        [claim(CLAIM0, capacity_request(REQ0, "2"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("2")}), shared(DEVICE2, {"capacity-0": ranged("2")}))],
        allocated_claims=[
            prior("other", share(REQ0, DEVICE1, {"capacity-0": "2"}) | {"shareID": "b" * 8 + SHARE[8:]})
        ],
        want=[on_node1(share(REQ0, DEVICE2, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        [
            claim(
                CLAIM0,
                capacity_request(REQ0, "2"),
                capacity_request(REQ1, "2"),
                constraints=[match_attribute("stringAttribute")],
            ),
            claim(CLAIM1, capacity_request(REQ0, "2")),
        ],
        [device_class()],
        [
            slice1(
                shared(DEVICE2, {"capacity-0": ranged("2")}, attributes=attrs(stringAttribute="value1")),
                shared(DEVICE1, {"capacity-0": ranged("4")}, attributes=attrs(stringAttribute="value2")),
            )
        ],
        want=[
            on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"}), share(REQ1, DEVICE1, {"capacity-0": "2"})),
            on_node1(share(REQ0, DEVICE2, {"capacity-0": "2"})),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        [
            claim(
                CLAIM0,
                prioritized(
                    REQ0,
                    sub_request(SUB0, capacity=cap_request("4")),
                    sub_request(SUB1, capacity=cap_request("2")),
                ),
            )
        ],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("2")}))],
        want=[on_node1(share(f"{REQ0}/{SUB1}", DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("2")))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "2"}), shared(DEVICE2, {"capacity-0": "1"}))],
        want=[on_node1(share(REQ0, DEVICE1, {"capacity-0": "2"}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"), all_request(REQ1, capacity=cap_request("1")))],
        [device_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "2"}), shared(DEVICE2, {"capacity-0": "1"}))],
        want=[
            on_node1(
                share(REQ0, DEVICE1, {"capacity-0": "1"}),
                share(REQ1, DEVICE1, {"capacity-0": "1"}),
                share(REQ1, DEVICE2, {"capacity-0": "1"}),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"), all_request(REQ1, capacity=cap_request("1")))],
        [device_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "1"}), shared(DEVICE2, {"capacity-0": "1"}))],
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [dedicated_class()],
        [slice1(device(DEVICE1, {"capacity-0": "1"}))],
        want=[on_node1(result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1")), claim(CLAIM1, capacity_request(REQ0, "1"))],
        [dedicated_class()],
        [slice1(device(DEVICE1, {"capacity-0": ranged("2")}))],
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [dedicated_class()],
        [slice1(shared(DEVICE1, {"capacity-0": "1"}))],
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {"capacity-0": ranged("2")}))],
        allocated_claims=[prior("other", result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        [device_and_6gi_or_4gi()],
        [multi_class()],
        [
            in_pool1(
                SLICE1,
                2,
                shared(DEVICE1, {"memory": "4Gi"}, consumesCounters=consumes("cs-1", memory="4Gi")),
                shared(DEVICE2, {"memory": "6Gi"}, consumesCounters=consumes("cs-1", memory="6Gi")),
                shared(DEVICE3, {"memory": "4Gi"}, consumesCounters=consumes("cs-1", memory="4Gi")),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set("cs-1", memory="8Gi")]),
        ],
        want=[
            on_node1(
                share(REQ0, DEVICE1, {"memory": "4Gi"}), share(f"{REQ1}/{SUB1}", DEVICE3, {"memory": "4Gi"})
            )
        ],
    ),
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        [
            claim(
                CLAIM0,
                request(
                    REQ0,
                    capacity=cap_request("1"),
                    selectors=[selector(f'device.attributes["{DRIVER_A}"].mode == "b"')],
                ),
            )
        ],
        [multi_class()],
        [
            in_pool1(
                SLICE1,
                2,
                shared(
                    DEVICE1,
                    {"capacity-0": "1"},
                    attributes=attrs(mode="a"),
                    consumesCounters=consumes("cs-1", **{"capacity-0": "1"}),
                ),
                shared(
                    DEVICE2,
                    {"capacity-0": "1"},
                    attributes=attrs(mode="b"),
                    consumesCounters=consumes("cs-1", **{"capacity-0": "1"}),
                ),
            ),
            in_pool1(SLICE2, 2, counter_sets=[counter_set("cs-1", **{"capacity-0": "1"})]),
        ],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {"capacity-0": "1"}))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("1")))],
        [multi_class()],
        [slice1(shared(DEVICE1, {CAP1: "1"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        [claim(CLAIM0, capacity_request(REQ0, "2"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {CAP0: valid_values("4", "1", "2")}))],
        want=[on_node1(share(REQ0, DEVICE1, {CAP0: "2"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        [claim(CLAIM0, capacity_request(REQ0, "2"))],
        [multi_class()],
        [slice1(shared(DEVICE1, {CAP0: ranged("2")}))],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "2"}) | {"shareID": OTHER_SHARE})],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("2")))],
        [multi_class()],
        [slice1(shared(DEVICE1, {CAP0: "2"}), shared(DEVICE2))],
        want=[on_node1(share(REQ0, DEVICE1, {CAP0: "2"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("1")))],
        [device_class()],
        [slice1(shared(DEVICE1, {CAP0: "2"}), shared(DEVICE2, {CAP0: "1"}))],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "1"}) | {"shareID": OTHER_SHARE})],
        want=[on_node1(share(REQ0, DEVICE1, {CAP0: "1"}), share(REQ0, DEVICE2, {CAP0: "1"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        [claim(CLAIM0, all_request(REQ0, capacity=cap_request("1")))],
        [device_class()],
        [slice1(shared(DEVICE1, {CAP0: "1"}), shared(DEVICE2, {CAP0: "1"}))],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "1"}) | {"shareID": OTHER_SHARE})],
        want=[on_node1(share(REQ0, DEVICE2, {CAP0: "1"}))],
        feature_gates=features("ConsumableCapacity"),
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        [claim(CLAIM0, capacity_request(REQ0, "1"))],
        [multi_class()],
        [slice1(device(DEVICE1, {CAP0: ranged("2")}))],
        allocated_claims=[prior("other", share(REQ0, DEVICE1, {CAP0: "1"}) | {"shareID": OTHER_SHARE})],
        feature_gates=features("ConsumableCapacity"),
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        [
            claim(
                CLAIM0,
                capacity_request(REQ0, "1"),
                capacity_request(REQ2, "2"),
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
            in_pool1(
                SLICE1,
                2,
                *(
                    shared(
                        name,
                        {CAP0: cap0, CAP1: ranged("4")},
                        consumesCounters=consumes(SET1, **{CAP0: cap0}) + consumes(SET2, **{CAP1: "4"}),
                    )
                    for name, cap0 in ((DEVICE1, "2"), (DEVICE2, "4"), (DEVICE3, "2"))
                ),
            ),
            in_pool1(
                SLICE2, 2, counter_sets=[counter_set(SET1, **{CAP0: "4"}), counter_set(SET2, **{CAP1: "8"})]
            ),
        ],
        want=[
            on_node1(
                share(REQ0, DEVICE1, {CAP0: "1", CAP1: "2"}),
                share(REQ2, DEVICE3, {CAP0: "2", CAP1: "2"}),
                share(sub(REQ1, SUB1), DEVICE1, {CAP0: "1", CAP1: "2"}),
            )
        ],
        feature_gates=features("PrioritizedList", "PartitionableDevices", "ConsumableCapacity"),
    ),
}
