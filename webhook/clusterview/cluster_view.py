"""What the cluster publishes, as the admission warnings read it: devices of every ResourceSlice and the
DeviceClasses, in one immutable snapshot.

A `ClusterView` is built off the admission path (by the informer, or from a dump for `validate --cluster`)
and replaced whole when something changes, so admission reads it without locks. Two caches keep a warning
cheap on a large cluster:

* a `ViewCache`, shared by the views one informer builds, keeps each slice's device records and each
  selector's results per (expression, slice, slice resourceVersion): a republished slice costs only its own
  devices, not the cluster's;
* devices are folded into groups of identical capacity (a node of 8 GPUs of one model is one group), and a
  selector's matches are a bit mask over the devices, so combining selectors and finding the groups they
  match costs a few integer operations, whatever the number of devices.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from resourceapi.capacity import CapacityEntry, capacity_entry, normalize_name
from resourceapi.cel import CelRuntimeError, DeviceInput, Selector, device_input

T = TypeVar("T")

SELECTOR_CACHE_ENTRIES = 256
"""Expressions whose combined results one view keeps (LRU)."""
FINDINGS_CACHE_ENTRIES = 1024
"""DeviceClass contents whose findings one view keeps (LRU): a re-applied manifest costs a lookup."""
SLICE_RESULTS_PER_SLICE = 64
"""Expressions whose results the shared cache keeps per slice (LRU)."""


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


@dataclass(frozen=True)
class DeviceGroup:
    """Devices that are alike for the capacity checks: one driver, the same capacities and policies."""

    driver: str
    capacity: Mapping[str, CapacityEntry]
    allow_multiple_allocations: bool
    mask: int  # bit i set: device i of the view is in the group
    count: int


@dataclass(frozen=True)
class SelectorOutcome:
    """A selector against every published device: a bit mask of the matches, and the runtime errors."""

    matches: int
    errors: Mapping[int, str]


@dataclass(frozen=True)
class _SliceRecord:
    devices: tuple[PublishedDevice, ...]
    results: OrderedDict[str, tuple[int, dict[int, str]]]


class ViewCache:
    """Per-slice device records and selector results, shared by successive views of one cluster."""

    def __init__(self) -> None:
        self._slices: dict[tuple[str, str], _SliceRecord] = {}
        self._lock = threading.Lock()

    def record(self, model: ResourceSlice) -> _SliceRecord:
        key = _slice_key(model)
        with self._lock:
            hit = self._slices.get(key) if key is not None else None
        if hit is not None:
            return hit
        record = _SliceRecord(tuple(_devices(model)), OrderedDict())
        if key is not None:
            with self._lock:
                self._slices[key] = record
        return record

    def prune(self, keep: Iterable[ResourceSlice]) -> None:
        """Forget slices that are gone or were replaced (called after each view is built)."""
        live = {k for k in (_slice_key(s) for s in keep) if k is not None}
        with self._lock:
            for key in [k for k in self._slices if k not in live]:
                del self._slices[key]


class ClusterView:
    """An immutable snapshot of the published devices and the DeviceClasses."""

    def __init__(
        self,
        slices: Iterable[ResourceSlice],
        classes: Iterable[DeviceClass],
        generation: int = 0,
        cache: ViewCache | None = None,
    ) -> None:
        self.generation = generation
        ordered = sorted(slices, key=lambda s: s.metadata.name)
        cache = cache or ViewCache()
        self._records = [cache.record(s) for s in ordered]
        cache.prune(ordered)
        self.devices: tuple[PublishedDevice, ...] = tuple(d for r in self._records for d in r.devices)
        self.all_devices = (1 << len(self.devices)) - 1
        self.groups: tuple[DeviceGroup, ...] = _groups(self.devices)
        self.classes: Mapping[str, DeviceClass] = {c.metadata.name: c for c in classes}
        self._results: OrderedDict[str, SelectorOutcome] = OrderedDict()
        self._findings: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per `key` within this view (the findings of one DeviceClass content)."""
        with self._lock:
            if key in self._findings:
                self._findings.move_to_end(key)
                return cast(T, self._findings[key])
        value = compute()
        with self._lock:
            self._findings[key] = value
            while len(self._findings) > FINDINGS_CACHE_ENTRIES:
                self._findings.popitem(last=False)
        return value

    def evaluate(self, expression: str, program: Selector) -> SelectorOutcome:
        """`program` (compiled from `expression`) on every device; cached per expression (and per slice)."""
        with self._lock:
            hit = self._results.get(expression)
            if hit is not None:
                self._results.move_to_end(expression)
                return hit
        matches = 0
        errors: dict[int, str] = {}
        offset = 0
        for record in self._records:
            bits, slice_errors = _slice_outcome(record, expression, program)
            matches |= bits << offset
            errors.update({offset + i: e for i, e in slice_errors.items()})
            offset += len(record.devices)
        outcome = SelectorOutcome(matches, errors)
        with self._lock:
            self._results[expression] = outcome
            while len(self._results) > SELECTOR_CACHE_ENTRIES:
                self._results.popitem(last=False)
        return outcome

    def pending(self, expression: str) -> int:
        """Device evaluations `evaluate(expression, ...)` would still make (0 when its result is cached)."""
        with self._lock:
            if expression in self._results:
                return 0
        return sum(len(r.devices) for r in self._records if expression not in r.results)

    def warm(self, expression: str, program: Selector, budget: int) -> int:
        """Evaluate `program` on the slices whose result is not cached, until about `budget` devices were
        evaluated (a whole slice at a time); the evaluations made. Bounded work that makes a later `evaluate`
        of the same expression cheap."""
        done = 0
        for record in self._records:
            if done >= budget:
                break
            if expression not in record.results:
                _slice_outcome(record, expression, program)
                done += len(record.devices)
        return done


