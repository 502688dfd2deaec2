"""The allocator core's public API: a long-lived, incremental view of classes, slices and allocations.

`Cluster.allocate(node, claims)` runs upstream's structured allocation for one pod's claims on one node. Its
cost depends on that node's devices only: slices are converted once per version, pools are gathered once per
node (until a slice changes), selector results are cached per (class version, device record), consumed amounts
per (device record, request), available counters per pool (until a commit touches the pool).
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from typing import Literal

from allocator.structured.counters import CounterTotals, available_counters
from allocator.structured.errors import AllocationError
from allocator.structured.features import Features
from allocator.structured.ids import DeviceID, PoolID
from allocator.structured.pools import DeviceRecord, NodePools, Pool, SliceRecord, build_slice, gather_pools
from allocator.structured.requests import ClaimPlan
from allocator.structured.results import build_result, check_node_selector
from allocator.structured.search import DEFAULT_MAX_STEPS, DeviceResult, Search
from allocator.structured.selection import ClassRecord, Matcher, SelectorEngine
from allocator.structured.state import CommittedState
from resourceapi.api.resource_v1 import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.capacity import normalize_name
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Format, Quantity

__all__ = [
    "DEVICE_ORDERS",
    "Allocation",
    "Cluster",
    "Decision",
    "DeviceID",
    "DeviceOrder",
    "DeviceTake",
    "NodeInfo",
    "NodeScope",
    "Picks",
    "Verdict",
]

DeviceOrder = Literal["first-fit", "most-used", "least-used"]
"""Candidate order within a node: upstream's (pools, slices, devices), or partly used devices first (fullest
first: binpack), or fresh devices first (least used first: spread); ties keep upstream's order."""
DEVICE_ORDERS: tuple[DeviceOrder, ...] = ("first-fit", "most-used", "least-used")
NodeScope = frozenset[str] | None
"""The nodes whose view a change of slices alters (`Cluster.upsert_slice`, `delete_slice`); None: any node."""


@dataclass(frozen=True)
class NodeInfo:
    """What slice node selection needs of a node: its name and labels."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


class Verdict(Enum):
    """How an allocation attempt on one node ended, as upstream's `Allocate` separates its outcomes."""

    FITS = "fits"  # results, one per claim
    NO_FIT = "no fit"  # (nil, nil): the scheduler's "cannot allocate all claims"
    NODE_FAILURE = "node failure"  # ErrFailedAllocationOnNode or the filter timeout: this node only
    ERROR = "error"  # any other error: the pod cannot be scheduled now, on any node


@dataclass(frozen=True, slots=True)
class Allocation:
    """Outcome of `Cluster.allocate`: `results` exactly when the verdict is FITS, `message` for failures."""

    verdict: Verdict
    results: list[AllocationResult] | None = None
    message: str = ""
    allocate_one_calls: int = 0  # upstream's NumAllocateOneInvocations statistic

    @property
    def fits(self) -> bool:
        return self.verdict is Verdict.FITS

    @property
    def error(self) -> str | None:
        """The failure's message (node failure or error), None otherwise."""
        return self.message if self.verdict in (Verdict.NODE_FAILURE, Verdict.ERROR) else None

    @property
    def node_failure(self) -> bool:
        return self.verdict is Verdict.NODE_FAILURE


@dataclass(frozen=True, slots=True)
class DeviceTake:
    """What one allocated device result takes: the whole device, or a share with its consumed amounts
    (normalized capacity names)."""

    device: DeviceID
    share: bool
    amounts: tuple[tuple[str, Fraction], ...] = ()


