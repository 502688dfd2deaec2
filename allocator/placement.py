"""Pod placement: node predicates, then DRA allocation on each feasible node, then scoring and the choice.

`Placer` gives exactly what the naive loop "evaluate every node, allocate on every feasible one, take the
best score (ties: smaller node name)" gives, without repeating work that cannot have changed: a node's
evaluation for one pod shape depends only on that node's pods and on the devices it sees, so after a commit
only that node is re-evaluated (every node when the committed devices are not node-local). Per shape, feasible
nodes sit in a heap keyed by score. `Placer(..., naive=True)` runs the naive loop (the equivalence tests'
reference).
"""

from __future__ import annotations

import heapq
import json
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Protocol

from allocator.cluster import Allocation, NodeInfo
from allocator.ids import DeviceID
from allocator.nodeports import REASON_PORTS, HostPort, host_ports
from allocator.podfeatures import hold
from allocator.podindex import PodIndex
from allocator.predicates import (
    CPU,
    MEMORY,
    NodeUsage,
    allocatable_vector,
    fit_reasons,
    fit_vector,
    node_selector_matches,
    pod_requests,
    static_reasons,
)
from allocator.synthesis import (
    ExtendedOutcome,
    dra_resources_on_node,
    scalar_requests,
    synthesize_for_resources,
)
from allocator.topologyfilters import TopologyFilters, topology_filters
from resourceapi.core_v1 import Container, Node, Pod, PodExtendedResourceClaimStatus
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.names import generate_name
from resourceapi.quantity import Quantity
from resourceapi.resource_v1 import (
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
    ResourceSlice,
)

Strategy = Literal["binpack", "spread"]
STRATEGIES: tuple[Strategy, ...] = ("binpack", "spread")
REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
REASON_CLAIM_NOT_ON_NODE = "resourceclaim not available on the node"
NO_NODES_MESSAGE = "no nodes available to schedule pods"
_GLOBAL = ""  # change-log marker: every node may have changed
_MAX_SHAPES = 64  # pod shapes whose per-node evaluations are kept (LRU)
_TERMINAL = ("Succeeded", "Failed")  # pods that no longer hold node resources


class AllocatorCore(Protocol):
    """What placement needs of `allocator.cluster.Cluster`."""

    def allocate(self, node: NodeInfo, claims: Sequence[ResourceClaim]) -> Allocation: ...

    def commit(self, claim: ResourceClaim, result: AllocationResult) -> None: ...

    def device_capacity(self, device: DeviceID) -> Mapping[str, tuple[Quantity, Quantity]]: ...


def fit_error_message(num_nodes: int, reasons: Iterable[Sequence[str]]) -> str:
    """The scheduler's FitError text: `0/N nodes are available: <count reason, ...>.` sorted as strings."""
    if num_nodes == 0:
        return NO_NODES_MESSAGE
    counts: Counter[str] = Counter()
    for rs in reasons:
        counts.update(rs)
    return _format_counts(num_nodes, counts)


def _format_counts(num_nodes: int, counts: Mapping[str, int]) -> str:
    if num_nodes == 0:
        return NO_NODES_MESSAGE
    parts = sorted(f"{n} {r}" for r, n in counts.items() if n > 0)
    return f"0/{num_nodes} nodes are available: " + ", ".join(parts) + "."


@dataclass
class Placement:
    """The decision for one pod. `result`: bound | unschedulable | error, or gated | unsupported for a pod
    never evaluated (allocator/podfeatures.py)."""

    pod: Pod
    result: str
    reason: str = ""
    node: str | None = None
    claim: ResourceClaim | None = None  # the synthesized claim (status.allocation once committed)
    extended: ExtendedOutcome | None = None
    user_claims: list[ResourceClaim] = field(default_factory=list)  # the pod's own claims, allocated here
    allocation: list[AllocationResult] = field(
        default_factory=list
    )  # in claim order: user claims, then `claim`
    vector: dict[str, int] = field(default_factory=dict)

    @property
    def extended_status(self) -> PodExtendedResourceClaimStatus | None:
        if self.claim is None or self.extended is None:
            return None
        return self.extended.status(self.claim.metadata.name)


