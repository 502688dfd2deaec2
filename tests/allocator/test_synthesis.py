"""Claim synthesis for DRA-backed extended resources: upstream naming, reuse and shape; KEP-6406 capacity."""

from __future__ import annotations

from typing import Any

import pytest
from support.workloads import GPU_CLASS, GPU_SHARED, container, gpu_class, node, pod

from allocator.scheduling.synthesis import REASON_CANNOT_FIT, synthesize_claim, synthesize_for_resources
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity

GATES = FeatureGates.defaults()
GPU = GPU_SHARED
DRA_NODE = node("n1")


def _synth(p: Any, gates: FeatureGates = GATES, classes: list[Any] | None = None, on: Any = DRA_NODE) -> Any:
    resolver = ExtendedResourceResolver(classes if classes is not None else [gpu_class()], gates)
    return synthesize_claim(p, on, resolver, gates)


def _requests(outcome: Any) -> list[tuple[str, int]]:
    return [(r.name, r.exactly.count) for r in outcome.claim.spec.devices.requests]


def _mappings(outcome: Any) -> list[tuple[str, str, str]]:
    return [(m.container_name, m.resource_name, m.request_name) for m in outcome.mappings]


# Table in the spirit of upstream's createRequestsAndMappings tests: containers, init containers -> requests.
CASES: list[
    tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, int]], list[tuple[str, str, str]]]
] = [
    (
        "one container, one resource",
        [container("c0", {GPU: 1})],
        [],
        [("container-0-request-0", 1)],
        [("c0", GPU, "container-0-request-0")],
    ),
    (
        "resource index counts every resource the container requests, cpu included",
        [container("c0", {"cpu": "1", "memory": "1Gi", GPU: 2})],
        [],
        [("container-0-request-2", 2)],
        [("c0", GPU, "container-0-request-2")],
    ),
    (
        "each regular container gets its own request",
        [container("c0", {GPU: 1}), container("c1", {GPU: 3})],
        [],
        [("container-0-request-0", 1), ("container-1-request-0", 3)],
        [("c0", GPU, "container-0-request-0"), ("c1", GPU, "container-1-request-0")],
    ),
    (
        "init container fully reuses a later regular container's request",
        [container("main", {GPU: 2})],
        [container("init", {GPU: 1})],
        [("container-1-request-0", 2)],
        [("main", GPU, "container-1-request-0"), ("init", GPU, "container-1-request-0")],
    ),
    (
        "init container asks only for what reuse does not cover",
        [container("main", {GPU: 1})],
        [container("init", {GPU: 3})],
        [("container-0-request-0", 2), ("container-1-request-0", 1)],
        [
            ("main", GPU, "container-1-request-0"),
            ("init", GPU, "container-1-request-0"),
            ("init", GPU, "container-0-request-0"),
        ],
    ),
    (
        "only the largest init request is kept and the others map to it",
        [],
        [container("i0", {GPU: 2}), container("i1", {GPU: 3})],
        [("container-1-request-0", 3)],
        [("i0", GPU, "container-1-request-0"), ("i1", GPU, "container-1-request-0")],
    ),
    (
        "a sidecar is long-lived and gets its own request",
        [container("main", {GPU: 1})],
        [container("side", {GPU: 1}, restart_policy="Always")],
        [("container-0-request-0", 1), ("container-1-request-0", 1)],
        [("side", GPU, "container-0-request-0"), ("main", GPU, "container-1-request-0")],
    ),
    (
        "an init container after a sidecar reuses the sidecar only if it comes later",
        [container("main", {GPU: 1})],
        [container("side", {GPU: 1}, restart_policy="Always"), container("init", {GPU: 1})],
        [("container-0-request-0", 1), ("container-2-request-0", 1)],
        [
            ("side", GPU, "container-0-request-0"),
            ("main", GPU, "container-2-request-0"),
            ("init", GPU, "container-2-request-0"),
        ],
    ),
    (
        "a non-integer quantity makes no request",
        [container("c0", {GPU: "500m"})],
        [],
        [],
        [],
    ),
]


@pytest.mark.parametrize(
    ("name", "containers", "init", "requests", "mappings"), CASES, ids=[c[0] for c in CASES]
)
def test_requests_and_mappings_follow_upstream(
    name: str,
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]],
    requests: list[tuple[str, int]],
    mappings: list[tuple[str, str, str]],
) -> None:
    outcome = _synth(pod("p", containers=containers, init=init or None))
    if not requests:
        assert outcome.claim is None and outcome.reason is None
        return
    assert _requests(outcome) == requests
    assert _mappings(outcome) == mappings