class Picks:
    """The devices a successful search chose on one node, per claim (API objects: `Cluster.results`)."""

    __slots__ = ("devices", "node_name", "plans")

    def __init__(self, node_name: str, plans: list[ClaimPlan], devices: list[list[DeviceResult]]) -> None:
        self.node_name = node_name
        self.plans = plans
        self.devices = devices

    def takes(self) -> Iterator[DeviceTake]:
        for claim_devices in self.devices:
            for r in claim_devices:
                if r.admin:
                    continue
                driver = r.device.id.driver
                amounts = tuple(
                    (normalize_name(name, driver), q.value) for name, q in (r.consumed or {}).items()
                )
                yield DeviceTake(r.device.id, r.multi, amounts)


def takes_of(results: Iterable[AllocationResult]) -> Iterator[DeviceTake]:
    """The same view of built results (admin results take nothing, as in committed state)."""
    for result in results:
        for r in (result.devices.results or []) if result.devices else []:
            if r.admin_access:
                continue
            amounts = tuple(
                (normalize_name(name, r.driver), q.value) for name, q in (r.consumed_capacity or {}).items()
            )
            yield DeviceTake(DeviceID(r.driver, r.pool, r.device), r.share_id is not None, amounts)


@dataclass(frozen=True, slots=True)
class Decision:
    """Outcome of `Cluster.decide`: like `Allocation`, with the chosen devices instead of built results."""

    verdict: Verdict
    picks: Picks | None = None
    message: str = ""
    allocate_one_calls: int = 0


_DEVICE_FIELD = re.compile(r"\bdevice\b(\s*\.\s*(\w+))?")
_FIELDS_WITHOUT_ATTRIBUTES = frozenset({"driver", "capacity", "allowMultipleAllocations"})


def selectors_read_no_attributes(selectors: Sequence[str | None]) -> bool:
    """True when every selector reads `device` only as `device.driver`, `device.capacity` or
    `device.allowMultipleAllocations` (so devices equal in those get one result); anything else
    (`device.attributes`, `device[...]`, a macro over `device`, the word in a string) is False."""
    for expression in selectors:
        if expression is None:
            continue
        for m in _DEVICE_FIELD.finditer(expression):
            if m.group(2) not in _FIELDS_WITHOUT_ATTRIBUTES:
                return False
    return True


def _new_share_id() -> str:
    return str(uuid.uuid4())


