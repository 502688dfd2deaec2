"""Committed state: what already-allocated claims hold (upstream's AllocatedState), kept incrementally.

Dedicated results mark a device as allocated; results with a shareID add a share and their consumedCapacity
(names normalized under the result's driver); adminAccess results are ignored, as upstream does. A claim
with a negative consumedCapacity is remembered with kube-scheduler v1.38's message for it (`invalid`).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from allocator.structured.ids import DeviceID
from allocator.structured.requests import claim_label
from resourceapi.api.resource_v1 import AllocationResult, DeviceRequestAllocationResult, ResourceClaim
from resourceapi.capacity import normalize_name


class CommittedState:
    """Dedicated devices, shares and aggregated consumed capacity of all committed allocations."""

    __slots__ = ("aggregated", "dedicated", "invalid", "share_count", "shares")

    def __init__(self) -> None:
        self.dedicated: dict[DeviceID, int] = {}  # device -> number of dedicated results (normally 1)
        self.shares: set[tuple[DeviceID, str]] = set()
        self.share_count: dict[DeviceID, int] = {}
        self.aggregated: dict[DeviceID, dict[str, Fraction]] = {}
        # committed allocations with a negative consumedCapacity (by their results) -> the error for it
        self.invalid: dict[tuple[tuple[str, str, str, str | None], ...], str] = {}

    def add_claims(self, claims: Iterable[ResourceClaim], consumable_capacity: bool) -> set[DeviceID]:
        """Add the allocations of all allocated claims; returns the devices touched."""
        touched: set[DeviceID] = set()
        for claim in claims:
            allocation = claim.status.allocation if claim.status else None
            if allocation is not None:
                touched |= self.add(allocation, consumable_capacity, claim)
        return touched

    def add(
        self, allocation: AllocationResult, consumable_capacity: bool, claim: ResourceClaim | None = None
    ) -> set[DeviceID]:
        """Count `allocation` (of `claim`, when known: a negative consumedCapacity is remembered for it)."""
        if consumable_capacity and claim is not None:
            message = _negative_consumed(claim, allocation)
            if message is not None:
                self.invalid[_results_key(allocation)] = message
        return self._apply(allocation, consumable_capacity, +1)

    def remove(self, allocation: AllocationResult, consumable_capacity: bool) -> set[DeviceID]:
        if self.invalid:
            self.invalid.pop(_results_key(allocation), None)
        return self._apply(allocation, consumable_capacity, -1)

    def invalid_error(self) -> str | None:
        """kube-scheduler v1.38's `getCapacities` error while some committed claim has a negative
        consumedCapacity (plugins/dynamicresources/allocateddevices.go): the first message in order, and how
        many more claims there are."""
        if not self.invalid:
            return None
        messages = sorted(self.invalid.values())
        if len(messages) > 1:
            return f"{messages[0]} (and {len(messages) - 1} more claims with invalid consumed capacity)"
        return messages[0]

    def _apply(self, allocation: AllocationResult, consumable_capacity: bool, sign: int) -> set[DeviceID]:
        touched: set[DeviceID] = set()
        results = allocation.devices.results if allocation.devices else None
        for result in results or ():
            device = self._apply_result(result, consumable_capacity, sign)
            if device is not None:
                touched.add(device)
        return touched

    def _apply_result(
        self, result: DeviceRequestAllocationResult, consumable_capacity: bool, sign: int
    ) -> DeviceID | None:
        if result.admin_access:
            return None
        device = DeviceID(result.driver, result.pool, result.device)
        if result.share_id is None or not consumable_capacity:
            count = self.dedicated.get(device, 0) + sign
            if count > 0:
                self.dedicated[device] = count
            else:
                self.dedicated.pop(device, None)
            return device
        key = (device, result.share_id)
        if sign > 0:
            if key in self.shares:
                return None  # the same share committed twice (e.g. from a watch replay): count it once
            self.shares.add(key)
        else:
            if key not in self.shares:
                return None
            self.shares.discard(key)
        shares = self.share_count.get(device, 0) + sign
        if shares > 0:
            self.share_count[device] = shares
        else:
            self.share_count.pop(device, None)
        if result.consumed_capacity:
            totals = self.aggregated.setdefault(device, {})
            for name, quantity in result.consumed_capacity.items():
                key_name = normalize_name(name, result.driver)
                totals[key_name] = totals.get(key_name, Fraction(0)) + sign * quantity.value
            if sign < 0 and device not in self.share_count:
                self.aggregated.pop(device, None)
        return device

    def is_allocated(self, device: DeviceID) -> bool:
        """Upstream IsDeviceAllocated: dedicated, or any committed share (counters are paid)."""
        return device in self.dedicated or device in self.share_count or device in self.aggregated

    def has_shares(self, device: DeviceID) -> bool:
        return device in self.share_count or device in self.aggregated


def _results_key(allocation: AllocationResult) -> tuple[tuple[str, str, str, str | None], ...]:
    results = allocation.devices.results if allocation.devices else None
    return tuple((r.driver, r.pool, r.device, r.share_id) for r in results or ())


def _negative_consumed(claim: ResourceClaim, allocation: AllocationResult) -> str | None:
    """v1.38 `consumedCapacityError`: the first negative consumedCapacity of the results in order, names
    sorted within a result."""
    results = allocation.devices.results if allocation.devices else None
    for r in results or ():
        for name in sorted(r.consumed_capacity or {}):
            quantity = (r.consumed_capacity or {})[name]
            if quantity.value < 0:
                device = DeviceID(r.driver, r.pool, r.device)
                return (
                    f'claim {claim_label(claim)}, device {device}: consumed capacity "{name}" must not be '
                    f"negative, got {quantity}"
                )
    return None
