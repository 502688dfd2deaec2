"""Simulate's two modes, returning typed results (the JSON contract is `render.render_json`).

Claim mode allocates every unallocated claim together on one node, all-or-nothing, as the scheduler does for
the claims of one pod. Pod mode places pending pods one at a time with the `Placer` the binder uses, each
seeing the ones before it. Neither changes the input objects: claim mode allocates copies, pod mode gives
the placer `scheduling_pod` copies.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Literal

from allocator.cluster import Cluster, NodeInfo
from allocator.placement import NO_NODES_MESSAGE, REASON_CANNOT_ALLOCATE, Placement, Placer, Strategy
from allocator.podfeatures import preemption_note
from allocator.podindex import PodIndex
from allocator.simulate.inputs import Inputs, UsageError, pod_claims, scheduling_pod
from resourceapi.core_v1 import PodExtendedResourceClaimStatus
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.resource_v1 import AllocationResult, ResourceClaim, ResourceClaimStatus

ClaimResult = Literal["allocated", "unschedulable", "error"]


@dataclass(frozen=True)
class ClaimOutcome:
    """One claim and its allocation (None: not allocated)."""

    namespace: str
    name: str
    allocation: AllocationResult | None

    @classmethod
    def of(cls, claim: ResourceClaim) -> ClaimOutcome:
        allocation = claim.status.allocation if claim.status else None
        return cls(claim.metadata.namespace or "default", claim.metadata.name, allocation)


@dataclass(frozen=True)
class ClaimRun:
    """Claim mode's result: all claims on `node`, together."""

    node: str
    result: ClaimResult
    reason: str
    claims: tuple[ClaimOutcome, ...]
    notes: tuple[str, ...] = ()  # for stderr, never in the JSON


@dataclass(frozen=True)
class PodOutcome:
    """One pending pod's placement (`result`: bound, unschedulable, error, gated, unsupported). `claim` and
    `extended_status` are set only for a bound pod that needed a synthesized extended-resource claim;
    `claims` holds the pod's own claims (empty unless bound)."""

    namespace: str
    name: str
    result: str
    reason: str
    node: str | None
    claim: ResourceClaim | None
    extended_status: PodExtendedResourceClaimStatus | None
    claims: tuple[ClaimOutcome, ...]

    @classmethod
    def of(cls, p: Placement) -> PodOutcome:
        bound = p.result == "bound"
        reason = p.reason
        note = preemption_note(p.pod) if p.result == "unschedulable" else None
        if note is not None:
            reason = f"{reason} ({note})"
        return cls(
            namespace=p.pod.namespace,
            name=p.pod.name,
            result=p.result,
            reason=reason,
            node=p.node,
            claim=p.claim if bound else None,
            extended_status=p.extended_status if bound else None,
            claims=tuple(ClaimOutcome.of(c) for c in p.user_claims),
        )


@dataclass(frozen=True)
class PodRun:
    """Pod mode's result, in input order."""

    pods: tuple[PodOutcome, ...]
    notes: tuple[str, ...] = ()  # for stderr, never in the JSON


Simulation = ClaimRun | PodRun


def run_claims(inputs: Inputs, gates: FeatureGates, node_name: str | None) -> tuple[ClaimRun, Cluster]:
    """Claim mode: every unallocated claim, together, all-or-nothing, on one node."""
    if node_name is None:
        if len(inputs.nodes) != 1:
            raise UsageError(
                f"claim mode needs a node: the input has {len(inputs.nodes)} Nodes; pick one with --node NAME"
            )
        node_name = inputs.nodes[0].name
    node = next((n for n in inputs.nodes if n.name == node_name), None)
    notes = () if node is not None else _unnamed_node_notes(inputs, node_name)
    info = NodeInfo(node_name, dict(node.labels) if node else {})
    cluster = Cluster(gates, inputs.classes, inputs.slices, inputs.allocated_claims())
    claims = [c.model_copy(deep=True) for c in inputs.unallocated_claims()]
    for c in claims:
        c.metadata.namespace = c.metadata.namespace or "default"
    missing = missing_class_reason(claims, {c.metadata.name for c in inputs.classes})
    alloc = cluster.allocate(info, claims) if missing is None else None
    result: ClaimResult
    if alloc is None:
        result, reason, results = "unschedulable", missing or "", None
    elif alloc.error is not None:
        result, reason, results = ("error" if not alloc.node_failure else "unschedulable"), alloc.error, None
    elif alloc.results is None:
        result, reason, results = "unschedulable", REASON_CANNOT_ALLOCATE, None
    else:
        result, reason, results = "allocated", "", alloc.results
    if results is not None:
        for c, r in zip(claims, results, strict=True):
            c.status = ResourceClaimStatus(allocation=r)
            cluster.commit(c, r)
    outcomes = tuple(ClaimOutcome.of(c) for c in claims)
    return ClaimRun(node_name, result, reason, outcomes, notes), cluster