def _slice_outcome(record: _SliceRecord, expression: str, program: Selector) -> tuple[int, dict[int, str]]:
    hit = record.results.get(expression)
    if hit is not None:
        return hit
    bits = 0
    errors: dict[int, str] = {}
    for i, device in enumerate(record.devices):
        try:
            if program.matches(device.cel):
                bits |= 1 << i
        except CelRuntimeError as exc:
            errors[i] = str(exc)
    record.results[expression] = (bits, errors)
    while len(record.results) > SLICE_RESULTS_PER_SLICE:
        record.results.popitem(last=False)
    return bits, errors


def _slice_key(model: ResourceSlice) -> tuple[str, str] | None:
    """A slice's identity across views: name and resourceVersion (None without one: never shared)."""
    version = model.metadata.resource_version
    return (model.metadata.name, version) if version else None


def _devices(model: ResourceSlice) -> Iterable[PublishedDevice]:
    driver = model.spec.driver
    for dev in model.spec.devices or ():
        capacity = {
            normalize_name(name, driver): capacity_entry(name, cap)
            for name, cap in (dev.capacity or {}).items()
        }
        yield PublishedDevice(
            slice_name=model.metadata.name,
            driver=driver,
            pool=model.spec.pool.name,
            name=dev.name,
            cel=device_input(
                driver, dev.attributes or {}, dev.capacity or {}, bool(dev.allow_multiple_allocations)
            ),
            capacity=capacity,
            allow_multiple_allocations=bool(dev.allow_multiple_allocations),
        )


def _groups(devices: Iterable[PublishedDevice]) -> tuple[DeviceGroup, ...]:
    masks: dict[tuple[object, ...], int] = {}
    first: dict[tuple[object, ...], PublishedDevice] = {}
    for i, d in enumerate(devices):
        key = (
            d.driver,
            d.allow_multiple_allocations,
            *sorted((n, _entry_key(e)) for n, e in d.capacity.items()),
        )
        masks[key] = masks.get(key, 0) | (1 << i)
        first.setdefault(key, d)
    return tuple(
        DeviceGroup(first[k].driver, first[k].capacity, first[k].allow_multiple_allocations, m, m.bit_count())
        for k, m in masks.items()
    )


def _entry_key(entry: CapacityEntry) -> tuple[object, ...]:
    p = entry.policy
    policy = (
        None
        if p is None
        else (
            p.default and p.default.value,
            tuple(v.value for v in p.valid_values) if p.valid_values is not None else None,
            p.range_min and p.range_min.value,
            p.range_max and p.range_max.value,
            p.range_step and p.range_step.value,
        )
    )
    return (entry.spelling, entry.value, policy)