class Cluster:
    """Long-lived, incremental view of DeviceClasses, ResourceSlices and committed allocations."""

    def __init__(
        self,
        gates: FeatureGates,
        classes: Iterable[DeviceClass],
        slices: Iterable[ResourceSlice],
        allocated_claims: Iterable[ResourceClaim] = (),
        *,
        engine: SelectorEngine | None = None,
        share_ids: Callable[[], str] = _new_share_id,
        binding_conditions: bool = True,
    ) -> None:
        """`binding_conditions=False` leaves devices with `bindingConditions` unallocated even where the gates
        allocate them: for a caller that cannot wait for the conditions before binding (the binder can, with
        its PreBind wait: binder/binding_conditions.py)."""
        self.gates = gates
        features = Features.from_gates(gates)
        if not binding_conditions and features.device_binding_and_status:
            features = dataclasses.replace(features, device_binding_and_status=False)
        self.features = features
        if engine is None:
            from allocator.structured.celengine import CelEngine

            engine = CelEngine(gates)
        self._matcher = Matcher(engine)
        self._share_ids = share_ids
        self.generation = 0  # bumped by every change of classes, slices or committed state
        self._classes: dict[str, ClassRecord] = {}
        for cls in classes:
            self.upsert_class(cls)
        self._slices: dict[str, SliceRecord] = {}
        self._by_node: dict[str, dict[str, SliceRecord]] = {}
        self._shared: dict[str, SliceRecord] = {}
        self._by_pool: dict[PoolID, dict[str, SliceRecord]] = {}
        self._nodes: dict[str, tuple[Mapping[str, str], NodePools]] = {}
        self._devices: dict[DeviceID, DeviceRecord] | None = None
        self._pool_versions: dict[PoolID, int] = {}
        self._device_used: dict[DeviceID, Fraction | int] = {}  # committed allocated share per device
        # per node: (its pools' versions, committed sum of device shares, candidates by id, the NodePools)
        self._selects_memo: dict[tuple[object, ...], tuple[object, bool]] = {}
        self._attribute_free: dict[ClassRecord, bool] = {}
        self._node_used: dict[
            str, tuple[tuple[int, ...], Fraction | int, dict[DeviceID, DeviceRecord], NodePools]
        ] = {}
        for s in slices:
            self.upsert_slice(s)
        self.state = CommittedState()
        self.state.add_claims(allocated_claims, self.features.consumable_capacity)

    # --- inputs --------------------------------------------------------------------------------------------

    def upsert_class(self, cls: DeviceClass) -> None:
        """Add or replace a DeviceClass; cached selector results of the old version are no longer used."""
        old = self._classes.get(cls.metadata.name)
        if old is not None:
            self._attribute_free.pop(old, None)
        self._classes[cls.metadata.name] = ClassRecord(cls)
        self.generation += 1

    def delete_class(self, name: str) -> None:
        if self._classes.pop(name, None) is not None:
            self.generation += 1

    def upsert_slice(self, model: ResourceSlice) -> NodeScope:
        """Add or replace a ResourceSlice (by name); the pool caches of the nodes that see it are invalidated.
        Returns the nodes whose view changed (`NodeScope`: None for any node).

        A slice whose spec did not change (a watch resync) keeps its records and cached selector results.
        """
        existing = self._slices.get(model.metadata.name)
        if existing is not None and existing.spec == model.spec:
            return frozenset()
        record = build_slice(model, self.features.qualified_name_wins)
        before = self._remove_slice(model.metadata.name)
        self._slices[record.name] = record
        if record.node_name:
            self._by_node.setdefault(record.node_name, {})[record.name] = record
        else:
            self._shared[record.name] = record
        self._by_pool.setdefault(record.pool_id, {})[record.name] = record
        return self._invalidate([r for r in (before, record) if r is not None])

    def delete_slice(self, name: str) -> NodeScope:
        """Forget a ResourceSlice; returns the nodes whose view changed (None: any node)."""
        record = self._remove_slice(name)
        return frozenset() if record is None else self._invalidate([record])

    def _remove_slice(self, name: str) -> SliceRecord | None:
        record = self._slices.pop(name, None)
        if record is None:
            return None
        if record.node_name:
            self._by_node.get(record.node_name, {}).pop(name, None)
        else:
            self._shared.pop(name, None)
        self._by_pool.get(record.pool_id, {}).pop(name, None)
        return record

    def _invalidate(self, changed: Sequence[SliceRecord]) -> NodeScope:
        """Drop what the `changed` slice versions may alter. Slices of node-local pools (every slice of
        the pool names one node, `spec.nodeName`) are seen by that node alone, as GatherPools gathers a
        node's own slices and the shared ones: only its caches go. Any other change drops every node's."""
        self.generation += 1
        nodes = {r.node_name for r in changed}
        node = next(iter(nodes)) if len(nodes) == 1 else ""
        local = bool(node) and all(
            s.node_name == node for r in changed for s in self._by_pool.get(r.pool_id, {}).values()
        )
        self._devices = None
        if not local:
            self._nodes.clear()
            self._device_used.clear()
            self._node_used.clear()
            return None
        self._nodes.pop(node, None)
        self._node_used.pop(node, None)
        for r in changed:
            for d in r.devices:
                self._device_used.pop(d.id, None)
        return frozenset((node,))

    # --- allocation ----------------------------------------------------------------------------------------

    def node_pools(self, node: NodeInfo) -> NodePools:
        """GatherPools for the node, cached until a slice changes or the node's labels change."""
        cached = self._nodes.get(node.name)
        if cached is not None and cached[0] == node.labels:
            return cached[1]
        own = self._by_node.get(node.name, {})
        candidates = [*own.values(), *self._shared.values()]
        pools = gather_pools(
            candidates,
            node.name,
            node.labels,
            self.features.partitionable_devices,
            {pid: list(by_name.values()) for pid, by_name in self._pools_of(candidates).items()},
        )
        self._nodes[node.name] = (dict(node.labels), pools)
        return pools

    def _pools_of(self, candidates: Iterable[SliceRecord]) -> dict[PoolID, dict[str, SliceRecord]]:
        return {s.pool_id: self._by_pool.get(s.pool_id, {}) for s in candidates}

    def _available_counters(self, pools: NodePools) -> Callable[[PoolID], CounterTotals]:
        by_id: dict[PoolID, Pool] = {p.id: p for p in pools.pools}

        def lookup(pool_id: PoolID) -> CounterTotals:
            pool = by_id[pool_id]
            version = self._pool_versions.get(pool_id, 0)
            cached = pool.available
            if cached is None or cached[0] != version:
                cached = pool.available = (version, available_counters(pool, self.state))
            return cached[1]

        return lookup

    def allocate(
        self,
        node: NodeInfo,
        claims: Sequence[ResourceClaim],
        *,
        max_steps: int | None = DEFAULT_MAX_STEPS,
        order: DeviceOrder = "first-fit",
    ) -> Allocation:
        """All-or-nothing for the claims of one pod, in order; commits nothing.

        `max_steps` bounds the search (upstream's filter timeout, counted in allocateOne steps so that results
        stay deterministic; `None` for no bound): past it the node fails with "timed out trying to allocate
        devices", a node-only failure. `order` is the candidate order within the node (see `DeviceOrder`).
        """
        decision = self.decide(node, claims, max_steps=max_steps, order=order)
        if decision.picks is None:
            return Allocation(decision.verdict, None, decision.message, decision.allocate_one_calls)
        return Allocation(Verdict.FITS, self.results(decision.picks), "", decision.allocate_one_calls)

    def decide(
        self,
        node: NodeInfo,
        claims: Sequence[ResourceClaim],
        *,
        max_steps: int | None = DEFAULT_MAX_STEPS,
        order: DeviceOrder = "first-fit",
        prefilter: bool = False,
    ) -> Decision:
        """`allocate` without building results: the chosen devices, for scoring and a later `results`.

        With `prefilter`, a node where some request has no selectable device with room is "no fit" without
        a search (see `Search.could_fit`).
        """
        search: Search | None = None
        try:
            if prefilter:
                # `could_fit` looks at every candidate whatever their order: the strategy's order (which
                # reads every shared device's use) is needed only where the search runs
                search = self._search(node, claims, max_steps)
                if not search.could_fit():
                    return Decision(Verdict.NO_FIT)
                search.candidates = self._ordered(search.pools.candidates, order)
            else:
                search = self._search(node, claims, max_steps, order)
            if not search.run():
                return Decision(Verdict.NO_FIT, allocate_one_calls=search.calls)
            for plan, devices in zip(search.plans, search.results, strict=True):
                check_node_selector(plan, devices)
            picks = Picks(node.name, search.plans, search.results)
            return Decision(Verdict.FITS, picks, allocate_one_calls=search.calls)
        except AllocationError as exc:
            verdict = Verdict.NODE_FAILURE if exc.node_failure else Verdict.ERROR
            return Decision(verdict, None, exc.message, search.calls if search else 0)

    def slice_record(self, name: str) -> SliceRecord | None:
        """The current record of slice `name` (its devices carry the cached selector results)."""
        return self._slices.get(name)

    def selects(self, class_name: str, device: DeviceRecord) -> bool:
        """Whether the class's selectors pick the device (False for an unknown class, or a selector that
        fails: allocation would report that failure, a read-only view counts nothing).

        For reports over every device of a cluster (`dra-capacity top`, the binder's capacity metrics): when
        the class's selectors read nothing of a device but its driver, capacity and allowMultipleAllocations
        (`selectors_read_no_attributes`), one evaluation answers for every device alike in those (devices of
        one model share their capacity map)."""
        cls = self._classes.get(class_name)
        if cls is None:
            return False
        key: tuple[object, ...] | None = None
        free = self._attribute_free.get(cls)
        if free is None:
            free = self._attribute_free[cls] = selectors_read_no_attributes(cls.selectors)
        if free:
            key = (cls, device.id.driver, id(device.capacity), device.allow_multi)
            known = self._selects_memo.get(key)
            if known is not None and known[0] is device.capacity:
                return known[1]
        try:
            matched = self._matcher.class_matches(device, cls)
        except AllocationError:
            matched = False
        if key is not None:
            if len(self._selects_memo) > 65536:
                self._selects_memo.clear()
            self._selects_memo[key] = (device.capacity, matched)
        return matched

    def plan(self, node: NodeInfo, claims: Sequence[ResourceClaim]) -> Search:
        """A planned, never-run `Search` of `claims` on `node` over the committed state, for diagnosis
        (allocator/scheduling/explain.py reads its checks and plans); raises `AllocationError` as `decide`
        reports it."""
        return self._search(node, claims)

    def _search(
        self,
        node: NodeInfo,
        claims: Sequence[ResourceClaim],
        max_steps: int | None = None,
        order: DeviceOrder | None = None,
    ) -> Search:
        """A `Search` of `claims` on `node` over the committed state (candidates in `order`, when given).

        1.38's PreFilter refuses to gather the allocated state while a committed claim has a negative
        consumedCapacity (kube-scheduler v1.38 allocateddevices.go `getCapacities`): the pod fails."""
        if self.features.negative_consumed_fails_prefilter and claims:
            invalid = self.state.invalid_error()
            if invalid is not None:
                raise AllocationError(f"gather allocation state: {invalid}")
        pools = self.node_pools(node)
        return Search(
            features=self.features,
            pools=pools,
            claims=claims,
            classes=self._classes,
            matcher=self._matcher,
            state=self.state,
            available_counters=self._available_counters(pools),
            node_name=node.name,
            labels=node.labels,
            max_steps=max_steps,
            candidates=None if order is None else self._ordered(pools.candidates, order),
        )

    def results(self, picks: Picks) -> list[AllocationResult]:
        """The API AllocationResults of a decision (one per claim), with fresh share IDs."""
        return [
            build_result(plan, devices, picks.node_name, self.features, self._share_ids)
            for plan, devices in zip(picks.plans, picks.devices, strict=True)
        ]

    def _ordered(self, candidates: list[DeviceRecord], order: DeviceOrder) -> list[DeviceRecord]:
        """Candidates in the requested order: only shareable devices holding shares are "partly used"
        (dedicated devices keep their place: an allocated one is skipped anyway)."""
        if order == "first-fit" or not self.features.consumable_capacity:
            return candidates
        has_shares = self.state.has_shares
        used = {d.id: self._committed_used(d) for d in candidates if d.allow_multi and has_shares(d.id)}
        if not used:
            return candidates
        zero = Fraction(0)
        if order == "most-used":
            return sorted(candidates, key=lambda d: -used.get(d.id, zero))
        return sorted(candidates, key=lambda d: used.get(d.id, zero))

    # --- usage views for placement -------------------------------------------------------------------------

    def _used(self, record: DeviceRecord, take: tuple[bool, dict[str, Fraction]] | None) -> Fraction | int:
        """Allocated share of one device: committed state plus `take` (share?, amounts) of a candidate
        allocation. A shareable device: the mean over its capacities of consumed/value (1 while it holds a
        share and has no capacity); a dedicated one: 0 or 1."""
        dev_id = record.id
        if self.features.consumable_capacity and record.allow_multi:
            committed = self.state.aggregated.get(dev_id)
            extra = take[1] if take is not None else None
            if not committed and not extra:
                return 1 if take is not None or self.state.has_shares(dev_id) else 0
            parts = [
                min(
                    Fraction(1),
                    ((committed.get(name, 0) if committed else 0) + (extra.get(name, 0) if extra else 0))
                    / entry.value,
                )
                for name, entry in record.capacity.items()
                if entry.value > 0
            ]
            if parts:
                return sum(parts, Fraction(0)) / len(parts)
            return 1
        return 1 if take is not None or dev_id in self.state.dedicated else 0

    def allocated_share(self, node: NodeInfo, takes: Iterable[DeviceTake] = ()) -> Fraction:
        """Mean allocated share of the node's usable devices (committed state plus `takes`): what binpack
        maximizes and spread minimizes. 0 for a node without devices.

        The committed sum is cached per node until a commit touches one of its pools; `takes` are added as
        the difference they make on their devices."""
        pools = self.node_pools(node)
        candidates = pools.candidates
        if not candidates:
            return Fraction(0)
        versions = tuple(self._pool_versions.get(p.id, 0) for p in pools.pools)
        cached = self._node_used.get(node.name)
        if cached is None or cached[0] != versions or cached[3] is not pools:
            total: Fraction | int = sum(self._committed_used(d) for d in candidates)
            cached = (versions, total, {d.id: d for d in candidates}, pools)
            self._node_used[node.name] = cached
        total, by_id = cached[1], cached[2]
        extra: dict[DeviceID, tuple[bool, dict[str, Fraction]]] = {}
        for t in takes:
            _, amounts = extra.setdefault(t.device, (t.share, {}))
            for name, amount in t.amounts:
                amounts[name] = amounts.get(name, Fraction(0)) + amount
        for dev_id, take in extra.items():
            record = by_id.get(dev_id)
            if record is not None:
                total += self._used(record, take) - self._committed_used(record)
        return Fraction(total, len(candidates))

    def _committed_used(self, record: DeviceRecord) -> Fraction | int:
        used = self._device_used.get(record.id)
        if used is None:
            used = self._device_used[record.id] = self._used(record, None)
        return used

    # --- committed state -----------------------------------------------------------------------------------

    def commit(self, claim: ResourceClaim, result: AllocationResult) -> None:
        """Count `result` (allocated to `claim`) as allocated from now on."""
        self._touched(self.state.add(result, self.features.consumable_capacity, claim))

    def release(self, result: AllocationResult) -> None:
        """Forget a committed allocation (claim deallocated or deleted)."""
        self._touched(self.state.remove(result, self.features.consumable_capacity))

    def _touched(self, devices: set[DeviceID]) -> None:
        if devices:
            self.generation += 1
        for device in devices:
            self._device_used.pop(device, None)
            pool_id = device.pool_id
            self._pool_versions[pool_id] = self._pool_versions.get(pool_id, 0) + 1

    def _device(self, device: DeviceID) -> DeviceRecord | None:
        if self._devices is None:
            index: dict[DeviceID, DeviceRecord] = {}
            for s in sorted(self._slices.values(), key=lambda r: r.pool_generation):
                for d in s.devices:
                    index[d.id] = d
            self._devices = index
        return self._devices.get(device)

    def device_record(self, device: DeviceID) -> DeviceRecord | None:
        """The current record of a device (None when no slice publishes it)."""
        return self._device(device)

    def device_capacity(self, device: DeviceID) -> Mapping[str, tuple[Quantity, Quantity]]:
        """Capacity name (device's spelling) -> (consumed by committed shares, total value)."""
        record = self._device(device)
        if record is None:
            return {}
        committed = self.state.aggregated.get(device, {})
        out: dict[str, tuple[Quantity, Quantity]] = {}
        for name, entry in record.capacity.items():
            used = committed.get(name, Fraction(0))
            fmt = entry.quantity.format if used.denominator == 1 else Format.DECIMAL_SI
            out[entry.spelling] = (Quantity.from_fraction(used, fmt), entry.quantity)
        return out
