"""Lean internal records of slices and devices, and upstream's GatherPools for one node.

The pydantic models are converted once per slice version into `SliceRecord`/`DeviceRecord` (with
__slots__); the search only touches these. Pools per node are gathered by `gather_pools` and cached
by the `Cluster`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from allocator.structured.celfailures import SelectorFailure
from allocator.structured.ids import DeviceID, PoolID
from resourceapi.api.core_v1 import NodeSelector, NodeSelectorRequirement
from resourceapi.api.resource_v1 import (
    Device,
    DeviceCapacity,
    DeviceTaint,
    ResourceSlice,
    ResourceSliceSpec,
)
from resourceapi.capacity import CapacityEntry, capacity_entry, normalize_name

AttributeValue = tuple[str, Any]
"""A device attribute as (type, value): ("string", "a"), ("int", 1), ("bool", True), ("version", "1.0.0"),
("list", frozenset of (type, value)) for list types; ("unknown", None) never matches a constraint."""


class DeviceRecord:
    """One device of one slice version: what the search, selectors and capacity bookkeeping need."""

    __slots__ = (
        "_attributes",
        "all_nodes",
        "allow_multi",
        "binding_conditions",
        "binding_failure_conditions",
        "binds_to_node",
        "capacity",
        "cel_input",
        "class_matches",
        "consumes",
        "consumption",
        "id",
        "name",
        "node_name",
        "node_selector",
        "raw_attributes",
        "request_matches",
        "slice",
        "taints",
    )

    def __init__(self, slice_record: SliceRecord, dev: Device, qualified_wins: bool = False) -> None:
        """The record of device model `dev` of `slice_record`: each slot set once, from the model (a slice's
        devices are most of a cluster's objects). `qualified_wins`: see `build_slice`."""
        self.slice = slice_record
        name = self.name = dev.name
        self.id = DeviceID(slice_record.driver, slice_record.pool, name)
        # The slice model's own map of the API's attribute objects (never modified): CEL reads them as they
        # are (resourceapi/cel/device.py)
        attributes = dev.attributes
        self.raw_attributes: Mapping[str, Mapping[str, Any]] = attributes if attributes else _NO_ATTRIBUTES
        self._attributes: dict[str, AttributeValue] | None = None
        # keyed by normalized (qualified) name; shared between the devices with an equal map: never modify it
        caps = dev.capacity
        self.capacity: dict[str, CapacityEntry] = (
            _capacities(caps, slice_record.driver, qualified_wins) if caps else _NO_CAPACITY
        )
        self.allow_multi = bool(dev.allow_multiple_allocations)
        counters = dev.consumes_counters
        self.consumes: tuple[tuple[str, dict[str, Fraction]], ...] = (
            tuple((cc.counter_set, {n: c.value.value for n, c in cc.counters.items()}) for cc in counters)
            if counters
            else ()
        )
        taints = dev.taints
        self.taints: tuple[DeviceTaint, ...] = tuple(taints) if taints else ()
        self.binding_conditions: list[str] | None = dev.binding_conditions
        self.binding_failure_conditions: list[str] | None = dev.binding_failure_conditions
        self.binds_to_node = bool(dev.binds_to_node)
        self.node_name = dev.node_name or ""
        self.node_selector: NodeSelector | None = dev.node_selector
        self.all_nodes = bool(dev.all_nodes)
        self.cel_input: Any = None  # built lazily, once
        self.class_matches: dict[object, bool | SelectorFailure] = {}  # class identity -> match or failure
        self.request_matches: dict[tuple[str, ...], bool | SelectorFailure] = {}
        self.consumption: dict[object, Any] = {}  # request capacity key -> consumed amounts (capacity.py)

    @property
    def attributes(self) -> dict[str, AttributeValue]:
        """The attributes as (type, value), for matchAttribute and distinctAttribute; worked out on first use
        (most devices only ever meet selectors, which read `raw_attributes`)."""
        values = self._attributes
        if values is None:
            values = self._attributes = {name: _attribute_value(a) for name, a in self.raw_attributes.items()}
        return values

    def __repr__(self) -> str:
        return f"DeviceRecord({self.id})"


_NO_ATTRIBUTES: Mapping[str, Mapping[str, Any]] = {}
_NO_CAPACITY: dict[str, CapacityEntry] = {}


@dataclass(eq=False)
class SliceRecord:
    """One ResourceSlice version, converted once."""

    name: str
    driver: str
    pool: str
    pool_generation: int
    slice_count: int
    node_name: str
    node_selector: NodeSelector | None
    all_nodes: bool
    per_device: bool
    per_device_set: bool
    counter_sets: list[tuple[str, dict[str, Fraction]]]
    spec: ResourceSliceSpec | None = None  # the model's spec, to recognize an unchanged slice
    devices: list[DeviceRecord] = field(default_factory=list)

    @property
    def pool_id(self) -> PoolID:
        return PoolID(self.driver, self.pool)


_LIST_KINDS = {"ints": "int", "bools": "bool", "strings": "string", "versions": "version"}


def _attribute_value(raw: Mapping[str, Any]) -> AttributeValue:
    """Scalars as (kind, value); non-empty lists (DRAListTypeAttributes) as ("list", {(kind, v), ...})."""
    for kind in ("string", "int", "bool", "version"):
        if raw.get(kind) is not None:
            return (kind, raw[kind])
    for field_name, kind in _LIST_KINDS.items():
        values = raw.get(field_name)
        if isinstance(values, list) and values:
            return ("list", frozenset((kind, v) for v in values))
    return ("unknown", None)


_RECORDS_MAX = 1 << 16  # entries of each cache below; it starts over when full

_CAPACITIES: dict[tuple[int, str], tuple[DeviceCapacity, CapacityEntry]] = {}


def _capacity(spelling: str, cap: DeviceCapacity) -> CapacityEntry:
    """The record of a capacity model under one spelling, once per model: validation shares one model
    between the devices with an equal capacity (resourceapi/manifests/interning.py), and so do the records
    (neither is
    ever modified). The entry holds the model, so its id is not reused while cached."""
    key = (id(cap), spelling)
    hit = _CAPACITIES.get(key)
    if hit is not None and hit[0] is cap:
        return hit[1]
    entry = capacity_entry(spelling, cap)
    if len(_CAPACITIES) >= _RECORDS_MAX:
        _CAPACITIES.clear()
    _CAPACITIES[key] = (cap, entry)
    return entry


_CAPACITY_MAPS: dict[
    tuple[int, str, bool], tuple[Mapping[str, DeviceCapacity], dict[str, CapacityEntry]]
] = {}


def _capacities(
    caps: Mapping[str, DeviceCapacity], driver: str, qualified_wins: bool
) -> dict[str, CapacityEntry]:
    """A device's capacity records by normalized name, once per capacity map and driver: validation shares
    one map between the devices that advertise equal ones (resourceapi/manifests/interning.py), and the
    records then share one dict (never modified either). Of two spellings of one capacity the later one
    wins, or with `qualified_wins` the qualified one."""
    key = (id(caps), driver, qualified_wins)
    hit = _CAPACITY_MAPS.get(key)
    if hit is not None and hit[0] is caps:
        return hit[1]
    records = {
        normalize_name(name, driver): _capacity(name, cap)
        for name, cap in caps.items()
        if not (qualified_wins and "/" not in name and f"{driver}/{name}" in caps)
    }
    if len(_CAPACITY_MAPS) >= _RECORDS_MAX:
        _CAPACITY_MAPS.clear()
    _CAPACITY_MAPS[key] = (caps, records)
    return records


def build_slice(model: ResourceSlice, qualified_wins: bool = False) -> SliceRecord:
    """Convert one ResourceSlice model into lean records (capacity names normalized under the driver).

    `qualified_wins` (1.38, resourceapi/releases.py): a device publishing a capacity both as `shares` and
    as `<driver>/shares` has the qualified one (v0.38.0-beta.0 `api/conversion.go`)."""
    spec = model.spec
    record = SliceRecord(
        name=model.metadata.name,
        driver=spec.driver,
        pool=spec.pool.name,
        pool_generation=spec.pool.generation,
        slice_count=spec.pool.resource_slice_count,
        node_name=spec.node_name or "",
        node_selector=spec.node_selector,
        all_nodes=bool(spec.all_nodes),
        per_device=bool(spec.per_device_node_selection),
        per_device_set=spec.per_device_node_selection is not None,
        counter_sets=[
            (cs.name, {n: c.value.value for n, c in cs.counters.items()}) for cs in spec.shared_counters or ()
        ],
        spec=spec,
    )
    record.devices = [DeviceRecord(record, dev, qualified_wins) for dev in spec.devices or ()]
    return record


# --- node selection (upstream NodeMatches with nodeaffinity semantics) --------------------------------------


def _requirement_matches(req: NodeSelectorRequirement, values: Mapping[str, str]) -> bool:
    op = req.operator
    present = req.key in values
    value = values.get(req.key, "")
    wanted = req.values or []
    if op == "In":
        return present and value in wanted
    if op == "NotIn":
        return not present or value not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(wanted) != 1:
            return False
        try:
            have, limit = int(value), int(wanted[0])
        except ValueError:
            return False
        return have > limit if op == "Gt" else have < limit
    return False


def node_selector_matches(selector: NodeSelector, node_name: str, labels: Mapping[str, str]) -> bool:
    """Terms are ORed, requirements ANDed; a term without requirements matches nothing (nodeaffinity)."""
    fields = {"metadata.name": node_name}
    for term in selector.node_selector_terms:
        exprs = term.match_expressions or []
        flds = term.match_fields or []
        if not exprs and not flds:
            continue
        if all(_requirement_matches(r, labels) for r in exprs) and all(
            _requirement_matches(r, fields) for r in flds
        ):
            return True
    return False


def node_matches(
    node_name: str, labels: Mapping[str, str], want_name: str, all_nodes: bool, selector: NodeSelector | None
) -> bool:
    """Upstream NodeMatches: nodeName equality, allNodes, or node-affinity match of the selector."""
    if want_name:
        return node_name == want_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node_name, labels)
    return False


