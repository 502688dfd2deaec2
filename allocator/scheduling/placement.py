"""Pod placement: node predicates, then DRA allocation on each feasible node, then scoring and the choice.

The shape of kube-scheduler's cycle (pkg/scheduler/schedule_one.go `findNodesThatPassFilters`,
`numFeasibleNodesToFind`): nodes are checked in order from where the previous pod's search stopped, until
enough feasible nodes are found (by default every node: `percentage_of_nodes_to_score=100`), and the best
scored one wins (ties: the smaller node name). A node is checked cheaply first (predicates, then "does every
request have a device it could take"), and only then allocated; API results are built for the chosen node
only.

`Placer` gives exactly the decisions of the naive loop "evaluate each checked node afresh" (`naive=True`,
the equivalence tests' reference) without repeating work that cannot have changed: a node's evaluation for
one pod shape (the pod's spec and its claims' specs, not their names, so pods from one template share it)
depends only on that node's pods and devices, so after a commit only that node is evaluated again (every
node when the committed devices are not node-local, or when the allocator core changed under the placer).
In the default mode the feasible nodes of a shape sit in a heap keyed by score.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, Literal, Protocol

from allocator.scheduling.drascore import claims_score, result_requests, tells_apart
from allocator.scheduling.imagelocality import ImageStates, pod_images
from allocator.scheduling.interpodscore import has_preferred_pod_affinity, interpod_scores
from allocator.scheduling.nodefeatures import REASON_DECLARED_FEATURES, declares, required_features
from allocator.scheduling.nodeports import REASON_PORTS, HostPort, host_ports
from allocator.scheduling.podfeatures import hold
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.predicates import (
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
from allocator.scheduling.resourcescores import balanced_allocation, least_allocated
from allocator.scheduling.scoring import (
    BALANCED_ALLOCATION,
    DYNAMIC_RESOURCES,
    IMAGE_LOCALITY,
    INTER_POD_AFFINITY,
    NODE_RESOURCES_FIT,
    POD_TOPOLOGY_SPREAD,
    NodeScore,
    default_normalize_score,
    has_prefer_no_schedule_taint,
    has_preferred_node_affinity,
    prioritize,
)
from allocator.scheduling.spreadscore import soft_constraints, spread_scores
from allocator.scheduling.synthesis import (
    ExtendedOutcome,
    dra_resources_on_node,
    for_pod,
    scalar_requests,
    synthesize_for_resources,
)
from allocator.scheduling.topologyfilters import TopologyFilters, topology_filters
from allocator.scheduling.volumes import (
    VOLUME_BINDING,
    PodVolumes,
    PreFilterFailure,
    Storage,
    VolumeCheck,
    prefilter,
)
from allocator.structured.cluster import (
    Allocation,
    Decision,
    DeviceOrder,
    DeviceTake,
    NodeInfo,
    Picks,
    Verdict,
    takes_of,
)
from resourceapi.api.core_v1 import Container, Node, Pod, PodExtendedResourceClaimStatus
from resourceapi.api.resource_v1 import (
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
    ResourceSlice,
)
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import DRA_PRIORITIZED_LIST, FeatureGates
from resourceapi.machinery.names import generate_name

Strategy = Literal["binpack", "spread", "least-allocated"]
STRATEGIES: tuple[Strategy, ...] = ("binpack", "spread", "least-allocated")
_DEVICE_ORDER: dict[Strategy, DeviceOrder] = {
    "binpack": "most-used",
    "spread": "least-used",
    "least-allocated": "first-fit",
}
REASON_CANNOT_ALLOCATE = "cannot allocate all claims"
REASON_CLAIM_NOT_ON_NODE = "resourceclaim not available on the node"
NO_NODES_MESSAGE = "no nodes available to schedule pods"
# kube-scheduler's minFeasibleNodesToFind and minFeasibleNodesPercentageToFind (pkg/scheduler/schedule_one.go)
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
_GLOBAL = ""  # change-log marker: every node may have changed
_SERIALS = itertools.count(1)
_MAX_SHAPES = 64  # pod shapes whose per-node evaluations are kept (LRU)
_MAX_CHANGES = 4096  # change-log entries kept before every shape catches up and the log starts over
_TERMINAL = ("Succeeded", "Failed")  # pods that no longer hold node resources


class AllocatorCore(Protocol):
    """What placement needs of `allocator.structured.cluster.Cluster`."""

    generation: int  # changes whenever classes, slices or committed allocations change

    def allocate(
        self, node: NodeInfo, claims: Sequence[ResourceClaim], *, order: DeviceOrder = ...
    ) -> Allocation: ...

    def decide(
        self,
        node: NodeInfo,
        claims: Sequence[ResourceClaim],
        *,
        order: DeviceOrder = ...,
        prefilter: bool = ...,
    ) -> Decision: ...

    def results(self, picks: Picks) -> list[AllocationResult]: ...

    def allocated_share(self, node: NodeInfo, takes: Iterable[DeviceTake] = ...) -> Fraction: ...

    def commit(self, claim: ResourceClaim, result: AllocationResult) -> None: ...

    def release(self, result: AllocationResult) -> None: ...


class PlacementResult(StrEnum):
    """The decision for one pod, as the scheduler ends a cycle: bound, unschedulable (a FitError: the pod
    waits for the cluster to change) or error (a Filter error: the pod fails until its input changes)."""

    BOUND = "bound"
    UNSCHEDULABLE = "unschedulable"
    ERROR = "error"
    # pods never evaluated: scheduling gates not yet removed, or a pod feature placement does not model
    GATED = "gated"
    UNSUPPORTED = "unsupported"


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind: every node below 100 nodes; else `percentage` of them (0:
    adaptive, 50% minus 1% per 125 nodes, at least 5%), but at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND, 50 - num_all_nodes // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, num_all_nodes * percentage // 100)


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
    """The decision for one pod; `allocation` and the claims are set only when `result` is BOUND (GATED and
    UNSUPPORTED: a pod never evaluated, allocator/scheduling/podfeatures.py)."""

    pod: Pod
    result: PlacementResult
    reason: str = ""
    node: str | None = None
    claim: ResourceClaim | None = None  # the synthesized claim (status.allocation once committed)
    extended: ExtendedOutcome | None = None
    user_claims: list[ResourceClaim] = field(default_factory=list)  # the pod's own claims, allocated here
    allocation: list[AllocationResult] = field(
        default_factory=list
    )  # in claim order: user claims, then `claim`
    vector: dict[str, int] = field(default_factory=dict)
    volumes: PodVolumes | None = None  # the PVs to bind and claims to provision (VolumeBinding's Reserve)

    @property
    def extended_status(self) -> PodExtendedResourceClaimStatus | None:
        if self.claim is None or self.extended is None:
            return None
        return self.extended.status(self.claim.metadata.name)


@dataclass(slots=True)
class _Eval:
    """One node's evaluation for one pod shape: feasible (`key` set), unschedulable (`reasons`) or `error`."""

    reasons: Sequence[str] = ()
    error: str | None = None
    key: tuple[Any, ...] | None = None  # score key when feasible (smaller is better)
    needs: tuple[str, ...] = ()
    picks: Picks | None = None  # the chosen devices (fast path)
    results: list[AllocationResult] | None = None  # built results (naive path)
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
    features: frozenset[str] = frozenset()  # declared node features needed (NodeDeclaredFeatures)


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
    pending: list[str] = field(default_factory=list)  # nodes to evaluate before the heap is used


