"""Simulate's two modes, returning typed results (the JSON contract is `render.render_json`).

Claim mode allocates every unallocated claim together on one node, all-or-nothing, as the scheduler does for
the claims of one pod. Pod mode places pending pods one at a time with the `Placer` the binder uses, each
seeing the ones before it. Neither changes the input objects: claim mode allocates copies, pod mode gives
the placer `scheduling_pod` copies.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Literal

from allocator.scheduling.explain import PodContext, explain_claims, explain_pod
from allocator.scheduling.placement import (
    NO_NODES_MESSAGE,
    REASON_CANNOT_ALLOCATE,
    Placement,
    PlacementResult,
    Placer,
    Strategy,
)
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.preemption import (
    Candidate,
    evict,
    find_candidates,
    ineligible_reason,
    pick_one_node,
    placer_fit,
    pod_priority,
    postfilter_message,
    preemption_shown,
    why_lines,
)
from allocator.scheduling.volumes import Storage
from allocator.simulate.inputs import Inputs, UsageError, pod_claims, scheduling_pod
from allocator.structured.cluster import Cluster, NodeInfo, Verdict
from resourceapi.api.core_v1 import Pod, PodExtendedResourceClaimStatus
from resourceapi.api.limits import RESERVED_FOR_MAX_SIZE
from resourceapi.api.resource_v1 import (
    AllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
)
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates

ClaimResult = Literal["allocated", "unschedulable", "error"]


_TERMINAL = ("Succeeded", "Failed")  # pods that hold nothing: never victims
REASON_CLAIM_IN_USE = "resourceclaim in use"  # DynamicResources PreFilter: reservedFor is full


@dataclass(frozen=True)
class ClaimOutcome:
    """One claim, its allocation (None: not allocated) and, in pod mode, the pods it is reserved for."""

    namespace: str
    name: str
    allocation: AllocationResult | None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()

    @classmethod
    def of(cls, claim: ResourceClaim) -> ClaimOutcome:
        allocation = claim.status.allocation if claim.status else None
        reserved = tuple(claim.status.reserved_for or ()) if claim.status else ()
        return cls(claim.metadata.namespace or "default", claim.metadata.name, allocation, reserved)


@dataclass(frozen=True)
class DeviceUse:
    """One device a container holds: through which claim and request."""

    claim: str
    request: str
    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class ContainerDevices:
    """The devices of one container of a bound pod (none when it lists no claim in `resources.claims`)."""

    name: str
    devices: tuple[DeviceUse, ...]


@dataclass(frozen=True)
class ClaimRun:
    """Claim mode's result: all claims on `node`, together."""

    node: str
    result: ClaimResult
    reason: str
    claims: tuple[ClaimOutcome, ...]
    notes: tuple[str, ...] = ()  # for stderr, never in the JSON
    explain: tuple[str, ...] | None = (
        None  # with --explain: why the claims did not fit (allocator/scheduling/explain.py)
    )


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
    claim_statuses: tuple[tuple[str, str], ...] = ()  # (entry, generated claim): resourceClaimStatuses
    containers: tuple[ContainerDevices, ...] = ()  # bound pods with devices only
    explain: tuple[str, ...] | None = None  # with --explain: why the pod fits no node, grouped by reason
    victims: tuple[tuple[str, str], ...] = ()  # (namespace, name) of the pods evicted for it (preemption)

    @classmethod
    def of(
        cls,
        p: Placement,
        claims: Sequence[ResourceClaim] = (),
        generated: tuple[tuple[str, str], ...] = (),
        explain: tuple[str, ...] | None = None,
        victims: tuple[tuple[str, str], ...] = (),
    ) -> PodOutcome:
        """`claims`: the pod's own claims as they stand after it (allocated, reserved); default: those
        allocated for it."""
        bound = p.result is PlacementResult.BOUND
        reason = p.reason
        own = list(claims) if bound and claims else list(p.user_claims)
        return cls(
            namespace=p.pod.namespace,
            name=p.pod.name,
            result=p.result.value,  # a plain string in the JSON and YAML output
            reason=reason,
            node=p.node,
            claim=p.claim if bound else None,
            extended_status=p.extended_status if bound else None,
            claims=tuple(ClaimOutcome.of(c) for c in own),
            claim_statuses=generated,
            containers=_container_devices(p, own) if bound else (),
            explain=explain,
            victims=victims,
        )