# --- pools --------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Pool:
    """A resource pool as seen from one node."""

    id: PoolID
    slices: list[SliceRecord] = field(default_factory=list)  # device slices targeting the node, by name
    slices_not_targeting: list[SliceRecord] = field(default_factory=list)
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    available: tuple[int, dict[str, dict[str, Fraction]]] | None = (
        None  # (pool version, counters), by Cluster
    )

    @property
    def usable(self) -> bool:
        return not (self.incomplete or self.invalid)

    def devices(self) -> Iterable[DeviceRecord]:
        for s in self.slices:
            yield from s.devices

    def all_devices(self) -> Iterable[DeviceRecord]:
        """Devices of every slice of the pool, also those not targeting the node (counter accounting)."""
        for s in self.slices:
            yield from s.devices
        for s in self.slices_not_targeting:
            yield from s.devices


@dataclass(eq=False)
class NodePools:
    """GatherPools' result for one node, plus the flattened first-fit candidate order of usable pools."""

    pools: list[Pool]
    candidates: list[DeviceRecord]
    any_invalid: bool
    by_id: dict[DeviceID, DeviceRecord]


def _slice_relevant(s: SliceRecord, node_name: str, labels: Mapping[str, str]) -> bool | None:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        return node_matches(node_name, labels, s.node_name, s.all_nodes, s.node_selector)
    if s.per_device:
        return any(
            node_matches(node_name, labels, d.node_name, d.all_nodes, d.node_selector) for d in s.devices
        )
    return None  # unknown future mode: ignored