def test_requests_of_several_resources_are_sorted_by_name() -> None:
    nic = gpu_class("nic", resource="example.com/nic.5g", shares=None)
    p = pod("p", containers=[container("c1", {GPU: 1}), container("c0", {"example.com/nic.5g": 1})])
    outcome = _synth(p, classes=[gpu_class(), nic])
    assert [r.name for r in outcome.claim.spec.devices.requests] == [
        "container-0-request-0",
        "container-1-request-0",
    ]
    assert [r.exactly.device_class_name for r in outcome.claim.spec.devices.requests] == [GPU_CLASS, "nic"]


def test_synthesized_claim_has_upstream_shape() -> None:
    claim = _synth(pod("train", {GPU: 1}, namespace="ml")).claim
    meta = claim.to_api()["metadata"]
    assert meta["generateName"] == "train-extended-resources-"
    assert meta["namespace"] == "ml"
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "train",
            "uid": "uid-train",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    exactly = claim.to_api()["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == GPU_CLASS and exactly["allocationMode"] == "ExactCount"


def test_pod_status_maps_containers_to_requests() -> None:
    outcome = _synth(pod("p", {GPU: 1}))
    assert outcome.status("p-extended-resources-abcde").to_api() == {
        "requestMappings": [
            {"containerName": "main", "resourceName": GPU, "requestName": "container-0-request-0"}
        ],
        "resourceClaimName": "p-extended-resources-abcde",
    }


def test_class_capacity_is_copied_onto_every_request() -> None:
    p = pod("p", containers=[container("a", {GPU: 3}), container("b", {GPU: 1})])
    for r in _synth(p).claim.spec.devices.requests:
        assert r.exactly.capacity.requests == {"shares": Quantity.parse("1")}


def test_count_above_one_means_that_many_allocations_of_the_class_capacity() -> None:
    r = _synth(pod("p", {GPU: 3})).claim.spec.devices.requests[0]
    assert r.exactly.count == 3 and r.exactly.capacity.requests == {"shares": Quantity.parse("1")}


def test_capacity_is_a_deep_copy_of_the_class() -> None:
    dc = gpu_class()
    r = _synth(pod("p", {GPU: 1}), classes=[dc]).claim.spec.devices.requests[0]
    r.exactly.capacity.requests["shares"] = Quantity.parse("4")
    original = dc.spec.extended_resource_capacity_requests
    assert original is not None and original.requests == {"shares": Quantity.parse("1")}


def test_annotation_carrier_reaches_the_request() -> None:
    dc = gpu_class(shares=None, annotation='{"requests": {"shares": "2"}}')
    r = _synth(pod("p", {GPU: 1}), classes=[dc]).claim.spec.devices.requests[0]
    assert r.exactly.capacity.requests == {"shares": Quantity.parse("2")}


@pytest.mark.parametrize(
    ("carrier", "field"),
    [
        ("field", "spec.extendedResourceCapacityRequests.requests[shares]"),
        ("annotation", "metadata.annotations[dra-capacity.io/extended-resource-capacity-requests]"),
    ],
)
def test_an_invalid_capacity_that_escaped_the_webhook_is_re_validated_not_shared_without_limit(
    carrier: str, field: str
) -> None:
    dc = (
        gpu_class(shares="0")
        if carrier == "field"
        else gpu_class(shares=None, annotation='{"requests": {"shares": "0"}}')
    )
    outcome = _synth(pod("p", {GPU: 1}), classes=[dc])
    assert outcome.claim is None
    assert outcome.reason == (
        f"extended resource {GPU}: device class {GPU_CLASS}: {field}: "
        'Invalid value: "0": must be greater than zero'
    )


def test_class_without_capacity_requests_whole_devices() -> None:
    r = _synth(pod("p", {GPU: 1}), classes=[gpu_class(shares=None)]).claim.spec.devices.requests[0]
    assert r.exactly.capacity is None


def test_capacity_gate_off_makes_the_class_unsatisfiable_not_a_whole_device() -> None:
    outcome = _synth(pod("p", {GPU: 1}), gates=GATES.with_overrides(DRAExtendedResourceCapacity=False))
    assert outcome.claim is None
    assert outcome.reason == (
        f"extended resource {GPU}: device class {GPU_CLASS} requests capacity per allocation "
        "(extendedResourceCapacityRequests), but the DRAExtendedResourceCapacity feature is disabled"
    )


def test_capacity_gate_off_leaves_classes_without_capacity_alone() -> None:
    gates = GATES.with_overrides(DRAExtendedResourceCapacity=False)
    outcome = _synth(pod("p", {GPU: 1}), gates=gates, classes=[gpu_class(shares=None)])
    assert outcome.claim is not None and outcome.reason is None


def test_device_plugin_node_needs_no_claim() -> None:
    outcome = _synth(pod("p", {GPU: 1}), on=node("dp", {GPU: 4}))
    assert outcome.claim is None and outcome.reason is None


def test_unmapped_resource_the_node_lacks_cannot_fit() -> None:
    outcome = _synth(pod("p", {"example.com/fpga": 1}))
    assert outcome.claim is None and outcome.reason == REASON_CANNOT_FIT


def test_dra_extended_resource_off_synthesizes_nothing() -> None:
    outcome = _synth(pod("p", {GPU: 1}), gates=GATES.with_overrides(DRAExtendedResource=False))
    assert outcome.claim is None and outcome.reason is None


# Upstream's Test_createRequestsAndMappings_requests, ported case by case (container names as st.MakePod's).
E = "example.com/gpu"
UPSTREAM_CLASSES = {"class": E, "class1": E + "1", "classInit": E + "init"}


def _upstream_pod(
    containers: list[dict[str, int]], init: list[tuple[dict[str, int], bool]] | None = None
) -> Any:
    regular = [container(f"con{i}", r) for i, r in enumerate(containers)]
    inits = [
        container(f"{'sidecar' if side else 'init'}-con{i}", r, restart_policy="Always" if side else None)
        for i, (r, side) in enumerate(init or [])
    ]
    return pod("pod", containers=regular, init=inits or None)


UPSTREAM_CASES: list[tuple[str, Any, list[str], list[str], list[tuple[str, str, int]]]] = [
    ("nil", _upstream_pod([{E: 1, E + "1": 2}]), [], ["class"], []),
    (
        "one resource match",
        _upstream_pod([{E: 1, E + "1": 2}]),
        [E],
        ["class"],
        [("container-0-request-0", "class", 1)],
    ),
    (
        "one resource match, one resource not match",
        _upstream_pod([{E: 1, E + "1": 2}]),
        [E, E + "1"],
        ["class"],
        [("container-0-request-0", "class", 1)],
    ),
    (
        "two resources match",
        _upstream_pod([{E: 1, E + "1": 2}]),
        [E, E + "1"],
        ["class", "class1"],
        [("container-0-request-0", "class", 1), ("container-0-request-1", "class1", 2)],
    ),
    (
        "two containers match",
        _upstream_pod([{E: 1}, {E + "1": 2}]),
        [E, E + "1"],
        ["class", "class1"],
        [("container-0-request-0", "class", 1), ("container-1-request-0", "class1", 2)],
    ),
    (
        "one init container, one regular container",
        _upstream_pod([{E: 1}], [({E + "init": 2}, False)]),
        [E, E + "init"],
        ["class", "classInit"],
        [("container-0-request-0", "classInit", 2), ("container-1-request-0", "class", 1)],
    ),
    (
        "two init containers, one regular container",
        _upstream_pod([{E: 1}], [({E + "init": 1}, False), ({E + "init": 2}, False)]),
        [E, E + "init"],
        ["class", "classInit"],
        [("container-1-request-0", "classInit", 2), ("container-2-request-0", "class", 1)],
    ),
    (
        "three init containers, one sidecar, one regular container",
        _upstream_pod(
            [{E: 1}], [({E + "init": 1}, False), ({E + "init": 1}, True), ({E + "init": 2}, False)]
        ),
        [E, E + "init"],
        ["class", "classInit"],
        [
            ("container-1-request-0", "classInit", 1),
            ("container-2-request-0", "classInit", 2),
            ("container-3-request-0", "class", 1),
        ],
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "resources", "classes", "want"), UPSTREAM_CASES, ids=[c[0] for c in UPSTREAM_CASES]
)
def test_upstream_create_requests_and_mappings_requests(
    name: str, p: Any, resources: list[str], classes: list[str], want: list[tuple[str, str, int]]
) -> None:
    dcs = [gpu_class(c, resource=UPSTREAM_CLASSES[c], shares=None) for c in classes]
    outcome = synthesize_for_resources(p, sorted(resources), ExtendedResourceResolver(dcs, GATES), GATES)
    claim = outcome.claim.to_api() if outcome.claim is not None else {"spec": {"devices": {"requests": []}}}
    got = [
        (r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"])
        for r in claim["spec"]["devices"]["requests"]
    ]
    assert got == want


IMPLICIT = "deviceclass.resource.kubernetes.io/classInit"
ALL_UPSTREAM = [E, E + "1", E + "init", IMPLICIT]

# Upstream's Test_createRequestsAndMappings_mappings: (container, resource, request), sorted like that test.
UPSTREAM_MAPPING_CASES: list[tuple[str, Any, list[tuple[str, str, str]]]] = [
    (
        "one container, two requests",
        _upstream_pod([{E: 1, E + "1": 2}]),
        [("con0", E, "container-0-request-0"), ("con0", E + "1", "container-0-request-1")],
    ),
    (
        "one container, one explicit and one implicit request",
        _upstream_pod([], [({E + "init": 1, IMPLICIT: 2}, False)]),
        [
            ("init-con0", IMPLICIT, "container-0-request-0"),
            ("init-con0", E + "init", "container-0-request-1"),
        ],
    ),
    (
        "two containers, two requests",
        _upstream_pod([{E: 1}, {E + "1": 2}]),
        [("con0", E, "container-0-request-0"), ("con1", E + "1", "container-1-request-0")],
    ),
    (
        "one init container, one regular container, one request",
        _upstream_pod([{E: 1}], [({E + "init": 2}, False)]),
        [("init-con0", E + "init", "container-0-request-0"), ("con0", E, "container-1-request-0")],
    ),
    (
        "three containers (two are init container), two requests",
        _upstream_pod([{E: 1}], [({E + "init": 1}, False), ({E + "init": 2}, False)]),
        [
            ("init-con0", E + "init", "container-1-request-0"),
            ("init-con1", E + "init", "container-1-request-0"),
            ("con0", E, "container-2-request-0"),
        ],
    ),
    (
        "three containers (two are init container), both explicit and implicit resources",
        _upstream_pod([{E: 1}], [({E + "init": 1}, False), ({IMPLICIT: 2}, False)]),
        [
            ("init-con0", E + "init", "container-0-request-0"),
            ("init-con1", IMPLICIT, "container-1-request-0"),
            ("con0", E, "container-2-request-0"),
        ],
    ),
    (
        "four containers (two are init container, one sidecar), three requests",
        _upstream_pod(
            [{E: 1}], [({E + "init": 1}, False), ({E + "init": 1}, True), ({E + "init": 2}, False)]
        ),
        [
            ("init-con0", E + "init", "container-1-request-0"),
            ("sidecar-con1", E + "init", "container-1-request-0"),
            ("init-con2", E + "init", "container-2-request-0"),
            ("con0", E, "container-3-request-0"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("name", "p", "want"), UPSTREAM_MAPPING_CASES, ids=[c[0] for c in UPSTREAM_MAPPING_CASES]
)
def test_upstream_create_requests_and_mappings_mappings(
    name: str, p: Any, want: list[tuple[str, str, str]]
) -> None:
    dcs = [gpu_class(c, resource=r, shares=None) for c, r in UPSTREAM_CLASSES.items()]
    resolver = ExtendedResourceResolver(dcs, GATES)
    requested = {r for c in p.all_containers() for r in (c.resources.requests or {})}
    outcome = synthesize_for_resources(p, sorted(requested & set(ALL_UPSTREAM)), resolver, GATES)
    got = sorted(_mappings(outcome), key=lambda m: (m[2], m[0]))
    assert got == want


def test_a_claim_for_another_pod_of_the_shape_is_the_one_synthesis_makes_for_it() -> None:
    """Placement builds a bound pod's claim from the one its shape's evaluation allocated for (for_pod):
    the same requests and mappings as synthesizing for that pod, with its own metadata."""
    from allocator.scheduling.synthesis import for_pod

    resolver = ExtendedResourceResolver([gpu_class()], GATES)
    first, second = (pod(name, {GPU: 2}) for name in ("first", "second"))
    direct = synthesize_for_resources(second, [GPU], resolver, GATES)
    derived = for_pod(synthesize_for_resources(first, [GPU], resolver, GATES), second)
    assert derived.claim is not None and direct.claim is not None
    assert derived.claim.to_api() == direct.claim.to_api()
    assert _mappings(derived) == _mappings(direct)
    assert derived.claim.metadata.generate_name == "second-extended-resources-"
