"""Committed state: what already-allocated claims hold (upstream's AllocatedState), kept incrementally.

Dedicated results mark a device as allocated; results with a shareID add a share and their consumedCapacity
(names normalized under the result's driver); adminAccess results are ignored, as upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from allocator.structured.ids import DeviceID
from resourceapi.api.resource_v1 import AllocationResult, DeviceRequestAllocationResult, ResourceClaim
from resourceapi.capacity import normalize_name


class CommittedState:
    """Dedicated devices, shares and aggregated consumed capacity of all committed allocations."""

    __slots__ = ("aggregated", "dedicated", "share_count", "shares")

    def __init__(self) -> None:
        self.dedicated: dict[DeviceID, int] = {}  # device -> number of dedicated results (normally 1)
        self.shares: set[tuple[DeviceID, str]] = set()
        self.share_count: dict[DeviceID, int] = {}
        self.aggregated: dict[DeviceID, dict[str, Fraction]] = {}

    def add_claims(self, claims: Iterable[ResourceClaim], consumable_capacity: bool) -> set[DeviceID]:
        """Add the allocations of all allocated claims; returns the devices touched."""
        touched: set[DeviceID] = set()
        for claim in claims:
            allocation = claim.status.allocation if claim.status else None
            if allocation is not None:
                touched |= self.add(allocation, consumable_capacity)
        return touched

    def add(self, allocation: AllocationResult, consumable_capacity: bool) -> set[DeviceID]:
        return self._apply(allocation, consumable_capacity, +1)

    def remove(self, allocation: AllocationResult, consumable_capacity: bool) -> set[DeviceID]:
        return self._apply(allocation, consumable_capacity, -1)

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
