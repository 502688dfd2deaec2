"""Used and total capacity per extended-resource class and per node, in the unit users think in: pods of one
unit (`nvidia.com/gpu.shared: 1`), kept up to date incrementally.

A DeviceClass with an extended-resource name (KEP-5004) or capacity requests (KEP-6406) is a *unit class*.
On each device its selectors match, one unit is what one synthesized request of the class consumes there
(`resourceapi.capacity.compute_consumption`: the class's requests, rounded by the device's requestPolicy,
and every capacity it does not name at its default or whole), so a device's total is the number of units
its capacities hold (the smallest over its capacities), and its use is the committed consumption in units
(the largest over its capacities). A device that cannot be shared (no `allowMultipleAllocations`, or
DRAConsumableCapacity off) is one unit, used while it is allocated; a shareable one allocated whole is
used up.

`UsageBook` is pure (models in, figures out, no I/O): a change of a class, a slice or an allocation updates
only the devices it touches, and sums per (class, node) and per class are adjusted by the difference, so a
change costs what its devices cost, never a pass over the cluster. The binder's metrics
(`binder/usage_metrics.py`) and `dra-capacity top` both read it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from allocator.structured.cluster import Cluster
from allocator.structured.features import Features
from allocator.structured.ids import DeviceID
from allocator.structured.pools import DeviceRecord, SliceRecord
from allocator.structured.state import CommittedState
from resourceapi.api.resource_v1 import AllocationResult, DeviceClass, ResourceSlice
from resourceapi.capacity import CapacityNameConflict, compute_consumption, normalize_requests
from resourceapi.extended import IMPLICIT_PREFIX, CapacityCarrierError, class_capacity_requests
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Quantity

SHARED_NODE = ""
"""The node key of devices no single node owns (slices for all nodes or selected by node labels)."""

ZERO = Fraction(0)


@dataclass(frozen=True, slots=True)
class UnitClass:
    """A class counted in units: its name, the extended resource its pods ask for, the capacity one unit
    requests (empty: the device's default or all of it), or why its capacity cannot be read."""

    name: str
    resource: str
    requests: Mapping[str, Quantity]
    problem: str | None = None

    @classmethod
    def of(cls, model: DeviceClass) -> UnitClass | None:
        """The unit class of a DeviceClass, or None when pods cannot ask for it by an extended resource
        name beyond the implicit one and it requests no capacity (it is no share of anything)."""
        name = model.metadata.name
        try:
            capacity = class_capacity_requests(model)
            problem = None
        except CapacityCarrierError as exc:
            capacity, problem = None, f"device class {name}: {exc}"
        explicit = model.spec.extended_resource_name
        if not explicit and capacity is None and problem is None:
            return None
        requests = dict(capacity.requests or {}) if capacity is not None else {}
        return cls(name, explicit or IMPLICIT_PREFIX + name, requests, problem)


@dataclass(slots=True)
class Figures:
    """Units in total and in use (use may be fractional: a share rounded up by a requestPolicy), and the
    devices behind them."""

    total: int = 0
    used: Fraction | int = 0  # an int while every use is whole (Fraction arithmetic is slow)
    devices: int = 0

    @property
    def free(self) -> Fraction | int:
        return self.total - self.used

    def add(self, total: int, used: Fraction | int, devices: int, sign: int) -> None:
        self.total += sign * total
        self.used += sign * used
        if isinstance(self.used, Fraction) and self.used.denominator == 1:
            self.used = self.used.numerator
        self.devices += sign * devices


@dataclass(frozen=True, slots=True)
class _Contribution:
    node: str
    total: int
    used: Fraction | int


class UsageBook:
    """Per unit class: figures per node and in all; updated per change of a class, a slice or an
    allocation. `on_change(class, node)` is called for every (class, node) whose figures moved."""

    def __init__(
        self,
        gates: FeatureGates,
        *,
        cluster: Cluster | None = None,
        on_change: Callable[[str, str], None] | None = None,
    ) -> None:
        """`cluster`: an allocator core kept up to date by someone else (the headroom engine), whose slice
        records and cached selector results are read instead of building and evaluating them again; without
        one the book keeps its own."""
        self.features = Features.from_gates(gates)
        self._own = cluster is None
        self.cluster = cluster if cluster is not None else Cluster(gates, (), ())
        self._on_change = on_change
        # committed allocations: the shared core's own state (its owner commits there first), else ours
        self.state: CommittedState = self.cluster.state
        self.classes: dict[str, UnitClass] = {}
        self._slices: dict[str, SliceRecord] = {}
        self._devices: dict[DeviceID, DeviceRecord] = {}
        self._contrib: dict[DeviceID, dict[str, _Contribution]] = {}
        self._units: dict[tuple[str, int], tuple[object, int | None, tuple[tuple[str, Fraction], ...]]] = {}
        self.by_class: dict[str, Figures] = {}
        self.by_node: dict[str, dict[str, Figures]] = {}  # class -> node -> figures
        self.generation = 0

    # --- inputs --------------------------------------------------------------------------------------------

    def upsert_class(self, model: DeviceClass) -> None:
        name = model.metadata.name
        self.delete_class(name)
        if self._own:
            self.cluster.upsert_class(model)
        unit = UnitClass.of(model)
        if unit is None:
            return
        self.classes[name] = unit
        self.by_class[name] = Figures()
        self.by_node[name] = {}
        for device in self._devices.values():
            self._set(device, name)
        self.generation += 1

    def delete_class(self, name: str) -> None:
        if self.classes.pop(name, None) is None:
            return
        self._units = {k: v for k, v in self._units.items() if k[0] != name}
        for contributions in self._contrib.values():
            contributions.pop(name, None)
        self.by_class.pop(name, None)
        for node in self.by_node.pop(name, {}):
            self._changed(name, node)
        self.generation += 1

    def upsert_slice(self, model: ResourceSlice) -> None:
        name = model.metadata.name
        if self._own:
            self.cluster.upsert_slice(model)
        record = self.cluster.slice_record(name)
        if record is None or self._slices.get(name) is record:
            return  # unchanged (a resync): the same record
        self._drop_slice(name)
        self._slices[name] = record
        for device in record.devices:
            old = self._devices.get(device.id)
            if old is not None:
                self._forget(old)
            self._devices[device.id] = device
            self._update(device)
        self.generation += 1

    def delete_slice(self, name: str) -> None:
        if self._own:
            self.cluster.delete_slice(name)
        self._drop_slice(name)

    def _drop_slice(self, name: str) -> None:
        record = self._slices.pop(name, None)
        if record is None:
            return
        for device in record.devices:
            if self._devices.get(device.id) is device:
                self._forget(device)
                del self._devices[device.id]
        self.generation += 1

    def add_allocation(self, result: AllocationResult) -> None:
        """A claim's allocation counts from now on (its devices are updated). With a shared core, its owner
        has committed it there already."""
        if self._own:
            self._touched(self.state.add(result, self.features.consumable_capacity))
        else:
            self._touched(_devices(result))

    def remove_allocation(self, result: AllocationResult) -> None:
        if self._own:
            self._touched(self.state.remove(result, self.features.consumable_capacity))
        else:
            self._touched(_devices(result))

    def _touched(self, devices: Iterable[DeviceID]) -> None:
        for dev_id in devices:
            device = self._devices.get(dev_id)
            if device is not None:
                self._update(device)
        self.generation += 1

    # --- reads ---------------------------------------------------------------------------------------------

    def nodes(self) -> set[str]:
        """Every node with a device of a unit class."""
        return {node for per_node in self.by_node.values() for node in per_node}

    def devices_of(self, class_name: str) -> list[tuple[DeviceRecord, str, int, Fraction | int]]:
        """(device, node, units, units used) of every device the class counts (for `top -o wide`)."""
        out = []
        for dev_id, contributions in self._contrib.items():
            c = contributions.get(class_name)
            if c is not None:
                out.append((self._devices[dev_id], c.node, c.total, c.used))
        return out

    # --- bookkeeping ---------------------------------------------------------------------------------------

    def _update(self, device: DeviceRecord) -> None:
        for name in self.classes:
            self._set(device, name)

    def _forget(self, device: DeviceRecord) -> None:
        for name, c in self._contrib.pop(device.id, {}).items():
            self._apply(name, c, -1)

    def _set(self, device: DeviceRecord, class_name: str) -> None:
        new = self._contribution(device, class_name)
        contributions = self._contrib.get(device.id)
        old = contributions.get(class_name) if contributions else None
        if old == new:
            return
        if old is not None:
            self._apply(class_name, old, -1)
            assert contributions is not None
            del contributions[class_name]
            if not contributions:
                del self._contrib[device.id]
        if new is not None:
            self._contrib.setdefault(device.id, {})[class_name] = new
            self._apply(class_name, new, +1)

    def _apply(self, class_name: str, c: _Contribution, sign: int) -> None:
        self.by_class[class_name].add(c.total, c.used, 1, sign)
        per_node = self.by_node[class_name]
        figures = per_node.get(c.node)
        if figures is None:
            figures = per_node[c.node] = Figures()
        figures.add(c.total, c.used, 1, sign)
        if figures.devices == 0:
            del per_node[c.node]
        self._changed(class_name, c.node)

    def _changed(self, class_name: str, node: str) -> None:
        if self._on_change is not None:
            self._on_change(class_name, node)

    def _contribution(self, device: DeviceRecord, class_name: str) -> _Contribution | None:
        """What the device holds for the class, or None when the class does not count it."""
        if not self.cluster.selects(class_name, device):
            return None  # (a selector that fails to compile or evaluate selects nothing here)
        node = device_node(device)
        allocated = self.state.is_allocated(device.id)
        if not (device.allow_multi and self.features.consumable_capacity):
            return _Contribution(node, 1, 1 if allocated else 0)
        total, per_unit = self._units_of(device, class_name)
        if total is None:
            return None  # the device cannot serve one unit (a capacity missing, or a policy refusing it)
        if device.id in self.state.dedicated:
            return _Contribution(node, total, total)
        committed = self.state.aggregated.get(device.id)
        if not per_unit:  # shareable without capacities: one unit, used while it holds a share
            return _Contribution(node, total, 1 if allocated else 0)
        if not committed:
            return _Contribution(node, total, 0)
        used: Fraction | int = 0
        for name, amount in per_unit:
            consumed = committed.get(name)
            if consumed:
                ratio = consumed if amount == 1 else consumed / amount
                if ratio > used:
                    used = ratio
        used = min(used, total)
        if isinstance(used, Fraction) and used.denominator == 1:
            used = used.numerator
        return _Contribution(node, total, used)

    def _units_of(
        self, device: DeviceRecord, class_name: str
    ) -> tuple[int | None, tuple[tuple[str, Fraction], ...]]:
        """`units` of the class on the device, once per distinct capacity map (devices of one model share
        theirs: resourceapi's interning)."""
        capacity = device.capacity
        key = (class_name, id(capacity))
        cached = self._units.get(key)
        if cached is None or cached[0] is not capacity:
            total, per_unit = units(device, self.classes[class_name].requests)
            cached = self._units[key] = (capacity, total, per_unit)
        return cached[1], cached[2]


def units(
    device: DeviceRecord, requests: Mapping[str, Quantity]
) -> tuple[int | None, tuple[tuple[str, Fraction], ...]]:
    """How many units of `requests` the device's capacities hold, and what one unit consumes per capacity
    (normalized names, amounts above zero); (None, ()) when the device cannot serve a unit at all."""
    try:
        normalized = normalize_requests(requests, device.id.driver)
    except CapacityNameConflict:
        return None, ()
    consumption = compute_consumption(device.capacity, normalized)
    if consumption is None:
        return None, ()
    per_unit = tuple((name, amount) for name, amount in consumption.amounts if amount > 0)
    if not per_unit:
        return 1, ()
    total = min(math.floor(device.capacity[name].value / amount) for name, amount in per_unit)
    return total, per_unit


def _devices(result: AllocationResult) -> set[DeviceID]:
    results = result.devices.results if result.devices else None
    return {DeviceID(r.driver, r.pool, r.device) for r in results or () if not r.admin_access}


def device_node(device: DeviceRecord) -> str:
    """The node that owns the device: the slice's node, or the device's own (per-device node selection);
    SHARED_NODE when no single node does."""
    return device.slice.node_name or device.node_name or SHARED_NODE