@dataclass(slots=True)
class _Found:
    """What one cycle's node search found: the chosen node's evaluation, or an error node, or neither."""

    best: str | None = None
    error: str | None = None  # the node whose evaluation failed with an error
    counts: Counter[str] | None = None  # reasons of the nodes that failed, when the search counted them
    feasible: list[str] = field(default_factory=list)  # the feasible nodes the search found, in its order
    volume_error: str | None = None  # a volume filter failed with this error


class Placer:
    """Places pods one at a time on a set of nodes, reusing one allocator core and its committed state.

    `place(pod, claims)` decides (nothing changes), `commit(placement)` makes a bound decision count. The core
    may also change between cycles (slices, classes, allocations committed or released by someone else): the
    next `place` notices through `core.generation` and evaluates every node again.
    """

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
        *,
        percentage_of_nodes_to_score: int = 100,
        storage: Storage | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
        if not 0 <= percentage_of_nodes_to_score <= 100:
            raise ValueError(
                f"percentage of nodes to score must be between 0 and 100, not {percentage_of_nodes_to_score}"
            )
        self.core = core
        self.gates = gates
        self.resolver = resolver
        self.strategy: Strategy = strategy
        self.naive = naive
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.storage = storage if storage is not None else Storage()  # what the volume plugins read
        self._order: DeviceOrder = _DEVICE_ORDER[strategy]
        self._nodes: dict[str, Node] = {n.name: n for n in sorted(nodes, key=lambda n: n.name)}
        self._names = list(self._nodes)
        self._position = {name: i for i, name in enumerate(self._names)}
        self._to_find = num_feasible_nodes_to_find(percentage_of_nodes_to_score, len(self._names))
        self._eager = self._to_find >= len(self._names)  # every node is examined: heaps of all nodes
        self._next_start = 0  # kube-scheduler's nextStartNodeIndex
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
        # TaintToleration tells nodes apart only when some node has a PreferNoSchedule taint
        self._prefer_taints = any(has_prefer_no_schedule_taint(n) for n in self._nodes.values())
        self._images = ImageStates.of(self._nodes.values())  # what ImageLocality reads
        self._changes: list[str] = []
        self._folds = 0  # times the change log started over (a mark from before cannot be read any more)
        self.serial = next(_SERIALS)  # tells this placer from any other (its versions are its own)
        self._global_seq = 0  # changes noted for every node, and per node (`node_version`)
        self._node_seq: dict[str, int] = {}
        self._generation = core.generation
        self._shapes: OrderedDict[str, _Shape] = OrderedDict()
        self._claims: dict[tuple[str, str], ResourceClaim] = {}

    # --- public ---------------------------------------------------------------------------------------------

    def place(self, pod: Pod, claims: Sequence[ResourceClaim] = ()) -> Placement:
        """Decide for `pod` (its own ResourceClaims in `claims`, in spec.resourceClaims order); no commit."""
        held = hold(pod)
        if held is not None:
            return Placement(pod, PlacementResult(held.result), held.reason)
        prepared = self._prepare(pod, claims)
        if prepared.problem is not None:
            return Placement(pod, PlacementResult.ERROR, prepared.problem)
        if self.core.generation != self._generation:  # the core changed under us: every node may differ
            self._generation = self.core.generation
            self._note(_GLOBAL)
        volumes = prefilter(pod, self.storage, self._index.pods)
        if isinstance(volumes, PreFilterFailure):
            if volumes.error:
                return Placement(pod, PlacementResult.ERROR, volumes.message, vector=prepared.vector)
            message = (
                f"0/{len(self._names)} nodes are available: {volumes.message}."
                if self._names
                else NO_NODES_MESSAGE
            )
            return Placement(pod, PlacementResult.UNSCHEDULABLE, message, vector=prepared.vector)
        # PodTopologySpread and InterPodAffinity depend on other nodes' pods: applied over the evaluations
        # (which never do), in the default profile's order
        topology = topology_filters(pod, self._index)
        scored = self._scored(prepared) or (volumes is not None and volumes.scored)
        if self.naive:
            shape = _Shape()
            found = self._walk(
                lambda name: self._stored(shape, name, self._evaluate(prepared, shape, name, True)),
                topology=topology,
                volumes=volumes,
            )
        else:
            shape = self._shape(prepared)
            if self._eager and topology is None and not scored and volumes is None:
                found = self._best_of_all(prepared, shape)
            else:
                shape.pending.clear()  # the walk evaluates what it needs
                found = self._walk(
                    lambda name: self._stored(shape, name, self._evaluate(prepared, shape, name)),
                    shape.evals,
                    topology,
                    volumes,
                )
        if found.volume_error is not None:
            return Placement(pod, PlacementResult.ERROR, found.volume_error, vector=prepared.vector)
        if found.error is not None:
            # the message names the claims: evaluate that node again with this pod's own claims
            ev = self._evaluate(prepared, _Shape(), found.error, naive=True)
            return Placement(pod, PlacementResult.ERROR, ev.error or "", vector=prepared.vector)
        if scored and found.best is not None and len(found.feasible) > 1:
            found.best = self._choose(prepared, found.feasible, shape.evals, volumes)
        if found.best is None:
            return Placement(
                pod,
                PlacementResult.UNSCHEDULABLE,
                _format_counts(len(self._names), shape.counts if found.counts is None else found.counts),
                vector=prepared.vector,
            )
        placement = self._placement(prepared, shape, found.best, shape.evals[found.best])
        chosen = volumes.choice(found.best) if volumes is not None else None
        if chosen is not None:
            placement.volumes = chosen.assumed()
        return placement

    def place_on(self, pod: Pod, claims: Sequence[ResourceClaim], name: str) -> Placement:
        """Decide for `pod` on node `name` alone (preemption's fit check, and the nominated node tried
        first): every filter, no scoring, no change to where the next search starts; no commit."""
        held = hold(pod)
        if held is not None:
            return Placement(pod, PlacementResult(held.result), held.reason)
        prepared = self._prepare(pod, claims)
        if prepared.problem is not None:
            return Placement(pod, PlacementResult.ERROR, prepared.problem)
        shape = _Shape()
        outcome = self._filter_on(prepared, shape, name)
        if isinstance(outcome, Placement):
            return outcome
        ev, volumes = outcome
        placement = self._placement(prepared, shape, name, ev)
        chosen = volumes.choice(name) if volumes is not None else None
        if chosen is not None:
            placement.volumes = chosen.assumed()
        return placement

    def fit_check(self, pod: Pod, claims: Sequence[ResourceClaim]) -> Callable[[str], bool]:
        """Whether `place_on(pod, claims, name)` would bind, for many calls with one pod while pods and
        allocations change in between (preemption's dry run): the pod prepared once, its node-only filters
        and synthesized claim kept, no scoring and no placement built."""
        held = hold(pod)
        prepared = self._prepare(pod, claims) if held is None else None
        if prepared is None or prepared.problem is not None:
            return lambda name: False
        shape = _Shape()

        def fits(name: str) -> bool:
            return not isinstance(self._filter_on(prepared, shape, name, score=False), Placement)

        return fits

    def preemption_nodes(self, pod: Pod) -> list[str]:
        """The nodes preemption may help `pod` on, in search order: those whose node-only filters pass
        (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity fail UnschedulableAndUnresolvable
        upstream, which findCandidates' NodesForStatusCode(Unschedulable) leaves out)."""
        return [n for n in self._names if not static_reasons(pod, self._nodes[n])]

    def pod_independent(self, pod: Pod) -> bool:
        """Whether only resources, ports and DRA allocation decide where `pod` fits, so that other pods
        leaving a node never make it fit there no more: no inter-pod filter (spreading, pod affinity) and no
        volume filter applies to it."""
        return (
            topology_filters(pod, self._index) is None
            and prefilter(pod, self.storage, self._index.pods) is None
        )

    def node_version(self, name: str) -> tuple[int, int]:
        """How many changes were noted for node `name` and for every node: while it stays the same, so does
        what placing a pod there reads, as the evaluation caches assume (the inter-pod and volume filters
        aside: they read other nodes' pods, see `pod_independent`)."""
        if self.core.generation != self._generation:
            self._generation = self.core.generation
            self._note(_GLOBAL)
        return (self._global_seq, self._node_seq.get(name, 0))

    def shape_key(self, pod: Pod, claims: Sequence[ResourceClaim] = ()) -> str:
        """What the node-only evaluation of `pod` depends on in the pod (the shape caches' key)."""
        return self._prepare(pod, claims).key

    def _filter_on(
        self, prepared: _Pod, shape: _Shape, name: str, score: bool = True
    ) -> Placement | tuple[_Eval, VolumeCheck | None]:
        """place_on's filters on `name`: the feasible evaluation (and the volume check), else the failed
        placement."""
        pod = prepared.pod
        if self.core.generation != self._generation:
            self._generation = self.core.generation
            self._note(_GLOBAL)
        volumes = prefilter(pod, self.storage, self._index.pods)
        if isinstance(volumes, PreFilterFailure):
            result = PlacementResult.ERROR if volumes.error else PlacementResult.UNSCHEDULABLE
            return Placement(pod, result, volumes.message, vector=prepared.vector)
        ev = self._evaluate(prepared, shape, name, score=score)
        if volumes is not None and not ev.early:  # the volume filters run before the inter-pod ones
            outcome = volumes.filter(self._nodes[name])
            if outcome.error is not None:
                return Placement(pod, PlacementResult.ERROR, outcome.error, vector=prepared.vector)
            if outcome.reasons:
                ev = _Eval(reasons=list(outcome.reasons), early=True)
        topology = topology_filters(pod, self._index)
        if topology is not None and not ev.early:
            inter_pod = topology.reasons(name)
            if inter_pod:  # the inter-pod filters run before DynamicResources, as in the node search
                ev = _Eval(reasons=list(inter_pod))
        if ev.error is not None:
            return Placement(pod, PlacementResult.ERROR, ev.error, vector=prepared.vector)
        if ev.key is None:
            return Placement(
                pod,
                PlacementResult.UNSCHEDULABLE,
                _format_counts(1, Counter(ev.reasons)),
                vector=prepared.vector,
            )
        return ev, volumes

    def _placement(self, prepared: _Pod, shape: _Shape, name: str, ev: _Eval) -> Placement:
        """The bound placement on `name` from its evaluation: the allocation results and claims."""
        pod = prepared.pod
        placement = Placement(pod, PlacementResult.BOUND, node=name, vector=prepared.vector)
        if ev.results is not None:
            placement.allocation = ev.results
        elif ev.picks is not None:
            placement.allocation = self.core.results(ev.picks)
        # shallow copies: commit replaces their status and nothing else, so the inputs stay untouched
        placement.user_claims = [c.model_copy() for c in prepared.pending]
        if ev.needs:
            cached = shape.synth.get(ev.needs)
            if cached is not None:  # the claim the evaluation allocated for, with this pod's metadata
                outcome = for_pod(cached, pod)
            else:
                outcome = synthesize_for_resources(pod, list(ev.needs), self.resolver, self.gates)
            placement.extended = outcome
            placement.claim = outcome.claim
        return placement

    def commit(self, placement: Placement, claim_name: str | None = None) -> None:
        """Make a `bound` placement count: allocations committed, node usage updated.

        The synthesized claim gets `claim_name` (default: a name generated from its generateName, as the API
        server would) and `status.allocation` + `reservedFor`; the pod's own claims get their allocation too.
        """
        if placement.result is not PlacementResult.BOUND or placement.node is None:
            return
        claims = list(placement.user_claims)
        if placement.claim is not None:
            claim = placement.claim
            claim.metadata.name = claim_name or generate_name(claim.metadata.generate_name or "")
            claims.append(claim)
        if self.core.generation != self._generation:
            self._note(_GLOBAL)
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
        self._generation = self.core.generation
        if placement.volumes is not None:
            self.storage.assume(placement.volumes)
        self._usage[placement.node].add(placement.vector)
        self._index.add(placement.pod, placement.node)
        self._note(_GLOBAL if global_change else placement.node)

    # --- changes from elsewhere (a long-lived owner such as the binder's snapshot feeds them) ---------------

    def count_allocation(self, claim: ResourceClaim, result: AllocationResult) -> None:
        """An allocation made elsewhere counts from now on: the nodes of its devices are evaluated again."""
        self._core_change(result, lambda: self.core.commit(claim, result))

    def release_allocation(self, result: AllocationResult) -> None:
        """An allocation counted before (committed here or by `count_allocation`) no longer counts."""
        self._core_change(result, lambda: self.core.release(result))

    def _core_change(self, result: AllocationResult, apply: Callable[[], None]) -> None:
        if self.core.generation != self._generation:
            self._note(_GLOBAL)
        apply()
        self._generation = self.core.generation
        nodes = {
            self._local_pools.get((dev.driver, dev.pool))
            for dev in ((result.devices.results or []) if result.devices else [])
        }
        self._note(*(sorted(n for n in nodes if n) if None not in nodes else [_GLOBAL]))

    def slices_changed(self, slices: Iterable[ResourceSlice]) -> None:
        """The core's slices changed (`Cluster.upsert_slice`, `delete_slice`): which pools are node-local is
        read again, and every node is evaluated again (the core's generation says so)."""
        self._local_pools = _node_local_pools(slices)

    def node_slices_changed(self, slices: Iterable[ResourceSlice], nodes: Iterable[str]) -> None:
        """The core's slices changed only for node-local pools of `nodes` (`Cluster.upsert_slice` of a slice
        with that `spec.nodeName`, and nothing else since the last place or commit): only those nodes are
        evaluated again, not every node as `slices_changed` makes them."""
        self._local_pools = _node_local_pools(slices)
        if self.core.generation != self._generation:
            self._generation = self.core.generation
        self._note(*(n for n in nodes if n in self._nodes))

    def node_changed(self, node: Node) -> None:
        """A candidate node's object changed (a cordon, taints, allocatable): that node is evaluated again.
        Its labels must be unchanged (the inter-pod index keeps them); an unknown node is ignored."""
        name = node.name
        if name not in self._nodes:
            return
        self._nodes[name] = node
        self._infos[name] = NodeInfo(name, dict(node.labels))
        self._alloc[name] = allocatable_vector(node)
        self._prefer_taints = self._prefer_taints or has_prefer_no_schedule_taint(node)
        self._images.set_node(node)
        for shape in self._shapes.values():
            shape.static.pop(name, None)  # taints, unschedulable, selectors: read from the node again
        self._note(name)

    def pod_added(self, pod: Pod, node: str) -> None:
        """A pod placed elsewhere now holds `node` (unknown nodes and pods already counted are ignored)."""
        if node not in self._usage or self._index.holds(pod, node):
            return
        self._usage[node].add(fit_vector(pod_requests(pod)))
        self._index.add(pod, node)
        self._note(node)

    def pod_removed(self, pod: Pod, node: str) -> None:
        """A pod that held `node` is gone or finished (one not counted there is ignored)."""
        if node not in self._usage or not self._index.remove(pod, node):
            return
        self._usage[node].remove(fit_vector(pod_requests(pod)))
        self._note(node)

    def _note(self, *names: str) -> None:
        """Record changed nodes (`_GLOBAL`: every node). A long log is folded: every shape drops what changed
        since its last use, and the log starts over."""
        for name in names:
            if name == _GLOBAL:
                self._global_seq += 1
            else:
                self._node_seq[name] = self._node_seq.get(name, 0) + 1
        self._changes.extend(names)
        if len(self._changes) > _MAX_CHANGES:
            for shape in self._shapes.values():
                self._catch_up(shape)
                shape.seq = 0
            self._changes.clear()
            self._folds += 1

    def in_step(self) -> bool:
        """Whether every change of the core so far is noted here (its generation is the one last seen): then
        a change whose nodes are known may be noted for those nodes alone (`node_slices_changed`)."""
        return self.core.generation == self._generation

    def change_mark(self) -> tuple[int, int]:
        """A mark in the log of changed nodes, for `changed_since` (a cache kept beside the placer)."""
        return (self._folds, len(self._changes))

    def changed_since(self, mark: tuple[int, int]) -> set[str] | None:
        """The nodes noted as changed since `mark`; None when any node may have (a global change, a change
        of the core not noted yet, or a log started over since)."""
        folds, seq = mark
        if folds != self._folds or not self.in_step():
            return None
        names = set(self._changes[seq:])
        return None if _GLOBAL in names else names

    def node_usage(self, name: str) -> NodeUsage:
        """What the pods on node `name` request so far (running and committed pods), for diagnosis."""
        return self._usage[name]

    @property
    def nodes(self) -> list[Node]:
        """The candidate nodes, by name (for diagnosis)."""
        return list(self._nodes.values())

    @property
    def node_names(self) -> list[str]:
        """The candidate nodes' names, in the order the search visits them from its start."""
        return list(self._names)

    @property
    def index(self) -> PodIndex:
        """What the inter-pod filters see (for diagnosis)."""
        return self._index

    # --- the node search ------------------------------------------------------------------------------------

    def _walk(
        self,
        evaluate: Callable[[str], _Eval],
        cached: Mapping[str, _Eval] | None = None,
        topology: TopologyFilters | None = None,
        volumes: VolumeCheck | None = None,
    ) -> _Found:
        """findNodesThatPassFilters, one node at a time: from the previous stop, until enough feasible nodes
        are found or a node fails with an error; the best scored of the feasible ones wins. `cached`: valid
        evaluations, used instead of `evaluate`; `topology`: the inter-pod filters, run after the node-only
        plugins, NodePorts and resource fit, before DynamicResources."""
        names = self._names
        total = len(names)
        start = self._next_start
        best: tuple[tuple[Any, ...], str] | None = None
        feasible = failed = 0
        error: str | None = None
        counts: Counter[str] = Counter()
        found_names: list[str] = []
        get = (cached or {}).get
        for i in range(total):
            name = names[(start + i) % total]
            ev = get(name) or evaluate(name)
            if volumes is not None and not ev.early:
                outcome = volumes.filter(self._nodes[name])
                if outcome.error is not None:
                    return _Found(volume_error=outcome.error)
                if outcome.reasons:
                    counts.update(outcome.reasons)
                    failed += 1
                    continue
            if topology is not None and not ev.early:
                reasons = topology.reasons(name)
                if reasons:
                    counts.update(reasons)
                    failed += 1
                    continue
            if ev.error is not None:
                error = name
                break
            if ev.key is None:
                counts.update(ev.reasons)
                failed += 1
                continue
            feasible += 1
            found_names.append(name)
            if best is None or ev.key < best[0]:
                best = (ev.key, name)
            if feasible >= self._to_find:
                break
        if total:
            self._next_start = (start + feasible + failed) % total
        return _Found(
            best=None if error is not None or best is None else best[1],
            error=error,
            counts=counts,
            feasible=found_names,
        )

    def _best_of_all(self, p: _Pod, shape: _Shape) -> _Found:
        """Every node examined (the default): the same outcome as `_walk`, from the shape's heap."""
        for name in shape.pending:
            if name not in shape.evals:
                self._store(shape, name, self._evaluate(p, shape, name))
        shape.pending.clear()
        if len(shape.evals) < len(self._names):  # a walk that stopped early left some out
            for name in self._names:
                if name not in shape.evals:
                    self._store(shape, name, self._evaluate(p, shape, name))
        total = len(self._names)
        if shape.errors:
            start = self._next_start
            error = min(shape.errors, key=lambda n: (self._position[n] - start) % total)
            self._next_start = (start + (self._position[error] - start) % total) % total
            return _Found(error=error)
        heap = shape.heap
        while heap:
            _, name, version = heap[0]
            if shape.version.get(name) == version and shape.evals[name].key is not None:
                return _Found(best=name)
            heapq.heappop(heap)
        return _Found()

    def _stored(self, shape: _Shape, name: str, ev: _Eval) -> _Eval:
        self._store(shape, name, ev)
        return ev

    def _shape(self, prepared: _Pod) -> _Shape:
        """The shape's cache, with the evaluations of nodes changed since its last use dropped."""
        eager = self._eager
        shape = self._shapes.get(prepared.key)
        if shape is None:
            shape = _Shape(seq=len(self._changes))
            if eager:
                shape.pending = list(self._names)
            self._shapes[prepared.key] = shape
            if len(self._shapes) > _MAX_SHAPES:
                self._shapes.popitem(last=False)
            return shape
        self._shapes.move_to_end(prepared.key)
        self._catch_up(shape)
        return shape

    def _catch_up(self, shape: _Shape) -> None:
        """Drop the shape's evaluations of the nodes changed since its last use."""
        if shape.seq < len(self._changes):
            dirty = set(self._changes[shape.seq :])
            shape.seq = len(self._changes)
            names = list(shape.evals) if _GLOBAL in dirty else [n for n in dirty if n in shape.evals]
            for name in names:
                self._drop(shape, name)
            if self._eager:
                shape.pending.extend(names)

    def _drop(self, shape: _Shape, name: str) -> None:
        old = shape.evals.pop(name)
        shape.counts.subtract(old.reasons)
        shape.errors.discard(name)
        shape.version[name] = shape.version.get(name, 0) + 1

    def _store(self, shape: _Shape, name: str, ev: _Eval) -> None:
        if name in shape.evals:
            self._drop(shape, name)
        shape.evals[name] = ev
        shape.counts.update(ev.reasons)
        version = shape.version.get(name, 0) + 1
        shape.version[name] = version
        if ev.error is not None:
            shape.errors.add(name)
        if ev.key is not None and self._eager:
            heap = shape.heap
            heapq.heappush(heap, (ev.key, name, version))
            if len(heap) > 2 * len(self._names) + 64:  # mostly stale entries: rebuild from the evaluations
                heap[:] = [(e.key, n, shape.version[n]) for n, e in shape.evals.items() if e.key is not None]
                heapq.heapify(heap)

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
                ids.append([key[0], current.spec.to_api()])  # by spec: claims from one template share work
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
        features = required_features(pod)
        shape_doc["features"] = sorted(features)
        shape_key = json.dumps(shape_doc, sort_keys=True, default=str)
        return _Pod(
            pod, shape_key, vector, scalars, pending, allocated, problem, ports=ports, features=features
        )

    def _evaluate(self, p: _Pod, shape: _Shape, name: str, naive: bool = False, score: bool = True) -> _Eval:
        """Filter (predicates, then DRA allocation) and, when feasible, score one node for the pod (`score`
        False: a feasible node's key is empty)."""
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
        if not claims:
            if p.features and not declares(node, p.features):  # the profile's last filter
                return _Eval(reasons=[REASON_DECLARED_FEATURES])
            return _Eval(key=self._score(name, p.vector, ()) if score else (), needs=needs)
        info = self._infos[name]
        if naive:
            alloc = self.core.allocate(info, claims, order=self._order)
            verdict, message, results = alloc.verdict, alloc.message, alloc.results
            picks: Picks | None = None
        else:
            decision = self.core.decide(info, claims, order=self._order, prefilter=True)
            verdict, message, picks, results = decision.verdict, decision.message, decision.picks, None
        if verdict is Verdict.ERROR:
            return _Eval(error=message)
        if verdict is Verdict.NODE_FAILURE:
            return _Eval(reasons=[message])
        if verdict is Verdict.NO_FIT:
            return _Eval(reasons=[REASON_CANNOT_ALLOCATE])
        if p.features and not declares(node, p.features):  # the profile's last filter, after DynamicResources
            return _Eval(reasons=[REASON_DECLARED_FEATURES])
        if not score:
            return _Eval(key=(), needs=needs, picks=picks, results=results)
        takes = takes_of(results or ()) if picks is None else picks.takes()
        return _Eval(key=self._score(name, p.vector, takes), needs=needs, picks=picks, results=results)

    # --- scoring --------------------------------------------------------------------------------------------

    def _scored(self, p: _Pod) -> bool:
        """Whether a score plugin beyond the resource ones can tell the nodes apart for this pod: then the
        choice is upstream's weighted sum over every feasible node (`scores`), else the strategy's key."""
        pod = p.pod
        return (
            self._prefer_taints
            or has_preferred_node_affinity(pod)
            or bool(soft_constraints(pod))
            or bool(self._index.with_affinity)
            or has_preferred_pod_affinity(pod)
            or self._images.known(pod_images(pod))
            or self._prioritized_list(p)
        )

    def _prioritized_list(self, p: _Pod) -> bool:
        """Whether DynamicResources' score can tell nodes apart: a claim to allocate has a choice of
        subrequests (drascore.py)."""
        return self.gates.enabled(DRA_PRIORITIZED_LIST) and tells_apart(p.pending)

    def _scores(
        self,
        p: _Pod,
        names: Sequence[str],
        volumes: VolumeCheck | None = None,
        evals: Mapping[str, _Eval] | None = None,
    ) -> dict[str, NodeScore]:
        """Each feasible node's normalized score per plugin and weighted total (schedule_one.go
        prioritizeNodes). binpack and spread contribute no resource plugin: they break ties instead."""
        other: dict[str, dict[str, int]] = {}
        spread = spread_scores(p.pod, names, self._index)
        if spread is not None:
            other[POD_TOPOLOGY_SPREAD] = spread
        interpod = interpod_scores(p.pod, names, self._index)
        if interpod is not None:
            other[INTER_POD_AFFINITY] = interpod
        if volumes is not None and volumes.scored:
            other[VOLUME_BINDING] = {name: volumes.score(name) for name in names}
        images = pod_images(p.pod)
        if self._images.known(images):
            total = len(self._names)
            other[IMAGE_LOCALITY] = {name: self._images.score(images, name, total) for name in names}
        if evals is not None and self._prioritized_list(p):
            other[DYNAMIC_RESOURCES] = default_normalize_score(
                {name: self._dra_score(p, evals[name]) for name in names}, reverse=False
            )
        if self.strategy == "least-allocated":
            fit: dict[str, int] = {}
            balanced: dict[str, int] = {}
            for name in names:
                fit[name], balanced[name] = self._resource_scores(name, p.vector)
            other[NODE_RESOURCES_FIT] = fit
            other[BALANCED_ALLOCATION] = balanced
        return prioritize(p.pod, [self._nodes[n] for n in names], other)

    def _choose(
        self, p: _Pod, names: Sequence[str], evals: Mapping[str, _Eval], volumes: VolumeCheck | None = None
    ) -> str:
        """The highest total wins; a tie goes to the strategy's better key (upstream: at random)."""
        scores = self._scores(p, names, volumes, evals)
        return min(names, key=lambda n: (-scores[n].total, evals[n].key))

    def _dra_score(self, p: _Pod, ev: _Eval) -> int:
        """DynamicResources.Score on the node `ev` evaluated: its pending claims' allocated subrequests."""
        if ev.picks is not None:
            claims = [plan.claim for plan in ev.picks.plans]
            requests = [[r.request.full_name for r in devices] for devices in ev.picks.devices]
            return claims_score(claims, requests)
        if ev.results is not None:
            count = len(p.pending)
            return claims_score(p.pending, result_requests(ev.results[:count]))
        return 0

    def _resource_scores(self, name: str, vector: Mapping[str, int]) -> tuple[int, int]:
        """LeastAllocated and BalancedAllocation of the node with the pod (0 without allocatable)."""
        alloc = self._alloc[name]
        if alloc is None:
            return 0, 0
        usage = self._usage[name].requested
        requested = {r: usage.get(r, 0) + vector.get(r, 0) for r in (CPU, MEMORY)}
        any_request = any(vector.get(r, 0) > 0 for r in (CPU, MEMORY))
        return least_allocated(alloc, requested), balanced_allocation(alloc, requested, any_request)

    def _score(self, name: str, vector: Mapping[str, int], takes: Iterable[DeviceTake]) -> tuple[Any, ...]:
        """binpack: the most allocated node after this pod (the allocated share of its DRA devices, then of
        its cpu and memory), so whole devices and whole nodes stay free; spread: the least allocated;
        least-allocated: upstream's LeastAllocated plus BalancedAllocation (weight 1 each). Ties: the
        smaller node name."""
        if self.strategy == "least-allocated":
            fit, balanced = self._resource_scores(name, vector)
            return (-(fit + balanced), name)
        dra = self.core.allocated_share(self._infos[name], takes)
        res = self._resource_share(name, vector)
        if self.strategy == "spread":
            return (dra, res, name)
        return (-dra, -res, name)

    def _resource_share(self, name: str, vector: Mapping[str, int]) -> Fraction:
        """Mean requested share of cpu and memory with the pod (kube-scheduler's MostAllocated, equal
        weights)."""
        alloc = self._alloc[name]
        if alloc is None:
            return Fraction(0)
        usage = self._usage[name]
        parts = [
            Fraction(usage.requested.get(r, 0) + vector.get(r, 0), alloc[r])
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
