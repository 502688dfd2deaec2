"""The whole capacity picture `dra-capacity top` prints and the binder's metrics export, kept incrementally.

`CapacityView` takes the cluster's objects one change at a time (models: DeviceClass, ResourceSlice, Node,
ResourceClaim, Pod) and feeds the two halves: `usage.UsageBook` (units total and used, per class and node)
and `headroom.HeadroomEngine` (how many more pods fit, by placement). It also counts the pending pods that
wait for each class's extended resource. `report()` answers from what is kept; nothing is recomputed over
the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from allocator.capacity.headroom import Headroom, HeadroomEngine, ShapeError, unit_pod
from allocator.capacity.usage import Figures, UsageBook
from allocator.scheduling.placement import Strategy
from allocator.scheduling.synthesis import scalar_requests
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

Key = tuple[str, str]  # (namespace, name)
_TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class ClassRow:
    """One unit class: units total, used, free, its devices, the pending pods waiting for its resource and
    the headroom (None when not asked for)."""

    name: str
    resource: str
    total: int
    used: Fraction | int
    devices: int
    pending: int
    headroom: Headroom | None = None
    problem: str | None = None

    @property
    def free(self) -> Fraction | int:
        return self.total - self.used


@dataclass(frozen=True)
class NodeRow:
    """One node's units of one class."""

    node: str
    class_name: str
    resource: str
    total: int
    used: Fraction | int
    devices: int

    @property
    def free(self) -> Fraction | int:
        return self.total - self.used


@dataclass(frozen=True)
class Report:
    classes: list[ClassRow] = field(default_factory=list)
    nodes: list[NodeRow] = field(default_factory=list)
    shape: str | None = None  # the --shape pod, when headroom counts it instead of one unit
    shape_headroom: Headroom | None = None


