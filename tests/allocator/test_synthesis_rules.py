"""Claim synthesis rules the upstream-shaped tables in test_synthesis.py leave open: a malformed annotation
carrier makes the class unusable (never "nothing needs DRA"), init containers reuse several requests, equal
init requests keep the first, an empty capacity map, what counts as a DRA scalar, and a Node without
status."""

from __future__ import annotations

from typing import Any

from allocator.scheduling.synthesis import (
    IN_MEMORY_CLAIM_NAME,
    REASON_CANNOT_FIT,
    ExtendedOutcome,
    dra_resources_on_node,
    scalar_requests,
    synthesize_claim,
    synthesize_for_resources,
)
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass
from resourceapi.capacity_requests import ANNOTATION
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity

GATES = FeatureGates.defaults()
GPU = "nvidia.com/gpu.shared"
CLASS = "gpu-shared"


def _container(name: str, requests: dict[str, Any], sidecar: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": {k: str(v) for k, v in requests.items()}}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def _pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> Pod:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    return Pod.model_validate(
        {"metadata": {"name": "p", "namespace": "default", "uid": "uid-p"}, "spec": spec}
    )


def _node(status: dict[str, Any] | None = None) -> Node:
    body: dict[str, Any] = {"metadata": {"name": "n1"}}
    if status is not None:
        body["status"] = status
    return Node.model_validate(body)


def _class(spec: dict[str, Any] | None = None, annotation: str | None = None) -> DeviceClass:
    meta: dict[str, Any] = {"name": CLASS}
    if annotation is not None:
        meta["annotations"] = {ANNOTATION: annotation}
    return DeviceClass.model_validate(
        {"metadata": meta, "spec": {"extendedResourceName": GPU, **(spec or {})}}
    )


def _synth(p: Pod, dc: DeviceClass | None = None, on: Node | None = None) -> ExtendedOutcome:
    resolver = ExtendedResourceResolver([dc if dc is not None else _class()], GATES)
    return synthesize_claim(
        p, on if on is not None else _node({"allocatable": {"cpu": "4"}}), resolver, GATES
    )


def _requests(outcome: ExtendedOutcome) -> list[tuple[str, int | None]]:
    assert outcome.claim is not None
    reqs = outcome.claim.spec.devices.requests or []
    return [(r.name, r.exactly.count if r.exactly is not None else None) for r in reqs]


def _mappings(outcome: ExtendedOutcome) -> list[tuple[str, str]]:
    return [(m.container_name, m.request_name) for m in outcome.mappings]


def test_malformed_annotation_carrier_makes_the_node_unusable_with_the_carrier_error() -> None:
    """A class whose carrier cannot be parsed must not read as "nothing needs DRA": the pod would then be
    placed without a device. The outcome names the resource, the class and the carrier's field error."""
    dc = _class(annotation='{"requests": {"shares": "0"}}')
    outcome = _synth(_pod([_container("main", {GPU: 1})]), dc)
    assert outcome.claim is None
    assert outcome.reason == (
        f"extended resource {GPU}: device class {CLASS}: "
        f'metadata.annotations[{ANNOTATION}]: Invalid value: "0": must be greater than zero'
    )


def test_init_container_covered_by_several_later_requests_makes_no_request_of_its_own() -> None:
    """Two regular containers of one GPU each cover an init container of two: it maps to both, no new one."""
    p = _pod([_container("a", {GPU: 1}), _container("b", {GPU: 1})], init=[_container("init", {GPU: 2})])
    outcome = _synth(p)
    assert _requests(outcome) == [("container-1-request-0", 1), ("container-2-request-0", 1)]
    assert _mappings(outcome) == [
        ("a", "container-1-request-0"),
        ("b", "container-2-request-0"),
        ("init", "container-1-request-0"),
        ("init", "container-2-request-0"),
    ]


def test_init_container_partly_covered_by_several_requests_asks_for_the_rest() -> None:
    """Reused counts add up: two regular containers of one GPU each leave one GPU of an init container's
    three to its own request."""
    p = _pod([_container("a", {GPU: 1}), _container("b", {GPU: 1})], init=[_container("init", {GPU: 3})])
    outcome = _synth(p)
    assert _requests(outcome) == [
        ("container-0-request-0", 1),
        ("container-1-request-0", 1),
        ("container-2-request-0", 1),
    ]