def _container_devices(p: Placement, claims: Sequence[ResourceClaim]) -> tuple[ContainerDevices, ...]:
    """Which container holds which device: `resources.claims` entries for the pod's own claims (a whole
    claim, or one request and its subrequests), `extendedResourceClaimStatus.requestMappings` for the
    synthesized one."""
    by_name = {c.metadata.name: c for c in claims}
    entry_claim = {rc.name: rc.resource_claim_name for rc in p.pod.spec.resource_claims or []}
    mappings = p.extended_status.request_mappings if p.extended_status is not None else []
    out: list[ContainerDevices] = []
    for container in p.pod.all_containers():
        uses: list[DeviceUse] = []
        for ref in container.resources.claims or []:
            name = entry_claim.get(ref.name)
            claim = by_name.get(name or "")
            if claim is not None:
                uses.extend(_uses(claim, ref.request))
        if p.claim is not None:
            for m in mappings:
                if m.container_name == container.name:
                    uses.extend(_uses(p.claim, m.request_name))
        out.append(ContainerDevices(container.name, tuple(uses)))
    return tuple(out)


def _uses(claim: ResourceClaim, request: str | None) -> list[DeviceUse]:
    allocation = claim.status.allocation if claim.status else None
    results = (allocation.devices.results or []) if allocation and allocation.devices else []
    return [
        DeviceUse(claim.metadata.name, r.request, r.driver, r.pool, r.device)
        for r in results
        if request is None or r.request == request or r.request.startswith(f"{request}/")
    ]


@dataclass(frozen=True)
class PodRun:
    """Pod mode's result, in input order (placed by priority: `run_pods`)."""

    pods: tuple[PodOutcome, ...]
    notes: tuple[str, ...] = ()  # for stderr, never in the JSON


Simulation = ClaimRun | PodRun


