"""ExtendedResourceResolver: the DeviceClass behind an extended resource and the KEP-6406 capacity it asks."""

from __future__ import annotations

import pytest
from support.workloads import GPU_SHARED, gpu_class

from resourceapi.extended import (
    CapacityCarrierError,
    ExtendedResourceResolver,
    class_capacity_requests,
    is_dra_extended_resource_name,
    parse_capacity_annotation,
)
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity

GATES = FeatureGates.defaults()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nvidia.com/gpu.shared", True),
        ("example.com/nic.5g", True),
        ("deviceclass.resource.kubernetes.io/gpu", True),
        ("cpu", False),
        ("memory", False),
        ("kubernetes.io/something", False),
        ("requests.example.com/x", False),
    ],
)
def test_dra_extended_resource_names_follow_upstream(name: str, expected: bool) -> None:
    assert is_dra_extended_resource_name(name) is expected


def test_implicit_name_resolves_to_its_class() -> None:
    resolver = ExtendedResourceResolver([gpu_class("gpu-a", resource=None)], GATES)
    resolved = resolver.resolve("deviceclass.resource.kubernetes.io/gpu-a")
    assert resolved is not None and resolved.name == "gpu-a"


def test_extended_resource_name_resolves_to_its_class() -> None:
    resolver = ExtendedResourceResolver([gpu_class("gpu-a")], GATES)
    resolved = resolver.resolve(GPU_SHARED)
    assert resolved is not None and resolved.name == "gpu-a"


def test_newer_class_wins_a_shared_name() -> None:
    older = gpu_class("a-older", created="2026-01-01T00:00:00Z")
    newer = gpu_class("z-newer", created="2026-02-01T00:00:00Z")
    resolved = ExtendedResourceResolver([older, newer], GATES).resolve(GPU_SHARED)
    assert resolved is not None and resolved.name == "z-newer"


def test_equal_timestamps_go_to_the_smaller_name() -> None:
    resolved = ExtendedResourceResolver([gpu_class("b"), gpu_class("a")], GATES).resolve(GPU_SHARED)
    assert resolved is not None and resolved.name == "a"


def test_losing_class_keeps_its_implicit_name() -> None:
    older = gpu_class("older", created="2025-01-01T00:00:00Z")
    resolver = ExtendedResourceResolver([older, gpu_class("newer")], GATES)
    resolved = resolver.resolve("deviceclass.resource.kubernetes.io/older")
    assert resolved is not None and resolved.name == "older"


def test_nothing_resolves_with_dra_extended_resource_off() -> None:
    gates = GATES.with_overrides(DRAExtendedResource=False)
    resolver = ExtendedResourceResolver([gpu_class()], gates)
    assert resolver.resolve(GPU_SHARED) is None
    assert not resolver.enabled


def test_unmapped_name_does_not_resolve() -> None:
    assert ExtendedResourceResolver([gpu_class()], GATES).resolve("example.com/other") is None


@pytest.mark.parametrize(
    ("allocatable", "delegated"),
    [(None, True), ({}, True), ({GPU_SHARED: "0"}, True), ({GPU_SHARED: "4"}, False)],
)
def test_device_plugin_serves_a_name_the_node_has_allocatable_for(
    allocatable: dict[str, str] | None, delegated: bool
) -> None:
    resolver = ExtendedResourceResolver([gpu_class()], GATES)
    alloc = None if allocatable is None else {k: Quantity.parse(v) for k, v in allocatable.items()}
    assert resolver.delegated_to_dra(GPU_SHARED, alloc) is delegated


def test_field_carries_the_capacity() -> None:
    req = class_capacity_requests(gpu_class(shares="2"))
    assert req is not None and req.requests == {"shares": Quantity.parse("2")}


def test_annotation_carries_the_capacity_when_the_field_is_absent() -> None:
    dc = gpu_class(shares=None, annotation='{"requests": {"bandwidth": "5Gi"}}')
    req = class_capacity_requests(dc)
    assert req is not None and req.requests == {"bandwidth": Quantity.parse("5Gi")}


def test_field_wins_over_the_annotation() -> None:
    dc = gpu_class(shares="1", annotation='{"requests": {"shares": "3"}}')
    req = class_capacity_requests(dc)
    assert req is not None and req.requests == {"shares": Quantity.parse("1")}


def test_class_without_either_carries_no_capacity() -> None:
    assert class_capacity_requests(gpu_class(shares=None)) is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", 'Invalid value: "{": error parsing data as JSON: unexpected end of JSON input'),
        ('["x"]', 'Invalid value: "[\\"x\\"]": must be a valid JSON object'),
        ('{"requests": {"shares": "abc"}}', 'Invalid value: "abc": quantities must match'),
        ('{"requests": {"shares": "0"}}', 'Invalid value: "0": must be greater than zero'),
    ],
)
def test_malformed_annotation_is_an_error_naming_the_annotation(raw: str, message: str) -> None:
    """The allocator reports the webhook's error for a carrier: one parser, resourceapi.capacity_requests."""
    with pytest.raises(CapacityCarrierError) as exc:
        parse_capacity_annotation(raw)
    assert "metadata.annotations[dra-capacity.io/extended-resource-capacity-requests]" in str(exc.value)
    assert message in str(exc.value)


def test_resolver_records_a_malformed_annotation_instead_of_raising() -> None:
    resolver = ExtendedResourceResolver([gpu_class(shares=None, annotation="{")], GATES)
    resolved = resolver.resolve(GPU_SHARED)
    assert resolved is not None and resolved.carrier_error is not None