def gather_pools(
    slices_for_node: Iterable[SliceRecord],
    node_name: str,
    labels: Mapping[str, str],
    partitionable: bool,
    slices_of_pool: Mapping[PoolID, Sequence[SliceRecord]],
) -> NodePools:
    """Upstream GatherPools: relevant slices, newest generation, completeness, validity, fixed order."""
    grouped: dict[PoolID, list[SliceRecord]] = {}
    for s in slices_for_node:
        if not partitionable and (s.per_device_set or s.counter_sets):
            continue
        if not _slice_relevant(s, node_name, labels):
            continue
        current = grouped.get(s.pool_id)
        if current is None or s.pool_generation > current[0].pool_generation:
            grouped[s.pool_id] = [s]
        elif s.pool_generation == current[0].pool_generation:
            current.append(s)

    normal: list[Pool] = []
    with_binding: list[Pool] = []
    for pool_id, pool_slices in grouped.items():
        generation = pool_slices[0].pool_generation
        wanted = pool_slices[0].slice_count
        all_for_pool: list[SliceRecord] | None = None
        if len(pool_slices) != wanted:
            obsolete = False
            all_for_pool = []
            for s in slices_of_pool.get(pool_id, ()):
                if s.pool_generation == generation:
                    all_for_pool.append(s)
                elif s.pool_generation > generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(all_for_pool) != wanted:
                normal.append(Pool(pool_id, incomplete=True))
                continue
        pool = _build_pool(pool_id, pool_slices, partitionable, all_for_pool)
        has_binding = any(d.binding_conditions is not None for d in pool.devices())
        (with_binding if has_binding else normal).append(pool)

    normal.sort(key=lambda p: p.id)
    with_binding.sort(key=lambda p: p.id)
    pools = normal + with_binding
    candidates = [d for p in pools if p.usable for d in p.devices()]
    return NodePools(
        pools=pools,
        candidates=candidates,
        any_invalid=any(p.invalid for p in pools),
        by_id={d.id: d for p in pools for d in p.all_devices()},
    )


