"""What the cluster publishes, as the admission warnings read it: devices of every ResourceSlice and the
DeviceClasses, in one immutable snapshot.

A `ClusterView` is built off the admission path (by the informer, or from a dump for `validate --cluster`)
and replaced whole when something changes, so admission reads it without locks. Selector results are cached
per expression within a view: a view is one generation of the published slices, so the cache key is
(expression, slice generation), and a warning costs microseconds once its selectors have been seen.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from resourceapi.capacity import CapacityEntry, capacity_entry, normalize_name
from resourceapi.cel import CelRuntimeError, DeviceInput, Selector, device_input
from resourceapi.resource_v1 import DeviceClass, ResourceSlice

SELECTOR_CACHE_ENTRIES = 256
"""Expressions whose per-device results a view keeps (LRU); each entry is one small tuple per device."""


@dataclass(frozen=True)
class PublishedDevice:
    """One device of one ResourceSlice, with what the warnings need of it."""

    slice_name: str
    driver: str
    pool: str
    name: str
    cel: DeviceInput
    capacity: Mapping[str, CapacityEntry]  # normalized name -> entry
    allow_multiple_allocations: bool

    @property
    def label(self) -> str:
        """`<driver>/<pool>/<device>`, as upstream names a device in allocation errors."""
        return f"{self.driver}/{self.pool}/{self.name}"


@dataclass(frozen=True)
class SelectorOutcome:
    """A selector against every published device: the indexes it matches, and its runtime errors."""

    matches: frozenset[int]
    errors: Mapping[int, str]


class ClusterView:
    """An immutable snapshot of the published devices and the DeviceClasses."""

    def __init__(
        self, slices: Iterable[ResourceSlice], classes: Iterable[DeviceClass], generation: int = 0
    ) -> None:
        self.generation = generation
        self.devices: tuple[PublishedDevice, ...] = tuple(_devices(slices))
        self.classes: Mapping[str, DeviceClass] = {c.metadata.name: c for c in classes}
        self._results: OrderedDict[str, SelectorOutcome] = OrderedDict()
        self._lock = threading.Lock()

    def evaluate(self, expression: str, program: Selector) -> SelectorOutcome:
        """`program` (compiled from `expression`) on every device, cached per expression."""
        with self._lock:
            hit = self._results.get(expression)
            if hit is not None:
                self._results.move_to_end(expression)
                return hit
        matches: set[int] = set()
        errors: dict[int, str] = {}
        for i, device in enumerate(self.devices):
            try:
                if program.matches(device.cel):
                    matches.add(i)
            except CelRuntimeError as exc:
                errors[i] = str(exc)
        outcome = SelectorOutcome(frozenset(matches), errors)
        with self._lock:
            self._results[expression] = outcome
            while len(self._results) > SELECTOR_CACHE_ENTRIES:
                self._results.popitem(last=False)
        return outcome


def _devices(slices: Iterable[ResourceSlice]) -> Iterable[PublishedDevice]:
    for s in sorted(slices, key=lambda s: s.metadata.name):
        driver = s.spec.driver
        for dev in s.spec.devices or ():
            capacity = {
                normalize_name(name, driver): capacity_entry(name, cap)
                for name, cap in (dev.capacity or {}).items()
            }
            yield PublishedDevice(
                slice_name=s.metadata.name,
                driver=driver,
                pool=s.spec.pool.name,
                name=dev.name,
                cel=device_input(
                    driver, dev.attributes or {}, dev.capacity or {}, bool(dev.allow_multiple_allocations)
                ),
                capacity=capacity,
                allow_multiple_allocations=bool(dev.allow_multiple_allocations),
            )
