"""Consumed capacity per request policy, policy violations and name normalization (kubernetes/kubernetes
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/consumable_capacity.go).

Ported from upstream's consumable_capacity_test.go beside it, plus exact fractional arithmetic and newer
upstream's name normalization (structured/internal/experimental/consumable_capacity.go); both are in
docs/divergences.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from resourceapi.capacity import (
    CapacityNameConflict,
    compute_consumption,
    consumed_amount,
    fits,
    normalize_requests,
    violates_policy,
)
from resourceapi.capacity import capacity_entry as entry_of
from resourceapi.quantity import Quantity
from resourceapi.resource_v1 import DeviceCapacity


def q(s: str) -> Quantity:
    return Quantity.parse(s)


def cap(value: str, policy: dict[str, Any] | None = None, name: str = "capacity-0") -> Any:
    body: dict[str, Any] = {"value": value}
    if policy is not None:
        body["requestPolicy"] = policy
    return entry_of(name, DeviceCapacity.model_validate(body))


CONSUMED_CASES = {
    "empty policy, no request: the value": (None, "1", {}, "1"),
    "no request: the default": (None, "2", {"default": "1", "validRange": {"min": "1"}}, "1"),
    "no request, default in set": (None, "2", {"default": "1", "validValues": ["1"]}, "1"),
    "more than min in range": ("2", "2", {"default": "1", "validRange": {"min": "1"}}, "2"),
    "less than min in range: the min": ("1", "2", {"default": "1", "validRange": {"min": "2"}}, "2"),
    "with step (round up)": ("2", "3", {"default": "1", "validRange": {"min": "1", "step": "2"}}, "3"),
    "with step (no remaining)": ("2", "2", {"default": "1", "validRange": {"min": "1", "step": "1"}}, "2"),
    "valid value in set": ("2", "3", {"default": "1", "validValues": ["1", "2", "3"]}, "2"),
    "set (round up)": ("2", "3", {"default": "1", "validValues": ["1", "3"]}, "3"),
    "larger than set: the request itself": ("3", "3", {"default": "1", "validValues": ["1", "2"]}, "3"),
    "no policy: the request as-is": ("7", "10", None, "7"),
    "range min2 step2: 1 -> 2": (
        "1",
        "4",
        {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
        "2",
    ),
    "range min2 step2: 3 -> 4": (
        "3",
        "4",
        {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
        "4",
    ),
    "range min1 step2: 2 -> 3": ("2", "10", {"validRange": {"min": "1", "step": "2"}}, "3"),
    "fractional step rounds exactly": (
        "1100m",
        "4",
        {"validRange": {"min": "500m", "step": "250m"}},
        "1250m",
    ),
    "binary units round to the step": ("1.5Gi", "80Gi", {"validRange": {"min": "1Gi", "step": "1Gi"}}, "2Gi"),
}


@pytest.mark.parametrize(
    ("requested", "value", "policy", "expected"), CONSUMED_CASES.values(), ids=list(CONSUMED_CASES)
)
def test_consumed_amount_follows_the_request_policy(
    requested: str | None, value: str, policy: dict[str, Any] | None, expected: str
) -> None:
    consumed = consumed_amount(q(requested) if requested else None, cap(value, policy))
    assert consumed == q(expected)


def test_range_rounding_keeps_a_canonical_binary_format() -> None:
    consumed = consumed_amount(q("1.5Gi"), cap("80Gi", {"validRange": {"min": "1Gi", "step": "1Gi"}}))
    assert str(consumed) == "2Gi"


VIOLATION_CASES = {
    "no constraint": ("1", None, False),
    "less than maximum": ("1", {"default": "1", "validRange": {"min": "1", "max": "2"}}, False),
    "more than maximum": ("2", {"default": "1", "validRange": {"min": "1", "max": "1"}}, True),
    "in set": ("1", {"default": "1", "validValues": ["1"]}, False),
    "not in set": ("2", {"default": "1", "validValues": ["1"]}, True),
    "off the step": ("3", {"validRange": {"min": "2", "step": "2"}}, True),
    "default compared by value, not spelling": ("1000m", {"default": "1", "validValues": ["2"]}, False),
    "fractional step multiple": ("750m", {"validRange": {"min": "250m", "step": "250m"}}, False),
}


@pytest.mark.parametrize(
    ("consumed", "policy", "violates"), VIOLATION_CASES.values(), ids=list(VIOLATION_CASES)
)
def test_violates_policy(consumed: str, policy: dict[str, Any] | None, violates: bool) -> None:
    assert violates_policy(q(consumed), cap("10", policy).policy) is violates


def test_consumption_covers_every_device_capacity() -> None:
    capacity = {
        "d/capacity-0": cap("2", {"default": "2", "validRange": {"min": "1"}}, "capacity-0"),
        "d/capacity-1": cap("2", {"default": "1", "validRange": {"min": "1"}}, "capacity-1"),
        "d/dummy": cap("1", None, "dummy"),
    }
    consumption = compute_consumption(capacity, {"d/capacity-0": q("1")})
    assert consumption is not None
    assert consumption.result == {"capacity-0": q("1"), "capacity-1": q("1"), "dummy": q("1")}


def test_consumption_of_an_undefined_capacity_is_impossible() -> None:
    assert compute_consumption({"d/memory": cap("1", name="memory")}, {"d/shares": q("1")}) is None


def test_consumption_violating_the_policy_is_impossible() -> None:
    capacity = {"d/c": cap("10", {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}, "c")}
    assert compute_consumption(capacity, {"d/c": q("6")}) is None


def test_fits_counts_committed_and_in_flight_amounts() -> None:
    from fractions import Fraction

    capacity = {"d/c": cap("4", name="c")}
    consumption = compute_consumption(capacity, {"d/c": q("2")})
    assert consumption is not None
    assert fits(consumption, capacity, {"d/c": Fraction(1)}, {"d/c": Fraction(1)})
    assert not fits(consumption, capacity, {"d/c": Fraction(2)}, {"d/c": Fraction(1)})


def test_unqualified_request_names_are_normalized_under_the_driver() -> None:
    assert normalize_requests({"shares": q("1")}, "gpu.nvidia.com") == {"gpu.nvidia.com/shares": q("1")}


def test_both_spellings_of_one_capacity_are_an_error() -> None:
    with pytest.raises(CapacityNameConflict) as err:
        normalize_requests({"shares": q("1"), "gpu.nvidia.com/shares": q("2")}, "gpu.nvidia.com")
    assert str(err.value) == (
        'capacity "gpu.nvidia.com/shares" requested both as "gpu.nvidia.com/shares" and as "shares"'
    )


def test_same_identifier_under_another_driver_is_another_capacity() -> None:
    normalized = normalize_requests({"shares": q("1"), "gpu.nvidia.com/shares": q("2")}, "example.com")
    assert set(normalized) == {"example.com/shares", "gpu.nvidia.com/shares"}


def test_a_zero_step_is_treated_as_no_step_rather_than_failing() -> None:
    entry = cap("10", {"validRange": {"min": "1", "step": "0"}})
    assert consumed_amount(q("3"), entry) == q("3")
    assert not violates_policy(q("3"), entry.policy)
