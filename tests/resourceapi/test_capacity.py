"""Consumed capacity per request policy, policy violations and name normalization (kubernetes/kubernetes
staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating/consumable_capacity.go).

Ported from upstream's consumable_capacity_test.go beside it, plus exact fractional arithmetic and newer
upstream's name normalization (structured/internal/experimental/consumable_capacity.go); both are in
docs/divergences.md.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.quantities import q

from resourceapi.api.resource_v1 import DeviceCapacity
from resourceapi.capacity import (
    CapacityNameConflict,
    compute_consumption,
    consumed_amount,
    fits,
    normalize_requests,
    violates_policy,
)
from resourceapi.capacity import capacity_entry as entry_of


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


def test_a_policy_with_only_a_default_consumes_the_default_or_the_request() -> None:
    entry = cap("10", {"default": "2"})
    assert consumed_amount(None, entry) == q("2")
    assert consumed_amount(q("3"), entry) == q("3")
    assert not violates_policy(q("2"), entry.policy)
    assert not violates_policy(q("3"), entry.policy)


def test_a_range_min_off_the_step_grid_rounds_from_the_min() -> None:
    """min 1, step 4: the grid is 1, 5, 9 ...; a request of 3 consumes 5, one of 5 consumes 5."""
    entry = cap("10", {"validRange": {"min": "1", "step": "4"}})
    assert consumed_amount(q("3"), entry) == q("5")
    assert consumed_amount(q("5"), entry) == q("5")
    assert consumed_amount(q("6"), entry) == q("9")
    assert violates_policy(q("3"), entry.policy)
    assert not violates_policy(q("5"), entry.policy)
    assert not violates_policy(q("9"), entry.policy)


@pytest.mark.parametrize(
    ("step", "requested", "consumed"),
    [("1", "2500m", "3"), ("500m", "700m", "1"), ("250m", "1100m", "1250m")],
)
def test_steps_of_one_or_less_still_round_up(step: str, requested: str, consumed: str) -> None:
    entry = cap("10", {"validRange": {"min": "0", "step": step}})
    assert consumed_amount(q(requested), entry) == q(consumed)
    assert violates_policy(q(requested), entry.policy)
    assert not violates_policy(q(consumed), entry.policy)


def test_a_range_without_step_only_bounds_the_amount() -> None:
    entry = cap("10", {"validRange": {"min": "1", "max": "4"}})
    assert consumed_amount(q("2500m"), entry) == q("2500m")
    assert not violates_policy(q("2500m"), entry.policy)
    assert not violates_policy(q("4"), entry.policy)
    assert violates_policy(q("4001m"), entry.policy)


def test_an_empty_set_of_valid_values_constrains_nothing() -> None:
    entry = cap("10", {"validValues": []})
    assert consumed_amount(q("3"), entry) == q("3")
    assert not violates_policy(q("3"), entry.policy)


def test_an_amount_above_the_device_value_is_impossible() -> None:
    assert compute_consumption({"d/c": cap("4", name="c")}, {"d/c": q("5")}) is None
    assert compute_consumption({"d/c": cap("4", name="c")}, {"d/c": q("4")}) is not None


@pytest.mark.parametrize("which", ["committed", "in_flight"])
def test_fits_treats_a_capacity_missing_from_committed_or_in_flight_as_zero(which: str) -> None:
    from fractions import Fraction

    capacity = {"d/a": cap("4", name="a"), "d/b": cap("4", name="b")}
    consumption = compute_consumption(capacity, {"d/a": q("4"), "d/b": q("1")})
    assert consumption is not None
    only_b = {"d/b": Fraction(3)}
    committed, in_flight = (only_b, None) if which == "committed" else (None, only_b)
    assert fits(consumption, capacity, committed, in_flight)
    assert not fits(consumption, capacity, {"d/b": Fraction(3)}, {"d/b": Fraction(1)})
    assert fits(consumption, capacity, {}, {})


def test_a_request_equal_to_the_range_min_is_consumed_as_requested() -> None:
    """Upstream's roundUpRange returns the min only for a request below it; one equal to it (no step) is used
    as it is, in its own spelling."""
    consumed = consumed_amount(q("1Gi"), cap("10Gi", {"validRange": {"min": "1073741824"}}))
    assert str(consumed) == "1Gi"