def run_claims(
    inputs: Inputs, gates: FeatureGates, node_name: str | None, *, explain: bool = False
) -> tuple[ClaimRun, Cluster]:
    """Claim mode: every unallocated claim, together, all-or-nothing, on one node. `explain`: say why they
    did not fit (a diagnosis pass, run only then)."""
    if node_name is None:
        if len(inputs.nodes) != 1:
            raise UsageError(
                f"claim mode needs a node: the input has {len(inputs.nodes)} Nodes; pick one with --node NAME"
            )
        node_name = inputs.nodes[0].name
    node = next((n for n in inputs.nodes if n.name == node_name), None)
    notes = () if node is not None else _unnamed_node_notes(inputs, node_name)
    info = NodeInfo(node_name, dict(node.labels) if node else {})
    slices = inputs.tainted_slices(gates)
    cluster = Cluster(gates, inputs.classes, slices, inputs.allocated_claims())
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
    why: tuple[str, ...] | None = None
    if explain:
        why = ()
        if result == "unschedulable" and alloc is not None and alloc.verdict is Verdict.NO_FIT:
            why = tuple(explain_claims(cluster, info, claims))
        elif result != "allocated":
            why = (reason,)
    if results is not None:
        for c, r in zip(claims, results, strict=True):
            c.status = ResourceClaimStatus(allocation=r)
            cluster.commit(c, r)
    outcomes = tuple(ClaimOutcome.of(c) for c in claims)
    return ClaimRun(node_name, result, reason, outcomes, notes, why), cluster


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
    inputs: Inputs,
    gates: FeatureGates,
    strategy: Strategy,
    node_name: str | None = None,
    *,
    percentage: int = 100,
    explain: bool = False,
) -> tuple[PodRun, Cluster]:
    """Pod mode: pending pods placed one at a time by priority (highest first, input order among equals, as
    PrioritySort orders kube-scheduler's queue), each seeing those placed before it; results in input order.

    `percentage`: kube-scheduler's percentageOfNodesToScore (100: every node is examined). `explain`: for
    each unschedulable pod, why it fits no node (a diagnosis pass, run only for those pods)."""
    nodes = [n for n in inputs.nodes if node_name is None or n.name == node_name]
    if node_name is not None and not nodes:
        raise UsageError(f"--node {node_name}: pod mode needs a Node of that name in the input")
    slices = inputs.tainted_slices(gates)
    cluster = Cluster(gates, inputs.classes, slices, inputs.allocated_claims())
    resolver = ExtendedResourceResolver(inputs.classes, gates)
    running = [p for p in inputs.pods if p.spec.node_name]
    namespaces = {ns.metadata.name: ns.metadata.labels or {} for ns in inputs.namespaces}
    index = PodIndex.build(inputs.nodes, running, namespaces)  # every node: spreading counts beyond --node
    placer = Placer(
        cluster,
        gates,
        resolver,
        nodes,
        slices,
        running,
        strategy,
        index=index,
        percentage_of_nodes_to_score=percentage,
        storage=Storage.of(inputs.storage),
    )
    context = PodContext(nodes, placer.node_usage, index, resolver, gates)
    explained: dict[str, tuple[str, ...]] = {}  # equal pods between two changes get the same diagnosis
    bound = 0
    outcomes = []
    known = {c.metadata.name for c in inputs.classes}
    current: dict[tuple[str, str], ResourceClaim] = {}  # claims as this run has left them
    on_node: dict[str, list[Pod]] = {}  # the running pods preemption may evict, by node (victims leave it)
    for p in running:
        if p.status is None or p.status.phase not in _TERMINAL:
            on_node.setdefault(p.spec.node_name or "", []).append(p)
    pending = list(enumerate(inputs.pending_pods()))
    for index_in_input, pod in sorted(pending, key=lambda p: (-pod_priority(p[1]), p[0])):
        claims = [current.get(_key(c), c) for c in pod_claims(inputs, pod)]
        missing = missing_class_reason([c for c in claims if not _allocated(c)], known)
        in_use = next((c for c in claims if _allocated(c) and not _can_be_reserved(c, pod)), None)
        if missing is not None or in_use is not None:
            # DynamicResources PreFilter: unschedulable on every node, before any Filter (FitError text).
            why = missing if missing is not None else REASON_CLAIM_IN_USE
            reason = f"0/{len(nodes)} nodes are available: {why}." if nodes else NO_NODES_MESSAGE
            placement = Placement(scheduling_pod(inputs, pod), PlacementResult.UNSCHEDULABLE, reason)
        else:
            placement = placer.place(scheduling_pod(inputs, pod), claims)
        chosen: Candidate | None = None
        preempted: list[str] = []
        if placement.result is PlacementResult.UNSCHEDULABLE and missing is None and in_use is None:
            placement, chosen, preempted = _preempt(placer, placement, claims, on_node, inputs, current)
        diagnosis: tuple[str, ...] | None = None
        if explain:
            diagnosis = tuple(preempted)
            if placement.result is PlacementResult.UNSCHEDULABLE:
                early = (
                    missing if missing is not None else REASON_CLAIM_IN_USE if in_use is not None else None
                )
                if early is not None:
                    diagnosis = (early,)
                else:
                    key = _explain_key(placement.pod, claims, cluster.generation, bound)
                    diagnosis = explained.get(key)
                    if diagnosis is None:
                        diagnosis = tuple(explain_pod(cluster, context, placement.pod, claims))
                        explained[key] = diagnosis
        placer.commit(placement)
        if placement.volumes is not None:  # the PV controller binds the claims to the chosen PVs
            placer.storage.settle(placement.volumes)
        bound += placement.result is PlacementResult.BOUND
        after = _reserve(placement, claims, current) if placement.result is PlacementResult.BOUND else []
        victims = tuple((v.namespace, v.name) for v in chosen.victims) if chosen is not None else ()
        outcome = PodOutcome.of(placement, after, inputs.generated.get(id(pod), ()), diagnosis, victims)
        outcomes.append((index_in_input, outcome))
    in_input_order = tuple(o for _, o in sorted(outcomes, key=lambda o: o[0]))
    return PodRun(in_input_order, _no_node_notes(inputs, len(outcomes))), cluster


