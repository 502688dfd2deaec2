"""The allocator core's public API: a long-lived, incremental view of classes, slices and allocations.

`Cluster.allocate(node, claims)` runs upstream's structured allocation for one pod's claims on one node. Its
cost depends on that node's devices only: slices are converted once per version, pools are gathered once per
node (until a slice changes), selector results are cached per (class version, device record), consumed amounts
per (device record, request), available counters per pool (until a commit touches the pool).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from allocator.counters import CounterTotals, available_counters
from allocator.errors import AllocationError
from allocator.features import Features
from allocator.ids import DeviceID, PoolID
from allocator.pools import DeviceRecord, NodePools, Pool, SliceRecord, build_slice, gather_pools
from allocator.requests import ClaimPlan, plan_claims
from allocator.results import build_result
from allocator.search import DEFAULT_MAX_STEPS, Search
from allocator.selection import ClassRecord, Matcher, SelectorEngine
from allocator.state import CommittedState
from resourceapi.gates import FeatureGates
from resourceapi.quantity import Format, Quantity
from resourceapi.resource_v1 import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice

__all__ = ["Allocation", "Cluster", "DeviceID", "DeviceUsage", "NodeInfo"]


@dataclass(frozen=True)
class NodeInfo:
    """What slice node selection needs of a node: its name and labels."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Allocation:
    """Outcome of `Cluster.allocate`: results (None = no fit) or a fatal error (upstream's message)."""

    results: list[AllocationResult] | None = None
    error: str | None = None
    node_failure: bool = False  # the error is node-local (invalid pools): unschedulable on this node only
    allocate_one_calls: int = 0  # upstream's NumAllocateOneInvocations statistic

    @property
    def fits(self) -> bool:
        return self.results is not None and self.error is None


@dataclass(frozen=True)
class DeviceUsage:
    """One device of a node as placement scores it: shareable or dedicated, in use, capacity left."""

    id: DeviceID
    shareable: bool  # allowMultipleAllocations (with DRAConsumableCapacity on)
    allocated: bool  # dedicated: allocated; shareable: holds at least one committed share
    capacity: Mapping[str, tuple[Quantity, Quantity]]  # device's spelling -> (consumed, total)

    @property
    def free_fraction(self) -> Fraction:
        """Share of the device still free: min over capacities of remaining/total (dedicated: 0 or 1)."""
        if not self.shareable:
            return Fraction(0 if self.allocated else 1)
        fractions = [
            (total.value - used.value) / total.value
            for used, total in self.capacity.values()
            if total.value > 0
        ]
        return max(Fraction(0), min(fractions)) if fractions else Fraction(1)


def _new_share_id() -> str:
    return str(uuid.uuid4())