def _build_pool(
    pool_id: PoolID,
    pool_slices: list[SliceRecord],
    partitionable: bool,
    all_for_pool: list[SliceRecord] | None,
) -> Pool:
    ordered = sorted(pool_slices, key=lambda s: s.name)
    device_slices: list[SliceRecord] = []
    counter_slices: list[SliceRecord] = []
    not_targeting: list[SliceRecord] = []
    for s in ordered:
        (counter_slices if partitionable and s.counter_sets else device_slices).append(s)
    if all_for_pool is not None and len(ordered) < len(all_for_pool):
        names = {s.name for s in ordered}
        for s in all_for_pool:
            if s.name in names:
                continue
            (counter_slices if partitionable and s.counter_sets else not_targeting).append(s)

    seen: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in seen:
                return Pool(pool_id, invalid=True, invalid_reason=f"duplicate device name {d.name}")
            seen.add(d.name)
    if not partitionable:
        return Pool(pool_id, slices=device_slices)

    counter_sets: dict[str, dict[str, Fraction]] = {}
    for s in counter_slices:
        for name, counters in s.counter_sets:
            if name in counter_sets:
                return Pool(pool_id, invalid=True, invalid_reason=f"duplicate counter set name {name}")
            counter_sets[name] = counters
    for group in (device_slices, not_targeting):
        for s in group:
            for d in s.devices:
                for set_name, counters in d.consumes:
                    if set_name not in counter_sets:
                        return Pool(pool_id, invalid=True, invalid_reason=f"counter set {set_name} not found")
                    for counter in counters:
                        if counter not in counter_sets[set_name]:
                            return Pool(
                                pool_id,
                                invalid=True,
                                invalid_reason=f"counter {counter} not found in counter set {set_name}",
                            )
    return Pool(pool_id, slices=device_slices, slices_not_targeting=not_targeting, counter_sets=counter_sets)