def _preempt(
    placer: Placer,
    placement: Placement,
    claims: Sequence[ResourceClaim],
    on_node: dict[str, list[Pod]],
    inputs: Inputs,
    current: dict[tuple[str, str], ResourceClaim],
) -> tuple[Placement, Candidate | None, list[str]]:
    """DefaultPreemption's PostFilter for an unschedulable pod: evict the chosen node's victims (taken out of
    `on_node`) and place the pod there (upstream's next cycle tries the nominated node first); else add the
    PostFilter message to the reason. Returns the placement, the chosen candidate and the --explain lines."""
    pod = placement.pod
    names = placer.node_names
    priority = pod_priority(pod)
    lower = {n for n in names if any(pod_priority(p) < priority for p in on_node.get(n, ()))}
    candidates: list[Candidate] = []
    if lower and ineligible_reason(pod) is None:
        allocated = [c for c in (current.get(_key(c), c) for c in inputs.allocated_claims()) if _allocated(c)]
        with placer_fit(placer, pod, claims, allocated) as fit:  # offset 0: reproducible (divergences.md)
            nodes = placer.preemption_nodes(pod)
            candidates = find_candidates(pod, nodes, on_node, inputs.pdbs, fit, monotone=fit.monotone)
        chosen = pick_one_node(candidates)
        if chosen is not None:
            for c in evict(placer, chosen.victims, allocated):
                current[_key(c)] = c.model_copy(update={"status": None})
            gone = {id(v) for v in chosen.victims}
            on_node[chosen.node] = [p for p in on_node[chosen.node] if id(p) not in gone]
            after = placer.place_on(pod, claims, chosen.node)
            if after.result is PlacementResult.BOUND:
                return after, chosen, why_lines(pod, chosen, candidates)
    if not preemption_shown(pod):
        return placement, None, []
    placement.reason = f"{placement.reason} {postfilter_message(pod, len(names), len(names) - len(lower))}"
    return placement, None, []


def _no_node_notes(inputs: Inputs, pending: int) -> tuple[str, ...]:
    """Pending pods and no Node: every pod is unschedulable for a reason the input, not the cluster, gives;
    say so on stderr, since exit 0 and the JSON alone hide it."""
    if inputs.nodes or not pending:
        return ()
    pods = "the pending pod cannot" if pending == 1 else f"none of the {pending} pending pods can"
    return (
        f"warning: the input has no Node, so {pods} be placed ({NO_NODES_MESSAGE}); add the Nodes, "
        "for example from `kubectl get nodes -o yaml`",
    )


def _explain_key(pod: Pod, claims: Sequence[ResourceClaim], generation: int, bound: int) -> str:
    """What a pod's diagnosis depends on: its spec and namespace (not its name), its claims, and the state
    (the core's generation, the pods bound so far)."""
    return json.dumps(
        [pod.namespace, pod.spec.to_api(), [c.to_api() for c in claims], generation, bound],
        sort_keys=True,
        default=str,
    )


def _key(claim: ResourceClaim) -> tuple[str, str]:
    return (claim.metadata.namespace or "default", claim.metadata.name)


def _allocated(claim: ResourceClaim) -> bool:
    return claim.status is not None and claim.status.allocation is not None


def _can_be_reserved(claim: ResourceClaim, pod: Pod) -> bool:
    """Upstream's resourceclaim.CanBeReserved: room in reservedFor, or already reserved for the pod."""
    reserved = (claim.status.reserved_for or []) if claim.status else []
    uid = pod.metadata.uid or ""
    return len(reserved) < RESERVED_FOR_MAX_SIZE or any(r.uid == uid and r.name == pod.name for r in reserved)


def _reserve(
    placement: Placement, claims: Sequence[ResourceClaim], current: dict[tuple[str, str], ResourceClaim]
) -> list[ResourceClaim]:
    """After a bound pod: its new allocations, and the claims it shares (allocated earlier) reserved for it
    too. Returns the pod's claims in its order, as they now stand."""
    fresh = {_key(c): c for c in placement.user_claims}
    out: list[ResourceClaim] = []
    pod = placement.pod
    consumer = ResourceClaimConsumerReference(resource="pods", name=pod.name, uid=pod.metadata.uid or "")
    for c in claims:
        key = _key(c)
        if key in fresh:
            updated = fresh[key]
        else:
            updated = c.model_copy(deep=True)
            assert updated.status is not None
            reserved = list(updated.status.reserved_for or [])
            if not any(r.uid == consumer.uid and r.name == consumer.name for r in reserved):
                reserved.append(consumer)
            updated.status.reserved_for = reserved
        current[key] = updated
        out.append(updated)
    return out