class CapacityView:
    """Usage, pending pods and headroom of a cluster, updated one object change at a time."""

    def __init__(
        self,
        gates: FeatureGates,
        strategy: Strategy = "binpack",
        *,
        on_usage_change: Callable[[str, str], None] | None = None,
        with_headroom: bool = True,
    ) -> None:
        self.gates = gates
        self.headroom = HeadroomEngine(gates, strategy) if with_headroom else None
        # one allocator core for both halves: slices converted and selectors evaluated once
        core = self.headroom.cluster if self.headroom is not None else None
        self.usage = UsageBook(gates, cluster=core, on_change=on_usage_change)
        self._allocations: dict[Key, AllocationResult] = {}
        self._pending: dict[Key, tuple[str, ...]] = {}  # pending pod -> the extended resources it asks for

    # --- inputs --------------------------------------------------------------------------------------------

    # The headroom half updates the shared core first; the usage book then reads it.

    def load(
        self,
        *,
        classes: Iterable[DeviceClass] = (),
        slices: Iterable[ResourceSlice] = (),
        nodes: Iterable[Node] = (),
        claims: Iterable[ResourceClaim] = (),
        pods: Iterable[Pod] = (),
    ) -> None:
        """A whole set of objects (a dump, a first list), in the order the figures need: classes and slices
        before the nodes, claims and pods that refer to them."""
        for c in classes:
            self.upsert_class(c)
        for s in slices:
            self.upsert_slice(s)
        for n in nodes:
            self.upsert_node(n)
        for claim in claims:
            self.upsert_claim(claim)
        for pod in pods:
            self.upsert_pod(pod)

    def upsert_class(self, model: DeviceClass) -> None:
        if self.headroom is not None:
            self.headroom.upsert_class(model)
        self.usage.upsert_class(model)

    def delete_class(self, name: str) -> None:
        if self.headroom is not None:
            self.headroom.delete_class(name)
        self.usage.delete_class(name)

    def upsert_slice(self, model: ResourceSlice) -> None:
        if self.headroom is not None:
            self.headroom.upsert_slice(model)
        self.usage.upsert_slice(model)

    def delete_slice(self, name: str) -> None:
        if self.headroom is not None:
            self.headroom.delete_slice(name)
        self.usage.delete_slice(name)

    def upsert_node(self, model: Node) -> None:
        if self.headroom is not None:
            self.headroom.upsert_node(model)

    def delete_node(self, name: str) -> None:
        if self.headroom is not None:
            self.headroom.delete_node(name)

    def upsert_claim(self, claim: ResourceClaim) -> None:
        """A claim's allocation, as it now stands (none: deallocated); the difference is applied."""
        key = (claim.metadata.namespace or "default", claim.metadata.name)
        self.set_allocation(key, claim.status.allocation if claim.status is not None else None)

    def set_allocation(self, key: Key, allocation: AllocationResult | None) -> None:
        """The allocation of claim `key` (namespace, name) now (None: not allocated, or deleted)."""
        old = self._allocations.get(key)
        if old is not None and allocation is not None and old == allocation:
            return
        self.delete_claim(key)
        if allocation is not None:
            self._allocations[key] = allocation
            if self.headroom is not None:
                self.headroom.add_allocation(allocation)  # into the shared core first: the book reads it
            self.usage.add_allocation(allocation)

    def delete_claim(self, key: Key) -> None:
        old = self._allocations.pop(key, None)
        if old is not None:
            if self.headroom is not None:
                self.headroom.remove_allocation(old)
            self.usage.remove_allocation(old)

    def upsert_pod(self, pod: Pod) -> None:
        key = (pod.namespace, pod.name)
        self._pending.pop(key, None)
        if pod.status is not None and pod.status.phase in _TERMINAL:
            self.delete_pod(key)
            return
        if not pod.spec.node_name:
            if not pod.metadata.deletion_timestamp:
                self._pending[key] = tuple(scalar_requests(pod))
            if self.headroom is not None:
                self.headroom.delete_pod(key)
            return
        if self.headroom is not None:
            self.headroom.upsert_pod(pod)

    def delete_pod(self, key: Key) -> None:
        self._pending.pop(key, None)
        if self.headroom is not None:
            self.headroom.delete_pod(key)

    # --- answers -------------------------------------------------------------------------------------------

    def pending_by_class(self) -> dict[str, int]:
        """Pending pods per class their extended resources map to (a pod asking for two counts in both)."""
        counts: dict[str, int] = {}
        resolve = self.headroom.resolver.resolve if self.headroom is not None else None
        by_resource = {u.resource: u.name for u in self.usage.classes.values()}
        for resources in self._pending.values():
            seen = set()
            for resource in resources:
                name: str | None
                if resolve is not None:
                    resolved = resolve(resource)
                    name = resolved.name if resolved is not None else None
                else:
                    name = by_resource.get(resource)
                if name is not None and name not in seen:
                    seen.add(name)
                    counts[name] = counts.get(name, 0) + 1
        return counts

    def class_headroom(self, class_name: str) -> Headroom | None:
        """Headroom for one unit of the class's extended resource (None without the headroom half)."""
        unit = self.usage.classes.get(class_name)
        if self.headroom is None or unit is None:
            return None
        resolved = self.headroom.resolver.resolve(unit.resource)
        if resolved is None or resolved.name != class_name:
            return None  # another class wins the name: pods asking for it never reach this class
        return self.headroom.headroom(unit_pod(unit.resource))

    def report(self, *, headroom: bool = True, shape: Pod | None = None) -> Report:
        """Rows per class (by name) and per (node, class); `shape`: also how many of that pod fit (raises
        ShapeError for a shape that cannot be counted)."""
        pending = self.pending_by_class()
        classes: list[ClassRow] = []
        nodes: list[NodeRow] = []
        for name in sorted(self.usage.classes):
            unit = self.usage.classes[name]
            figures = self.usage.by_class.get(name) or Figures()
            room = self.class_headroom(name) if headroom else None
            classes.append(
                ClassRow(
                    name,
                    unit.resource,
                    figures.total,
                    figures.used,
                    figures.devices,
                    pending.get(name, 0),
                    room,
                    unit.problem,
                )
            )
            for node, f in self.usage.by_node.get(name, {}).items():
                nodes.append(NodeRow(node, name, unit.resource, f.total, f.used, f.devices))
        nodes.sort(key=lambda r: (r.node, r.class_name))
        shape_room = None
        if shape is not None:
            if self.headroom is None:
                raise ShapeError("headroom is not kept by this view")
            shape_room = self.headroom.headroom(shape)
        return Report(classes, nodes, shape.name if shape is not None else None, shape_room)