def test_equal_init_requests_keep_the_first_as_upstream_does() -> None:
    p = _pod([], init=[_container("i0", {GPU: 2}), _container("i1", {GPU: 2})])
    outcome = _synth(p)
    assert _requests(outcome) == [("container-0-request-0", 2)]
    assert _mappings(outcome) == [("i0", "container-0-request-0"), ("i1", "container-0-request-0")]


def test_class_with_empty_capacity_requests_synthesizes_an_empty_capacity() -> None:
    """`extendedResourceCapacityRequests: {}` is set (not a whole device): each request carries `{}`."""
    outcome = _synth(_pod([_container("main", {GPU: 1})]), _class({"extendedResourceCapacityRequests": {}}))
    assert outcome.claim is not None
    [request] = outcome.claim.to_api()["spec"]["devices"]["requests"]
    assert request["exactly"]["capacity"] == {}


def test_class_with_an_empty_requests_map_synthesizes_an_empty_map() -> None:
    dc = _class({"extendedResourceCapacityRequests": {"requests": {}}})
    outcome = _synth(_pod([_container("main", {GPU: 1})]), dc)
    assert outcome.claim is not None
    [request] = outcome.claim.spec.devices.requests or []
    assert request.exactly is not None and request.exactly.capacity is not None
    assert request.exactly.capacity.requests == {}


def test_cpu_memory_and_zero_requests_are_not_dra_scalars() -> None:
    p = _pod(
        [
            _container("main", {"cpu": "1", "memory": "1Gi", GPU: "1500m", "example.com/fpga": 0}),
            _container("side", {"ephemeral-storage": "1Gi", "hugepages-2Mi": "2Mi"}),
        ]
    )
    assert scalar_requests(p) == {GPU: 2}


def test_pod_with_only_zero_extended_requests_needs_nothing() -> None:
    outcome = _synth(_pod([_container("main", {"cpu": "1", GPU: 0})]))
    assert outcome.claim is None and outcome.reason is None


def test_node_without_status_has_every_mapped_resource_provided_by_dra() -> None:
    outcome = _synth(_pod([_container("main", {GPU: 1})]), on=_node())
    assert _requests(outcome) == [("container-0-request-0", 1)]


def test_node_with_the_resource_allocatable_is_left_to_the_device_plugin() -> None:
    outcome = _synth(_pod([_container("main", {GPU: 1})]), on=_node({"allocatable": {GPU: "2"}}))
    assert outcome.claim is None and outcome.reason is None


def test_resources_no_class_maps_are_skipped() -> None:
    resolver = ExtendedResourceResolver([_class()], GATES)
    p = _pod([_container("main", {GPU: 1, "example.com/fpga": 1})])
    outcome = synthesize_for_resources(p, ["example.com/fpga", GPU], resolver, GATES)
    assert _requests(outcome) == [("container-0-request-1", 1)]


def test_the_in_memory_claim_carries_upstreams_placeholder_name() -> None:
    """Upstream names the not-yet-created claim `<extended-resources>` (invalid on purpose); the API server
    replaces it with one generated from generateName."""
    outcome = _synth(_pod([_container("main", {GPU: 1})]))
    assert outcome.claim is not None
    assert outcome.claim.metadata.name == IN_MEMORY_CLAIM_NAME == "<extended-resources>"
    assert outcome.claim.metadata.generate_name == "p-extended-resources-"


def test_dra_resources_on_node_are_the_pods_counts_of_what_dra_must_provide() -> None:
    resolver = ExtendedResourceResolver([_class()], GATES)
    scalars = {GPU: 3, "example.com/fpga": 1}
    assert dra_resources_on_node(scalars, None, resolver) == ({}, REASON_CANNOT_FIT)
    assert dra_resources_on_node({GPU: 3}, None, resolver) == ({GPU: 3}, None)
    zero = {GPU: Quantity.parse("0"), "example.com/fpga": Quantity.parse("2")}
    assert dra_resources_on_node(scalars, zero, resolver) == ({GPU: 3}, None)
