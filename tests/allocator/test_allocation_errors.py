"""Fatal allocation errors read exactly as upstream's (incubating allocator, cel.EnhanceRuntimeError).

Each case compares the whole message, not a substring: scripts and users match on these texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from support.dra_objects import (
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    all_request,
    capacity,
    claim,
    device,
    device_class,
    gates,
    one_device_slice,
    pool,
    prioritized,
    request,
    resource_slice,
    run,
    selector,
    simple_claim,
    sub_request,
)

from allocator.structured.selection import NO_SUCH_KEY_HINT, enhance_runtime_error
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for "
    "optional fields"
)
ON_DEVICE1 = f"on device {DRIVER_A}/{POOL1}/{DEVICE1}"


def class_with(*expressions: str) -> DeviceClass:
    return DeviceClass.model_validate(
        {"metadata": {"name": CLASS_A}, "spec": {"selectors": [selector(e) for e in expressions]}}
    )


def slice_with(*devices: dict[str, Any]) -> ResourceSlice:
    return resource_slice(SLICE1, NODE1, POOL1, DRIVER_A, *devices)


@dataclass
class ErrorCase:
    claims: list[ResourceClaim]
    slices: list[ResourceSlice]
    message: str
    classes: list[DeviceClass] = field(default_factory=lambda: [device_class()])
    feature_gates: FeatureGates = field(default_factory=gates)


DRIVER_CHECK = f'device.driver == "{DRIVER_A}"'
HEALTHY = f'device.attributes["{DRIVER_A}"].healthy'
MEMORY_IS_ONE = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1")) == 0'
TWO_TERMS = {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]},
        {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-2"]}]},
    ]
}

CASES: dict[str, ErrorCase] = {
    "subrequests-with-prioritized-list-disabled": ErrorCase(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0)))],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
        feature_gates=gates(DRAPrioritizedList=False),
    ),
    "request-capacity-with-consumable-capacity-disabled": ErrorCase(
        [claim(CLAIM0, request(REQ0, capacity=capacity(memory="1Gi")))],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is "
        "disabled",
        feature_gates=gates(DRAConsumableCapacity=False),
    ),
    "subrequest-capacity-with-consumable-capacity-disabled": ErrorCase(
        [
            claim(
                CLAIM0, prioritized(REQ0, sub_request(SUB0), sub_request(SUB1, capacity=capacity(memory="1")))
            )
        ],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, subrequest subReq-1: has capacity requests, but the DRAConsumableCapacity feature "
        "is disabled",
        feature_gates=gates(DRAConsumableCapacity=False),
    ),
    "selector-without-cel-in-a-subrequest-names-the-subrequest": ErrorCase(
        [claim(CLAIM0, prioritized(REQ0, sub_request(SUB0, selectors=[{"future": {}}])))],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        f"claim claim-0, request {SUB0}, selector #0: CEL expression empty (unsupported selector type?)",
    ),
    "admin-access-with-the-feature-disabled": ErrorCase(
        [claim(CLAIM0, request(REQ0, adminAccess=True))],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, request req-0: admin access is requested, but the feature is disabled",
        feature_gates=gates(DRAAdminAccess=False),
    ),
    "missing-class-name": ErrorCase(
        [simple_claim(cls="")],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, request req-0: missing device class name (unsupported request type?)",
    ),
    "unknown-class-reads-like-the-lister-not-found-error": ErrorCase(
        [simple_claim(cls="gpu")],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, request req-0: could not retrieve device class gpu: "
        'deviceclass.resource.k8s.io "gpu" not found',
    ),
    "claim-with-a-namespace-is-named-namespace-slash-name": ErrorCase(
        [claim(CLAIM0, request(REQ0, cls="gpu"), namespace="team-a")],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim team-a/claim-0, request req-0: could not retrieve device class gpu: "
        'deviceclass.resource.k8s.io "gpu" not found',
    ),
    "all-devices-with-another-drivers-pool-incomplete": ErrorCase(
        [claim(CLAIM0, all_request(REQ0))],
        [
            one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A),
            resource_slice(SLICE2, NODE1, pool(POOL2, 2), DRIVER_B, device(DEVICE1)),
        ],
        "claim claim-0, request req-0: asks for all devices, but resource pool driver-b/pool-2 is currently "
        "being updated",
    ),
    "all-devices-with-an-invalid-pool": ErrorCase(
        [claim(CLAIM0, all_request(REQ0))],
        [
            resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
            resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        ],
        "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently "
        "invalid",
    ),
    "unknown-allocation-mode": ErrorCase(
        [claim(CLAIM0, request(REQ0, allocationMode="Some"))],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, request req-0: unsupported count mode Some",
    ),
    "more-than-32-devices-in-one-claim": ErrorCase(
        [claim(CLAIM0, request(REQ0, count=30), request(REQ1, count=3))],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0: number of requested devices 33 exceeds the claim limit of 32",
    ),
    "claim-limit-counts-the-smallest-subrequest": ErrorCase(
        [
            claim(
                CLAIM0,
                request(REQ0, count=30),
                prioritized(REQ1, sub_request(SUB0, count=4), sub_request(SUB1, count=3)),
            )
        ],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0: number of requested devices 33 exceeds the claim limit of 32",
    ),
    "empty-constraint-is-numbered": ErrorCase(
        [
            claim(
                CLAIM0,
                request(REQ0),
                constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}, {"requests": [REQ0]}],
            )
        ],
        [one_device_slice(SLICE1, NODE1, POOL1, DRIVER_A)],
        "claim claim-0, constraint #1: empty constraint (unsupported constraint type?)",
    ),
    "all-devices-violating-a-constraint": ErrorCase(
        [claim(CLAIM0, all_request(REQ0), constraints=[{"matchAttribute": f"{DRIVER_A}/numa"}])],
        [
            slice_with(
                device(DEVICE1, attributes={"numa": {"int": 1}}),
                device(DEVICE2, attributes={"numa": {"int": 2}}),
            )
        ],
        "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint "
        "would not be satisfied",
    ),
    "class-selector-missing-key-gets-the-optional-chaining-hint": ErrorCase(
        [simple_claim()],
        [slice_with(device(DEVICE1))],
        f"class class-a: selector #1 {ON_DEVICE1}: CEL runtime error: no such key: healthy{HINT}",
        classes=[class_with(DRIVER_CHECK, HEALTHY)],
    ),
    "claim-selector-missing-key-gets-the-optional-chaining-hint": ErrorCase(
        [claim(CLAIM0, request(REQ0, selectors=[selector(HEALTHY)]))],
        [slice_with(device(DEVICE1))],
        f"claim claim-0: selector #0 {ON_DEVICE1}: CEL runtime error: no such key: healthy{HINT}",
    ),
    "missing-capacity-gets-the-optional-chaining-hint": ErrorCase(
        [
            claim(
                CLAIM0,
                request(REQ0, selectors=[selector(MEMORY_IS_ONE)]),
                namespace="default",
            )
        ],
        [slice_with(device(DEVICE1))],
        f"claim default/claim-0: selector #0 {ON_DEVICE1}: CEL runtime error: no such key: memory{HINT}",
    ),
    "other-runtime-errors-get-no-hint": ErrorCase(
        [
            claim(
                CLAIM0, request(REQ0, selectors=[selector(f'device.attributes["{DRIVER_A}"].numa / 0 == 1')])
            )
        ],
        [slice_with(device(DEVICE1, attributes={"numa": {"int": 1}}))],
        f"claim claim-0: selector #0 {ON_DEVICE1}: CEL runtime error: division by zero",
    ),
    "attribute-without-a-value": ErrorCase(
        [simple_claim()],
        [slice_with(device(DEVICE1, attributes={"healthy": {}}))],
        f"class class-a: selector #0 {ON_DEVICE1}: CEL runtime error: attribute healthy: unsupported "
        "attribute value",
    ),
    "class-selector-compile-error": ErrorCase(
        [simple_claim()],
        [slice_with(device(DEVICE1))],
        "class class-a: selector #1: CEL compile error: compilation failed: ERROR: <input>:1:1: undeclared "
        "reference to 'noSuchVar' (in container '')\n | noSuchVar\n | ^",
        classes=[class_with(DRIVER_CHECK, "noSuchVar")],
    ),
    "slice-node-selector-with-two-terms": ErrorCase(
        [simple_claim()],
        [resource_slice(SLICE1, TWO_TERMS, POOL1, DRIVER_A, device(DEVICE1))],
        "create NodeSelector for claim claim-0: unsupported ResourceSlice.NodeSelector with 2 terms",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=list(CASES))
def test_fatal_error_message_matches_upstream(case: ErrorCase) -> None:
    outcome = run(case.claims, case.classes, case.slices, feature_gates=case.feature_gates)
    assert outcome.results is None
    assert outcome.error == case.message
    assert not outcome.node_failure


def test_invalid_pools_are_reported_only_when_nothing_else_fits() -> None:
    invalid = [
        resource_slice(SLICE1, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        resource_slice(SLICE2, NODE1, pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
    ]
    failed = run([simple_claim()], [device_class()], invalid)
    assert (failed.results, failed.error, failed.node_failure) == (
        None,
        "invalid resource pools were encountered",
        True,
    )
    fits = run(
        [simple_claim()], [device_class()], [*invalid, one_device_slice("slice-3", NODE1, POOL2, DRIVER_A)]
    )
    assert fits.error is None
    assert fits.results is not None


# upstream cel/errors_test.go TestEnhanceRuntimeError (the nil case has no counterpart: texts are never None).
ENHANCE_CASES = {
    "no such key error gets enhanced with usage hint": (
        "no such key: sharingStrategy",
        "no such key: sharingStrategy. consider using CEL optional chaining (.? followed by orValue()) or "
        "guarding the check with has() for optional fields",
    ),
    "other error is returned unchanged": ("some other error", "some other error"),
    "wrapped no such key error gets enhanced": (
        "context: no such key: fieldY",
        "context: no such key: fieldY. consider using CEL optional chaining (.? followed by orValue()) or "
        "guarding the check with has() for optional fields",
    ),
    "error with hint text but not enhancedError type still gets enhanced": (
        "no such key: fieldZ. consider using CEL optional chaining",
        "no such key: fieldZ. consider using CEL optional chaining. consider using CEL optional chaining (.? "
        "followed by orValue()) or guarding the check with has() for optional fields",
    ),
}


@pytest.mark.parametrize(("text", "want"), ENHANCE_CASES.values(), ids=list(ENHANCE_CASES))
def test_enhance_runtime_error(text: str, want: str) -> None:
    assert enhance_runtime_error(text) == want


def test_enhance_runtime_error_is_idempotent() -> None:
    once = enhance_runtime_error("no such key: fieldA")
    assert enhance_runtime_error(once) == once
    assert once.count(NO_SUCH_KEY_HINT) == 1


@pytest.mark.slow
def test_a_pathological_claim_times_out_on_the_node_by_default_instead_of_hanging() -> None:
    """31 devices that must share a value no 31 devices share: an exponential search, bounded by default."""
    from support.dra_objects import device, device_class, node, resource_slice

    from allocator.structured.cluster import Cluster
    from allocator.structured.search import DEFAULT_MAX_STEPS
    from resourceapi.api.resource_v1 import ResourceClaim
    from resourceapi.gates import FeatureGates

    devices = [device(f"d{i}", attributes={"numa": {"int": i % 3}}) for i in range(90)]
    core = Cluster(
        FeatureGates.defaults(), [device_class()], [resource_slice("s", "node-1", "p", "driver-a", *devices)]
    )
    pathological = ResourceClaim.model_validate(
        {
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {
                "devices": {
                    "requests": [{"name": "r", "exactly": {"deviceClassName": "class-a", "count": 31}}],
                    "constraints": [{"matchAttribute": "driver-a/numa"}],
                }
            },
        }
    )
    alloc = core.allocate(node(), [pathological])
    assert (alloc.error, alloc.node_failure) == ("timed out trying to allocate devices", True)
    assert alloc.allocate_one_calls == DEFAULT_MAX_STEPS + 1