@dataclass
class _Eval:
    """One node's evaluation for one pod shape."""

    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    key: tuple[Any, ...] | None = None  # score key when feasible (smaller is better)
    needs: tuple[str, ...] = ()
    results: list[AllocationResult] = field(default_factory=list)
    early: bool = False  # failed before the inter-pod filters (node-only plugins, NodePorts, resource fit)


@dataclass
class _Pod:
    """A pod prepared for evaluation: its shape key and the values every node evaluation uses."""

    pod: Pod
    key: str
    vector: dict[str, int]
    scalars: dict[str, int]
    pending: list[ResourceClaim]
    allocated: list[ResourceClaim]
    problem: str | None = None
    ports: list[HostPort] = field(default_factory=list)  # host ports wanted (NodePorts)


@dataclass
class _Shape:
    """Cached evaluations of one pod shape: per node, a score heap of feasible nodes, reasons, errors."""

    seq: int = 0
    evals: dict[str, _Eval] = field(default_factory=dict)
    version: dict[str, int] = field(default_factory=dict)
    heap: list[tuple[tuple[Any, ...], str, int]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    errors: set[str] = field(default_factory=set)
    static: dict[str, list[str]] = field(default_factory=dict)
    synth: dict[tuple[str, ...], ExtendedOutcome] = field(default_factory=dict)


class Placer:
    """Places pods one at a time on a set of nodes, reusing one allocator core and its committed state."""

    def __init__(
        self,
        core: AllocatorCore,
        gates: FeatureGates,
        resolver: ExtendedResourceResolver,
        nodes: Iterable[Node],
        slices: Iterable[ResourceSlice] = (),
        running_pods: Iterable[Pod] = (),
        strategy: Strategy = "binpack",
        naive: bool = False,
        index: PodIndex | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
        self.core = core
        self.gates = gates
        self.resolver = resolver
        self.strategy: Strategy = strategy
        self.naive = naive
        self._nodes: dict[str, Node] = {n.name: n for n in sorted(nodes, key=lambda n: n.name)}
        self._names = list(self._nodes)
        self._infos = {name: NodeInfo(name, dict(n.labels)) for name, n in self._nodes.items()}
        self._alloc = {name: allocatable_vector(n) for name, n in self._nodes.items()}
        self._usage: dict[str, NodeUsage] = {name: NodeUsage() for name in self._nodes}
        running_pods = list(running_pods)
        # What the inter-pod filters see: by default these nodes and their pods; simulate --node passes
        # every node, since spreading and affinity count pods beyond the candidate nodes.
        self._index = index if index is not None else PodIndex.build(self._nodes.values(), running_pods)
        for p in running_pods:
            if p.spec.node_name in self._usage and (p.status is None or p.status.phase not in _TERMINAL):
                self._usage[p.spec.node_name].add(fit_vector(pod_requests(p)))
        self._local_pools = _node_local_pools(slices)
        self._changes: list[str] = []
        self._shapes: OrderedDict[str, _Shape] = OrderedDict()
        self._claims: dict[tuple[str, str], ResourceClaim] = {}

    # --- public ---------------------------------------------------------------------------------------------

    @property
    def node_names(self) -> list[str]:
        return list(self._names)

    def place(self, pod: Pod, claims: Sequence[ResourceClaim] = ()) -> Placement:
        """Decide for `pod` (its own ResourceClaims in `claims`, in spec.resourceClaims order); no commit."""
        held = hold(pod)
        if held is not None:
            return Placement(pod, held.result, held.reason)
        prepared = self._prepare(pod, claims)
        if prepared.problem is not None:
            return Placement(pod, "error", prepared.problem)
        if self.naive:
            shape = _Shape()
            for name in self._names:
                self._store(shape, name, self._evaluate(prepared, shape, name))
        else:
            shape = self._shape(prepared)
        topology = topology_filters(pod, self._index)
        if topology is not None:
            return self._place_filtered(prepared, shape, topology)
        if shape.errors:
            first = min(shape.errors)
            return Placement(pod, "error", shape.evals[first].error or "", vector=prepared.vector)
        best = self._best(shape)
        if best is None:
            return Placement(
                pod, "unschedulable", _format_counts(len(self._names), shape.counts), vector=prepared.vector
            )
        return self._bound(prepared, shape, best)

    def _place_filtered(self, prepared: _Pod, shape: _Shape, topology: TopologyFilters) -> Placement:
        """PodTopologySpread and InterPodAffinity over the shape's evaluations, which never depend on other
        nodes' pods (so they stay cached): a node that failed before these filters keeps its reasons, one that
        fails them gets theirs, and the rest keep their DynamicResources outcome, as the default profile's
        order runs them."""
        counts: Counter[str] = Counter()
        errors: list[str] = []
        best: tuple[tuple[Any, ...], str] | None = None
        for name in self._names:
            ev = shape.evals[name]
            if ev.early:
                counts.update(ev.reasons)
                continue
            reasons = topology.reasons(name)
            if reasons:
                counts.update(reasons)
            elif ev.error is not None:
                errors.append(name)
            elif ev.key is None:
                counts.update(ev.reasons)
            elif best is None or ev.key < best[0]:
                best = (ev.key, name)
        pod = prepared.pod
        if errors:
            return Placement(pod, "error", shape.evals[min(errors)].error or "", vector=prepared.vector)
        if best is None:
            return Placement(
                pod, "unschedulable", _format_counts(len(self._names), counts), vector=prepared.vector
            )
        return self._bound(prepared, shape, best[1])

    def _bound(self, prepared: _Pod, shape: _Shape, best: str) -> Placement:
        pod = prepared.pod
        ev = shape.evals[best]
        placement = Placement(pod, "bound", node=best, vector=prepared.vector)
        placement.allocation = [r.model_copy(deep=True) for r in ev.results]
        placement.user_claims = [c.model_copy(deep=True) for c in prepared.pending]
        if ev.needs:
            outcome = synthesize_for_resources(pod, list(ev.needs), self.resolver, self.gates)
            placement.extended = outcome
            placement.claim = outcome.claim
        return placement

    def commit(self, placement: Placement, claim_name: str | None = None) -> None:
        """Make a `bound` placement count: allocations committed, node usage updated.

        The synthesized claim gets `claim_name` (default: a name generated from its generateName, as the API
        server would) and `status.allocation` + `reservedFor`; the pod's own claims get their allocation too.
        """
        if placement.result != "bound" or placement.node is None:
            return
        claims = list(placement.user_claims)
        if placement.claim is not None:
            claim = placement.claim
            claim.metadata.name = claim_name or generate_name(claim.metadata.generate_name or "")
            claims.append(claim)
        global_change = False
        for claim, result in zip(claims, placement.allocation, strict=True):
            claim.status = ResourceClaimStatus(
                allocation=result,
                reserved_for=[
                    ResourceClaimConsumerReference(
                        resource="pods", name=placement.pod.name, uid=placement.pod.metadata.uid or ""
                    )
                ],
            )
            self.core.commit(claim, result)
            if claim is not placement.claim:  # the pod's own claims: later pods may share them
                self._claims[(claim.metadata.namespace or "default", claim.metadata.name)] = claim
            for dev in (result.devices.results or []) if result.devices else []:
                if self._local_pools.get((dev.driver, dev.pool)) != placement.node:
                    global_change = True
        self._usage[placement.node].add(placement.vector)
        self._index.add(placement.pod, placement.node)
        self._changes.append(_GLOBAL if global_change else placement.node)

    # --- evaluation -----------------------------------------------------------------------------------------

    def _prepare(self, pod: Pod, claims: Sequence[ResourceClaim]) -> _Pod:
        vector = fit_vector(pod_requests(pod))
        scalars = scalar_requests(pod) if self.resolver.enabled else {}
        pending: list[ResourceClaim] = []
        allocated: list[ResourceClaim] = []
        ids: list[Any] = []
        problem = None
        for rc in pod.spec.resource_claims or []:
            if rc.resource_claim_template_name:
                problem = (
                    f"pod {pod.namespace}/{pod.name}: resourceClaims {rc.name}: ResourceClaimTemplates "
                    "are not supported here; reference a ResourceClaim"
                )
        for c in claims:
            key = (c.metadata.namespace or "default", c.metadata.name)
            current = self._claims.get(key, c)
            if current.status is not None and current.status.allocation is not None:
                allocated.append(current)
                ids.append([*key, "allocated"])
            else:
                pending.append(current)
                ids.append([*key, current.spec.to_api()])
        spec = pod.spec
        shape_doc = {
            "ns": pod.namespace,
            "nodeName": spec.node_name,
            "nodeSelector": spec.node_selector,
            "affinity": spec.affinity.to_api() if spec.affinity else None,
            "tolerations": [t.to_api() for t in spec.tolerations or []],
            "init": [_container_shape(c) for c in spec.init_containers or []],
            "containers": [_container_shape(c) for c in spec.containers],
            "overhead": {k: str(v) for k, v in (spec.overhead or {}).items()},
            "resources": spec.resources.to_api() if spec.resources else None,
            "claims": ids,
        }
        ports = host_ports(pod)
        shape_doc["ports"] = ports
        shape_key = json.dumps(shape_doc, sort_keys=True, default=str)
        return _Pod(pod, shape_key, vector, scalars, pending, allocated, problem, ports=ports)

    def _shape(self, prepared: _Pod) -> _Shape:
        shape = self._shapes.get(prepared.key)
        if shape is None:
            shape = _Shape(seq=len(self._changes))
            for name in self._names:
                self._store(shape, name, self._evaluate(prepared, shape, name))
            self._shapes[prepared.key] = shape
            if len(self._shapes) > _MAX_SHAPES:
                self._shapes.popitem(last=False)
            return shape
        self._shapes.move_to_end(prepared.key)
        if shape.seq < len(self._changes):
            dirty = set(self._changes[shape.seq :])
            shape.seq = len(self._changes)
            names = self._names if _GLOBAL in dirty else sorted(dirty)
            for name in names:
                self._store(shape, name, self._evaluate(prepared, shape, name))
        return shape

    def _store(self, shape: _Shape, name: str, ev: _Eval) -> None:
        old = shape.evals.get(name)
        if old is not None:
            shape.counts.subtract(old.reasons)
        shape.evals[name] = ev
        shape.counts.update(ev.reasons)
        version = shape.version.get(name, 0) + 1
        shape.version[name] = version
        if ev.error is not None:
            shape.errors.add(name)
        else:
            shape.errors.discard(name)
        if ev.key is not None:
            heapq.heappush(shape.heap, (ev.key, name, version))

    def _best(self, shape: _Shape) -> str | None:
        heap = shape.heap
        while heap:
            _, name, version = heap[0]
            if shape.version.get(name) == version and shape.evals[name].key is not None:
                return name
            heapq.heappop(heap)
        return None

    def _evaluate(self, p: _Pod, shape: _Shape, name: str) -> _Eval:
        node = self._nodes[name]
        static = shape.static.get(name)
        if static is None:
            static = static_reasons(p.pod, node)
            shape.static[name] = static
        if static:
            return _Eval(reasons=static, early=True)
        if p.ports and self._index.ports_conflict(name, p.ports):
            return _Eval(reasons=[REASON_PORTS], early=True)
        allocatable = node.status.allocatable if node.status else None
        reasons = fit_reasons(
            p.vector,
            self._alloc[name],
            self._usage[name],
            lambda r: r in p.scalars and self.resolver.delegated_to_dra(r, allocatable),
        )
        if reasons:
            return _Eval(reasons=reasons, early=True)
        for c in p.allocated:
            sel = c.status.allocation.node_selector if c.status and c.status.allocation else None
            if sel is not None and not node_selector_matches(sel, node.labels, name):
                return _Eval(reasons=[REASON_CLAIM_NOT_ON_NODE])
        needs: tuple[str, ...] = ()
        claims = list(p.pending)
        if p.scalars:
            dra, reason = dra_resources_on_node(p.scalars, allocatable, self.resolver)
            if reason is not None:
                return _Eval(reasons=[reason])
            needs = tuple(sorted(dra))
            if needs:
                outcome = shape.synth.get(needs)
                if outcome is None:
                    outcome = synthesize_for_resources(p.pod, list(needs), self.resolver, self.gates)
                    shape.synth[needs] = outcome
                if outcome.reason is not None:
                    return _Eval(reasons=[outcome.reason])
                if outcome.claim is None:
                    needs = ()
                else:
                    claims.append(outcome.claim)
        results: list[AllocationResult] = []
        if claims:
            alloc = self.core.allocate(self._infos[name], claims)
            if alloc.error is not None:
                if alloc.node_failure:
                    return _Eval(reasons=[alloc.error])
                return _Eval(error=alloc.error)
            if alloc.results is None:
                return _Eval(reasons=[REASON_CANNOT_ALLOCATE])
            results = alloc.results
        return _Eval(key=self._score(name, p.vector, results), needs=needs, results=results)

    # --- scoring --------------------------------------------------------------------------------------------

    def _score(
        self, name: str, vector: Mapping[str, int], results: Sequence[AllocationResult]
    ) -> tuple[Any, ...]:
        """binpack: least capacity left on the allocated devices, then on cpu/memory; spread: the most."""
        dra = self._device_remaining(results)
        res = self._resource_remaining(name, vector)
        if self.strategy == "spread":
            return (-dra, -res, name)
        return (dra, res, name)

    def _device_remaining(self, results: Sequence[AllocationResult]) -> Fraction:
        """Sum over the allocated shared devices of their capacity fraction left after this allocation."""
        taking: dict[DeviceID, dict[str, Fraction]] = {}
        for result in results:
            for dev in (result.devices.results or []) if result.devices else []:
                if not dev.consumed_capacity:
                    continue
                acc = taking.setdefault(DeviceID(dev.driver, dev.pool, dev.device), {})
                for cap, q in dev.consumed_capacity.items():
                    acc[cap] = acc.get(cap, Fraction(0)) + q.value
        total = Fraction(0)
        for device, consumed in taking.items():
            fractions: list[Fraction] = []
            for cap, (used, value) in self.core.device_capacity(device).items():
                if value.value <= 0:
                    continue
                left = value.value - used.value - consumed.get(cap, Fraction(0))
                fractions.append(left / value.value)
            if fractions:
                total += sum(fractions, Fraction(0)) / len(fractions)
        return total

    def _resource_remaining(self, name: str, vector: Mapping[str, int]) -> Fraction:
        alloc = self._alloc[name]
        if alloc is None:
            return Fraction(0)
        usage = self._usage[name]
        parts = [
            Fraction(alloc[r] - usage.requested.get(r, 0) - vector.get(r, 0), alloc[r])
            for r in (CPU, MEMORY)
            if alloc.get(r, 0) > 0
        ]
        return sum(parts, Fraction(0)) / len(parts) if parts else Fraction(0)


def _container_shape(c: Container) -> list[Any]:
    """What of a container placement reads: its name (request mappings), restart policy and requests."""
    return [c.name, c.restart_policy, {k: str(v) for k, v in (c.resources.requests or {}).items()}]


def _node_local_pools(slices: Iterable[ResourceSlice]) -> dict[tuple[str, str], str]:
    """(driver, pool) -> node, for pools whose every slice names that one node (other pools are shared)."""
    seen: dict[tuple[str, str], str | None] = {}
    for s in slices:
        key = (s.spec.driver, s.spec.pool.name)
        node = s.spec.node_name or None
        if key in seen and seen[key] != node:
            seen[key] = None
        else:
            seen.setdefault(key, node)
    return {k: v for k, v in seen.items() if v}