def missing_class_reason(claims: Sequence[ResourceClaim], known: Set[str]) -> str | None:
    """The DynamicResources PreFilter's status for a claim naming a DeviceClass not in `known` (`request <r>:
    device class <c> does not exist`; `<r>/<s>` for a subrequest), else None."""
    for claim in claims:
        for r in claim.spec.devices.requests or []:
            if r.exactly is not None and r.exactly.device_class_name not in known:
                return f"request {r.name}: device class {r.exactly.device_class_name} does not exist"
            for sub in r.first_available or []:
                if sub.device_class_name not in known:
                    return f"request {r.name}/{sub.name}: device class {sub.device_class_name} does not exist"
    return None


def _unnamed_node_notes(inputs: Inputs, name: str) -> tuple[str, ...]:
    """A bare node is simulated when no Node has the name; warn when nothing names it at all (a typo)."""
    named = {n.name for n in inputs.nodes}
    for s in inputs.slices:
        if s.spec.node_name:
            named.add(s.spec.node_name)
        for d in s.spec.devices or []:
            if d.node_name:
                named.add(d.node_name)
    if name in named:
        return ()
    close = difflib.get_close_matches(name, sorted(named), n=3)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return (
        f"warning: --node {name}: no Node and no ResourceSlice names it; simulating a bare node of that "
        f"name, which sees only slices for all nodes or selected by node labels{hint}",
    )


def run_pods(
    inputs: Inputs, gates: FeatureGates, strategy: Strategy, node_name: str | None = None
) -> tuple[PodRun, Cluster]:
    """Pod mode: pending pods placed one at a time, in input order, each seeing the ones before it."""
    nodes = [n for n in inputs.nodes if node_name is None or n.name == node_name]
    if node_name is not None and not nodes:
        raise UsageError(f"--node {node_name}: pod mode needs a Node of that name in the input")
    cluster = Cluster(gates, inputs.classes, inputs.slices, inputs.allocated_claims())
    resolver = ExtendedResourceResolver(inputs.classes, gates)
    running = [p for p in inputs.pods if p.spec.node_name]
    namespaces = {ns.metadata.name: ns.metadata.labels or {} for ns in inputs.namespaces}
    index = PodIndex.build(inputs.nodes, running, namespaces)  # every node: spreading counts beyond --node
    placer = Placer(cluster, gates, resolver, nodes, inputs.slices, running, strategy, index=index)
    outcomes = []
    known = {c.metadata.name for c in inputs.classes}
    for pod in inputs.pending_pods():
        claims = pod_claims(inputs, pod)
        missing = missing_class_reason(
            [c for c in claims if c.status is None or c.status.allocation is None], known
        )
        if missing is not None:
            # DynamicResources PreFilter: unschedulable on every node, before any Filter (FitError text).
            reason = f"0/{len(nodes)} nodes are available: {missing}." if nodes else NO_NODES_MESSAGE
            placement = Placement(scheduling_pod(inputs, pod), "unschedulable", reason)
        else:
            placement = placer.place(scheduling_pod(inputs, pod), claims)
        placer.commit(placement)
        outcomes.append(PodOutcome.of(placement))
    return PodRun(tuple(outcomes)), cluster
