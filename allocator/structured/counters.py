"""Partitionable devices: counter sets per pool, keyed by (driver, pool), as newer upstream (by PoolID):
`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/allocator_experimental.go`.

Available counters = counter-set totals minus what committed devices of the pool consume (all slices of the
pool, also those not targeting the node). In-flight consumption of one `allocate` call is tracked
separately and every charge is undone explicitly on rejection or backtrack.
"""

from __future__ import annotations

from fractions import Fraction

from allocator.structured.ids import PoolID
from allocator.structured.pools import DeviceRecord, Pool
from allocator.structured.state import CommittedState

CounterTotals = dict[str, dict[str, Fraction]]  # counter set -> counter -> amount


def available_counters(pool: Pool, state: CommittedState) -> CounterTotals:
    """Counter-set totals minus the consumption of committed devices (may go negative: nothing available)."""
    available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
    for device in pool.all_devices():
        if not device.consumes or not state.is_allocated(device.id):
            continue
        for set_name, counters in device.consumes:
            target = available.get(set_name)
            if target is None:
                continue
            for counter, amount in counters.items():
                if counter in target:
                    target[counter] -= amount
    return available


class InFlightCounters:
    """Counters consumed by devices chosen in the current search, per pool."""

    __slots__ = ("_consumed",)

    def __init__(self) -> None:
        self._consumed: dict[PoolID, CounterTotals] = {}

    def charge(self, device: DeviceRecord, available: CounterTotals) -> bool:
        """Add the device's consumption; False (nothing changed) if any counter of the pool would overflow."""
        pool_id = device.id.pool_id
        consumed = self._consumed.setdefault(pool_id, {})
        self._add(consumed, device, 1)
        for set_name, counters in available.items():
            used = consumed.get(set_name)
            if not used:
                continue
            for counter, have in counters.items():
                if used.get(counter, 0) > have:
                    self._add(consumed, device, -1)
                    return False
        return True

    def release(self, device: DeviceRecord) -> None:
        """Undo one successful `charge`."""
        self._add(self._consumed[device.id.pool_id], device, -1)

    @staticmethod
    def _add(consumed: CounterTotals, device: DeviceRecord, sign: int) -> None:
        for set_name, counters in device.consumes:
            target = consumed.setdefault(set_name, {})
            for counter, amount in counters.items():
                target[counter] = target.get(counter, Fraction(0)) + sign * amount
