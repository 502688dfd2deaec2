"""Consumable capacity (KEP-5075): the amount one allocation consumes per capacity, policy checks and fit.

Exact arithmetic throughout (`Quantity.value` is a Fraction): range rounding uses exact multiples of the step,
also for fractional steps, and the default is compared by value. Capacity names are normalized as in newer
upstream: `shares` on a device of driver `d` is `d/shares`. Upstream:
`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/consumable_capacity.go`;
the differences are listed in docs/divergences.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from resourceapi.api.resource_v1 import DeviceCapacity
from resourceapi.machinery.quantity import Format, Quantity


class CapacityNameConflict(ValueError):
    """One request names a capacity in both spellings (`shares` and `<driver>/shares`)."""


def normalize_name(name: str, driver: str) -> str:
    """`shares` on a device of driver `d` is `d/shares`; a qualified name stays as it is."""
    return name if "/" in name else f"{driver}/{name}"


class CapacityPolicy:
    """A device capacity's requestPolicy (default, validValues or validRange)."""

    __slots__ = ("default", "range_max", "range_min", "range_step", "valid_values")

    def __init__(
        self,
        default: Quantity | None = None,
        valid_values: tuple[Quantity, ...] | None = None,
        range_min: Quantity | None = None,
        range_max: Quantity | None = None,
        range_step: Quantity | None = None,
    ) -> None:
        self.default = default
        self.valid_values = valid_values
        self.range_min = range_min
        self.range_max = range_max
        self.range_step = range_step


class CapacityEntry:
    """One capacity of a device: its own spelling, exact value and policy."""

    __slots__ = ("policy", "quantity", "spelling", "value")

    def __init__(self, spelling: str, quantity: Quantity, policy: CapacityPolicy | None) -> None:
        self.spelling = spelling
        self.quantity = quantity
        self.value: Fraction = quantity.value
        self.policy = policy


def capacity_entry(spelling: str, model: DeviceCapacity) -> CapacityEntry:
    """Convert the API DeviceCapacity into the lean record."""
    policy = None
    rp = model.request_policy
    if rp is not None:
        rng = rp.valid_range
        policy = CapacityPolicy(
            default=rp.default,
            valid_values=tuple(rp.valid_values) if rp.valid_values is not None else None,
            range_min=rng.min if rng is not None else None,
            range_max=rng.max if rng is not None else None,
            range_step=rng.step if rng is not None else None,
        )
    return CapacityEntry(spelling, model.value, policy)


def _quantity(value: Fraction) -> Quantity:
    fmt = Format.BINARY_SI if value.denominator == 1 else Format.DECIMAL_SI
    return Quantity.from_fraction(value, fmt)


def consumed_amount(requested: Quantity | None, entry: CapacityEntry) -> Quantity:
    """Upstream calculateConsumedCapacity, exact: default or value when not requested, else by policy."""
    policy = entry.policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return entry.quantity
    if policy is None:
        return requested
    if policy.range_min is not None:
        low = policy.range_min
        if requested.value < low.value:
            return low
        if policy.range_step is None or policy.range_step.value <= 0:
            return requested  # API validation requires a positive step; a zero step is treated as none
        step = policy.range_step.value
        n = math.ceil((requested.value - low.value) / step)
        rounded = low.value + step * n
        return requested if rounded == requested.value else _quantity(rounded)
    if policy.valid_values is not None:
        for valid in policy.valid_values:
            if requested.value <= valid.value:
                return valid
        return requested
    return requested


def violates_policy(consumed: Quantity, policy: CapacityPolicy | None) -> bool:
    """Upstream violatesPolicy; the default is compared by value, steps exactly."""
    if policy is None:
        return False
    if policy.default is not None and consumed.value == policy.default.value:
        return False
    if policy.range_min is not None:
        if policy.range_max is not None and consumed.value > policy.range_max.value:
            return True
        if policy.range_step is not None and policy.range_step.value > 0:
            return (consumed.value - policy.range_min.value) % policy.range_step.value != 0
        return False
    if policy.valid_values:
        return all(consumed.value != v.value for v in policy.valid_values)
    return False


def normalize_requests(requests: Mapping[str, Quantity], driver: str) -> dict[str, Quantity]:
    """Request capacity names normalized under `driver`; both spellings of one capacity is an error."""
    out: dict[str, Quantity] = {}
    spelled: dict[str, str] = {}
    for name, quantity in requests.items():
        key = normalize_name(name, driver)
        if key in out:
            first, second = sorted((spelled[key], name))
            raise CapacityNameConflict(f'capacity "{key}" requested both as "{first}" and as "{second}"')
        out[key] = quantity
        spelled[key] = name
    return out


class Consumption:
    """What one allocation of a device for one request consumes: exact amounts and the result's map."""

    __slots__ = ("amounts", "result")

    def __init__(self, amounts: tuple[tuple[str, Fraction], ...], result: dict[str, Quantity]) -> None:
        self.amounts = amounts  # (normalized name, amount), every capacity of the device
        self.result = result  # device's own spelling -> consumed quantity (consumedCapacity)


def compute_consumption(
    capacity: Mapping[str, CapacityEntry], requests: Mapping[str, Quantity], *, within_value: bool = True
) -> Consumption | None:
    """Consumed amount per device capacity, or None when the device cannot serve the request at all.

    None when the request names a capacity the device does not define, or a rounded amount violates the policy
    (e.g. above the range's max or above every valid value), or (`within_value`) exceeds the capacity's value
    alone. Remaining capacity is checked by `fits`. The allocator passes `within_value=False`: upstream's
    CmpRequestOverCapacity checks only the sum with the committed amounts, which a negative consumedCapacity
    stored before 1.38's validation lowers (v0.37.2 incubating/consumable_capacity.go).
    """
    for name in requests:
        if name not in capacity:
            return None
    amounts: list[tuple[str, Fraction]] = []
    result: dict[str, Quantity] = {}
    for name, entry in capacity.items():
        consumed = consumed_amount(requests.get(name), entry)
        if violates_policy(consumed, entry.policy):
            return None
        if within_value and consumed.value > entry.value:
            return None
        amounts.append((name, consumed.value))
        result[entry.spelling] = consumed
    return Consumption(tuple(amounts), result)


def fits(
    consumption: Consumption,
    capacity: Mapping[str, CapacityEntry],
    committed: Mapping[str, Fraction] | None,
    in_flight: Mapping[str, Fraction] | None,
) -> bool:
    """committed + consumed + in-flight <= value for every capacity of the device."""
    for name, amount in consumption.amounts:
        total = amount
        if committed:
            total += committed.get(name, 0)
        if in_flight:
            total += in_flight.get(name, 0)
        if total > capacity[name].value:
            return False
    return True