def _ensure_recursion_depth(plans: Sequence[ClaimPlan]) -> None:
    """The search recurses once per device, request and claim; make room for pods with very many devices."""
    depth = sum(max(d.num_devices for d in entries) + 2 for plan in plans for entries in plan.requests)
    needed = depth + len(plans) + 200
    if sys.getrecursionlimit() < needed + 1000:
        sys.setrecursionlimit(needed + 1000)


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
    ) -> None:
        self.gates = gates
        self.features = Features.from_gates(gates)
        if engine is None:
            from allocator.celengine import CelEngine

            engine = CelEngine(gates)
        self._matcher = Matcher(engine)
        self._share_ids = share_ids
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
        for s in slices:
            self.upsert_slice(s)
        self.state = CommittedState()
        self.state.add_claims(allocated_claims, self.features.consumable_capacity)

    # --- inputs --------------------------------------------------------------------------------------------

    def upsert_class(self, cls: DeviceClass) -> None:
        """Add or replace a DeviceClass; cached selector results of the old version are no longer used."""
        self._classes[cls.metadata.name] = ClassRecord(cls)

    def delete_class(self, name: str) -> None:
        self._classes.pop(name, None)

    def upsert_slice(self, model: ResourceSlice) -> None:
        """Add or replace a ResourceSlice (by name); node pool caches are invalidated.

        A slice whose spec did not change (a watch resync) keeps its records and cached selector results.
        """
        existing = self._slices.get(model.metadata.name)
        if existing is not None and existing.spec == model.spec:
            return
        self.delete_slice(model.metadata.name)
        record = build_slice(model)
        self._slices[record.name] = record
        if record.node_name:
            self._by_node.setdefault(record.node_name, {})[record.name] = record
        else:
            self._shared[record.name] = record
        self._by_pool.setdefault(record.pool_id, {})[record.name] = record
        self._invalidate()

    def delete_slice(self, name: str) -> None:
        record = self._slices.pop(name, None)
        if record is None:
            return
        if record.node_name:
            self._by_node.get(record.node_name, {}).pop(name, None)
        else:
            self._shared.pop(name, None)
        self._by_pool.get(record.pool_id, {}).pop(name, None)
        self._invalidate()

    def _invalidate(self) -> None:
        self._nodes.clear()
        self._devices = None

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
        self, node: NodeInfo, claims: Sequence[ResourceClaim], *, max_steps: int | None = DEFAULT_MAX_STEPS
    ) -> Allocation:
        """All-or-nothing for the claims of one pod, in order; commits nothing.

        `max_steps` bounds the search (upstream's filter timeout, counted in allocateOne steps so that results
        stay deterministic; `None` for no bound): past it the node fails with "timed out trying to allocate
        devices", a node-only failure.
        """
        pools = self.node_pools(node)
        search: Search | None = None
        try:
            search = Search(
                features=self.features,
                pools=pools,
                plans=[],
                matcher=self._matcher,
                state=self.state,
                available_counters=self._available_counters(pools),
                share_ids=self._share_ids,
                node_name=node.name,
                labels=node.labels,
                max_steps=max_steps,
            )
            plans = plan_claims(claims, self.features, self._classes, pools, search.all_mode_devices)
            search.plans = plans
            search.results = [[] for _ in plans]
            _ensure_recursion_depth(plans)
            if not search.run():
                return Allocation(results=None, allocate_one_calls=search.calls)
            results = [
                build_result(plan, devices, node.name, self.features)
                for plan, devices in zip(plans, search.results, strict=True)
            ]
            return Allocation(results=results, allocate_one_calls=search.calls)
        except RecursionError:
            return Allocation(
                error="the claims of this pod need more devices than the search can hold at once",
                allocate_one_calls=search.calls if search else 0,
            )
        except AllocationError as exc:
            return Allocation(
                error=exc.message,
                node_failure=exc.node_failure,
                allocate_one_calls=search.calls if search else 0,
            )

    # --- committed state -----------------------------------------------------------------------------------

    def commit(self, claim: ResourceClaim, result: AllocationResult) -> None:
        """Count `result` (allocated to `claim`) as allocated from now on."""
        self._touched(self.state.add(result, self.features.consumable_capacity))

    def release(self, result: AllocationResult) -> None:
        """Forget a committed allocation (claim deallocated or deleted)."""
        self._touched(self.state.remove(result, self.features.consumable_capacity))

    def _touched(self, devices: set[DeviceID]) -> None:
        for device in devices:
            pool_id = device.pool_id
            self._pool_versions[pool_id] = self._pool_versions.get(pool_id, 0) + 1

    # --- capacity views for placement ----------------------------------------------------------------------

    def _device(self, device: DeviceID) -> DeviceRecord | None:
        if self._devices is None:
            index: dict[DeviceID, DeviceRecord] = {}
            for s in sorted(self._slices.values(), key=lambda r: r.pool_generation):
                for d in s.devices:
                    index[d.id] = d
            self._devices = index
        return self._devices.get(device)

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

    def node_usage(self, node: NodeInfo) -> list[DeviceUsage]:
        """Allocatable devices of the node (first-fit order) with committed usage: binpack/spread input."""
        out: list[DeviceUsage] = []
        shareable_on = self.features.consumable_capacity
        for record in self.node_pools(node).candidates:
            shareable = shareable_on and record.allow_multi
            allocated = record.id in self.state.dedicated or (shareable and self.state.has_shares(record.id))
            out.append(DeviceUsage(record.id, shareable, allocated, self.device_capacity(record.id)))
        return out
