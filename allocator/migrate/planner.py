"""The migration plan: classes, workloads and steps, from one incremental placement of the whole move.

One `Placer` (the binder's placement, as simulate's pod mode) and one `CapacityView` (top's usage and
headroom) are built once and changed step by step, as the cluster would change: a batch's nodes are cordoned,
their pods evicted (released from both), the device plugin's resources leave the nodes' allocatable and the
DRA driver's slices arrive, the nodes are uncordoned. The evicted pods are placed while the batch is cordoned
(their controllers recreate them at once), and what did not fit is tried again once the batch is back. Nothing
is simulated afresh per step: only what changed is evaluated again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from allocator.capacity.view import CapacityView
from allocator.migrate.classes import ClassPlan, class_models, plan_classes, switched_slice
from allocator.migrate.disruption import BudgetCheck, check_drain, read_budgets, stalled
from allocator.migrate.plugin_config import PluginConfig
from allocator.migrate.workloads import (
    OwnerIndex,
    WorkloadPlan,
    is_daemonset_pod,
    plan_workloads,
    shared_requests,
)
from allocator.scheduling.explain import PodContext, explain_pod
from allocator.scheduling.placement import Placement, PlacementResult, Placer, Strategy
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.predicates import fit_vector
from allocator.scheduling.preemption import pod_priority
from allocator.simulate.inputs import Inputs
from allocator.structured.cluster import Cluster
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import AllocationResult, DeviceClass
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates

GPU_COUNT_LABEL = "nvidia.com/gpu.count"  # gpu-feature-discovery's labels
GPU_REPLICAS_LABEL = "nvidia.com/gpu.replicas"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
ROUTING_LABEL = "dra-capacity.io/pod-routing=enabled"
_TERMINAL = ("Succeeded", "Failed")
Key = tuple[str, str]


class PlanError(ValueError):
    """The input cannot be planned (no GPU node, a pool label no GPU node has); the message says why."""


@dataclass(frozen=True)
class Options:
    max_unavailable: int = 1
    pool_label: str | None = None  # one step per value of this node label (a node pool)
    strategy: Strategy = "binpack"
    explain: bool = False  # explain every failing step's pods, not only the first failing step's


@dataclass(frozen=True)
class GpuNode:
    name: str
    gpus: int
    replicas: int
    resources: tuple[str, ...]  # the shared names its allocatable lists


@dataclass(frozen=True)
class Move:
    """Where one evicted pod goes: `via` shares (DRA, the binder), device plugin, or node (no GPU asked)."""

    namespace: str
    name: str
    owner: str
    source: str  # the node it was evicted from
    result: str  # bound, unschedulable, error, gated, unsupported; deleted (a bare pod, not recreated)
    node: str | None = None
    via: str | None = None
    phase: str | None = None  # "drain" (while the batch is cordoned) or "uncordon"
    reason: str = ""
    explain: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ClassHeadroom:
    name: str
    resource: str
    total: int
    used: int | float
    free: int | float
    headroom: int
    capped: bool


@dataclass(frozen=True)
class Step:
    index: int
    nodes: tuple[str, ...]
    pool: str | None
    actions: tuple[str, ...]
    rollback: tuple[str, ...]
    fits: bool
    moves: tuple[Move, ...] = ()
    budgets: tuple[BudgetCheck, ...] = ()
    bare: tuple[str, ...] = ()  # bare pods the drain deletes (--force)
    daemonsets: tuple[str, ...] = ()  # DaemonSet pods the drain leaves (--ignore-daemonsets)
    headroom: tuple[ClassHeadroom, ...] = ()


@dataclass(frozen=True)
class Plan:
    classes: tuple[ClassPlan, ...]
    workloads: tuple[WorkloadPlan, ...]
    steps: tuple[Step, ...]
    warnings: tuple[str, ...]
    first_failing: int | None  # the index of the first step that cannot keep every pod

    @property
    def fits(self) -> bool:
        return self.first_failing is None


@dataclass
class MigrationInput:
    """Simulate's checked objects plus what a move also reads (raw objects: owners, quotas, budgets)."""

    inputs: Inputs
    owners: Sequence[Mapping[str, Any]] = ()
    quotas: Sequence[Mapping[str, Any]] = ()
    budgets: Sequence[Mapping[str, Any]] = ()
    plugin: PluginConfig | None = None
    notes: list[str] = field(default_factory=list)


def _running(pod: Pod) -> bool:
    return bool(pod.spec.node_name) and (pod.status is None or pod.status.phase not in _TERMINAL)


def shared_names(nodes: Sequence[Node], plugin: PluginConfig | None) -> list[str]:
    """The resource names the device plugin shares: from its config, else `*.shared` names nodes list."""
    names: set[str] = set()
    if plugin is not None:
        for c in plugin.configs.values():
            names.update(r.name for r in c.resources)
    if not names:
        for n in nodes:
            alloc = (n.status.allocatable if n.status else None) or {}
            names.update(k for k in alloc if k.endswith(".shared"))
    return sorted(names)


def gpu_nodes(
    nodes: Sequence[Node], names: Sequence[str], plugin: PluginConfig | None
) -> tuple[list[GpuNode], list[str]]:
    """Nodes whose allocatable lists a shared name, with their GPUs and replicas (from the plugin's config,
    else gpu-feature-discovery's labels, else derived from allocatable), and warnings where guessed."""
    out: list[GpuNode] = []
    warnings: list[str] = []
    for n in nodes:
        alloc = fit_vector((n.status.allocatable if n.status else None) or {})
        listed = tuple(name for name in names if alloc.get(name, 0) > 0)
        if not listed:
            continue
        units = alloc[listed[0]]
        config = plugin.for_node(n.labels) if plugin is not None else None
        replicas = next(
            (r.replicas for r in (config.resources if config else ()) if r.name == listed[0]), None
        )
        if replicas is None:
            label = n.labels.get(GPU_REPLICAS_LABEL, "")
            replicas = int(label) if label.isdigit() and int(label) > 0 else None
        count = n.labels.get(GPU_COUNT_LABEL, "")
        gpus = int(count) if count.isdigit() and int(count) > 0 else None
        if replicas is None and gpus is None:
            warnings.append(
                f"Node {n.name!r}: neither the plugin's config nor the labels {GPU_COUNT_LABEL} and "
                f"{GPU_REPLICAS_LABEL} say how many GPUs it has: planned as one GPU of {units} shares"
            )
            gpus, replicas = 1, units
        elif replicas is None:
            assert gpus is not None
            replicas = max(1, units // gpus)
        elif gpus is None:
            gpus = max(1, units // replicas)
        out.append(GpuNode(n.name, gpus, replicas, listed))
    return out, warnings


def batches(
    gpus: Sequence[GpuNode], nodes: Mapping[str, Node], options: Options
) -> list[tuple[str | None, list[str]]]:
    names = sorted(g.name for g in gpus)
    if options.pool_label is None:
        size = max(1, options.max_unavailable)
        return [(None, names[i : i + size]) for i in range(0, len(names), size)]
    pools: dict[str, list[str]] = {}
    for name in names:
        pools.setdefault(nodes[name].labels.get(options.pool_label, ""), []).append(name)
    if set(pools) == {""}:
        raise PlanError(f"--node-pool-label {options.pool_label}: no GPU node has this label")
    return [(pool or None, members) for pool, members in sorted(pools.items())]


class _World:
    """The cluster as the move changes it: placement (Placer) and top's figures (CapacityView), in step."""

    def __init__(
        self, inputs: Inputs, gates: FeatureGates, strategy: Strategy, classes: list[DeviceClass]
    ) -> None:
        self.gates = gates
        self.plan_classes: list[ClassPlan] = []
        self.nodes = {n.name: n for n in inputs.nodes}
        self.slices = list(inputs.slices)
        claims = inputs.allocated_claims()
        self.cluster = Cluster(gates, classes, self.slices, claims)
        self.resolver = ExtendedResourceResolver(classes, gates)
        self.pods: dict[Key, Pod] = {(p.namespace, p.name): p for p in inputs.pods if _running(p)}
        namespaces = {ns.metadata.name: ns.metadata.labels or {} for ns in inputs.namespaces}
        index = PodIndex.build(inputs.nodes, list(self.pods.values()), namespaces)
        self.placer = Placer(
            self.cluster,
            gates,
            self.resolver,
            inputs.nodes,
            self.slices,
            self.pods.values(),
            strategy,
            index=index,
        )
        self.view = CapacityView(gates, strategy)
        self.view.load(
            classes=classes, slices=self.slices, nodes=inputs.nodes, claims=claims, pods=self.pods.values()
        )
        if self.view.headroom is not None and namespaces:
            self.view.headroom.set_namespaces(namespaces)
        # the allocations each running pod holds, so an eviction releases them
        self.held: dict[Key, list[tuple[Key, AllocationResult]]] = {}
        by_uid = {p.metadata.uid: k for k, p in self.pods.items() if p.metadata.uid}
        for c in claims:
            assert c.status is not None and c.status.allocation is not None
            for r in c.status.reserved_for or []:
                owner = by_uid.get(r.uid) or (c.metadata.namespace or "default", r.name)
                if owner in self.pods:
                    key = (c.metadata.namespace or "default", c.metadata.name)
                    self.held.setdefault(owner, []).append((key, c.status.allocation))

    def set_node(self, node: Node) -> None:
        self.nodes[node.name] = node
        self.placer.node_changed(node)
        self.view.upsert_node(node)

    def evict(self, key: Key) -> Pod:
        pod = self.pods.pop(key)
        node = pod.spec.node_name or ""
        self.placer.pod_removed(pod, node)
        self.view.delete_pod(key)
        for claim_key, allocation in self.held.pop(key, []):
            self.placer.release_allocation(allocation)
            self.view.delete_claim(claim_key)
        return pod

    def publish(self, gpu: GpuNode) -> None:
        model = switched_slice(gpu.name, gpu.gpus, gpu.replicas)
        self.slices.append(model)
        self.cluster.upsert_slice(model)
        self.view.upsert_slice(model)

    def place(self, pod: Pod) -> Placement:
        placement = self.placer.place(pod)
        if placement.result is not PlacementResult.BOUND or placement.node is None:
            return placement
        self.placer.commit(placement, claim_name=f"{pod.name}-extended-resources-plan")
        bound = pod.model_copy(update={"spec": pod.spec.model_copy(update={"node_name": placement.node})})
        key = (pod.namespace, pod.name)
        self.pods[key] = bound
        self.view.upsert_pod(bound)
        held = []
        for claim in [*placement.user_claims, *([placement.claim] if placement.claim is not None else [])]:
            self.view.upsert_claim(claim)
            assert claim.status is not None and claim.status.allocation is not None
            held.append(
                ((claim.metadata.namespace or "default", claim.metadata.name), claim.status.allocation)
            )
        if held:
            self.held[key] = held
        return placement

    def explain(self, pod: Pod) -> tuple[str, ...]:
        ctx = PodContext(
            self.placer.nodes, self.placer.node_usage, self.placer.index, self.resolver, self.gates
        )
        return tuple(explain_pod(self.cluster, ctx, pod, []))

    def headroom(self, classes: Sequence[ClassPlan]) -> tuple[ClassHeadroom, ...]:
        ours = {c.name for c in classes}
        rows = []
        for row in self.view.report(headroom=True).classes:
            if row.name not in ours:
                continue
            room = row.headroom
            rows.append(
                ClassHeadroom(
                    row.name,
                    row.resource,
                    row.total,
                    _number(row.used),
                    _number(row.free),
                    room.count if room is not None else 0,
                    room.capped if room is not None else False,
                )
            )
        return tuple(rows)


def _number(value: Any) -> int | float:
    return int(value) if int(value) == value else float(value)


def _replacement(pod: Pod) -> Pod:
    """The pod its controller recreates: the same spec, not yet on a node."""
    spec = pod.spec.model_copy(update={"node_name": None})
    return pod.model_copy(update={"spec": spec, "status": None})


def _owner_text(owners: OwnerIndex, pod: Pod) -> str:
    kind, _, name = owners.top(pod)
    return f"{kind}/{name}"


def plan_migration(data: MigrationInput, gates: FeatureGates, options: Options) -> Plan:
    """The whole plan (raises PlanError when there is nothing to migrate)."""
    inputs = data.inputs
    warnings: list[str] = list(data.plugin.warnings) if data.plugin is not None else []
    names = shared_names(inputs.nodes, data.plugin)
    gpus, guessed = gpu_nodes(inputs.nodes, names, data.plugin)
    warnings.extend(guessed)
    if not gpus:
        raise PlanError(
            "no Node lists a device-plugin shared resource in status.allocatable "
            f"({', '.join(names) if names else '*.shared'}): nothing to migrate"
        )
    shared: dict[str, set[int]] = {}
    for g in gpus:
        for r in g.resources:
            shared.setdefault(r, set()).add(g.replicas)
    rename = None
    if data.plugin is not None:
        renames = {c.rename_by_default for c in data.plugin.configs.values() if c.resources}
        rename = renames.pop() if len(renames) == 1 else None
    classes = plan_classes(shared, inputs.classes, rename)
    for c in classes:
        warnings.extend(c.warnings)
    new = [m for m, c in zip(class_models(classes), classes, strict=True) if not c.exists]
    owners = OwnerIndex.build(data.owners)
    running = [p for p in inputs.pods if _running(p)]
    by_class = {c.resource: c.name for c in classes}
    workloads = plan_workloads(running + inputs.pending_pods(), names, owners, data.quotas, by_class)
    if inputs.pending_pods():
        warnings.append(
            f"{len(inputs.pending_pods())} pending pod(s) in the input are not placed by the plan: it moves "
            "the running ones (simulate places pending pods)"
        )
    world = _World(inputs, gates, options.strategy, [*inputs.classes, *new])
    world.plan_classes = classes
    budgets = read_budgets(data.budgets)
    namespaces = sorted({w.namespace for w in workloads})
    steps = [_step_zero(classes, namespaces, world)]
    first_failing: int | None = None
    carried: list[tuple[Pod, str]] = []  # (pod, node it came from): not placed yet, tried again each step
    by_name = {g.name: g for g in gpus}
    for i, (pool, members) in enumerate(batches(gpus, world.nodes, options), start=1):
        step, carried = _run_step(
            i,
            pool,
            [by_name[m] for m in members],
            world,
            budgets,
            owners,
            names,
            carried,
            explain=options.explain or first_failing is None,
        )
        steps.append(step)
        if not step.fits and first_failing is None:
            first_failing = i
    return Plan(tuple(classes), tuple(workloads), tuple(steps), tuple(warnings), first_failing)


def _step_zero(classes: Sequence[ClassPlan], namespaces: Sequence[str], world: _World) -> Step:
    create = [c.name for c in classes if not c.exists]
    actions = [
        "install dra-capacity with the webhook, pod routing and the binder (helm install, docs/install.md)",
        "install the NVIDIA DRA driver with consumable shares on no node yet (it publishes a node's GPUs "
        "once the device plugin leaves it)",
    ]
    if create:
        actions.append(f"kubectl apply -f <--write-classes DIR>  # DeviceClass {', '.join(create)}")
    actions += [f"kubectl label namespace {ns} {ROUTING_LABEL}" for ns in namespaces]
    rollback = [f"kubectl label namespace {ns} dra-capacity.io/pod-routing-" for ns in namespaces]
    if create:
        rollback.append(f"kubectl delete deviceclass {' '.join(create)}")
    rollback.append("helm uninstall the DRA driver and dra-capacity (no pod uses them yet)")
    return Step(0, (), None, tuple(actions), tuple(rollback), True, headroom=world.headroom(classes))


def _run_step(
    index: int,
    pool: str | None,
    batch: Sequence[GpuNode],
    world: _World,
    budgets: Sequence[Any],
    owners: OwnerIndex,
    names: Sequence[str],
    carried: list[tuple[Pod, str]],
    *,
    explain: bool,
) -> tuple[Step, list[tuple[Pod, str]]]:
    members = [g.name for g in batch]
    # cordon
    for name in members:
        node = world.nodes[name].model_copy(deep=True)
        node.spec.unschedulable = True
        world.set_node(node)
    # drain: every pod but DaemonSet and mirror pods
    on_batch = [k for k, p in world.pods.items() if p.spec.node_name in set(members)]
    evicted: list[Pod] = []
    bare: list[str] = []
    daemons: list[str] = []
    for key in on_batch:
        pod = world.pods[key]
        if is_daemonset_pod(pod) or MIRROR_ANNOTATION in (pod.metadata.annotations or {}):
            if is_daemonset_pod(pod):
                daemons.append(f"{key[0]}/{key[1]}")
            continue
        if not any(r.controller for r in pod.metadata.owner_references or []):
            bare.append(f"{key[0]}/{key[1]}")
        evicted.append(pod)
    checks = check_drain(budgets, world.pods.values(), evicted)
    drained = [(world.evict((p.namespace, p.name)), p.spec.node_name or "") for p in evicted]
    moves: dict[Key, Move] = {}
    # a bare pod is deleted by the drain (--force) and nothing recreates it: not placed, nothing held
    lonely = {f"{p.namespace}/{p.name}" for p, _ in drained} & set(bare)
    for pod, source in drained:
        if f"{pod.namespace}/{pod.name}" in lonely:
            moves[(pod.namespace, pod.name)] = Move(
                pod.namespace,
                pod.name,
                _owner_text(owners, pod),
                source,
                "deleted",
                phase="drain",
                reason="a bare pod: the drain deletes it (--force) and nothing recreates it",
            )
    # a budget that blocks has its pods evicted last (kubectl drain retries them as replacements run)
    held = {k for c in checks if c.blocks for k in c.pods}
    rest = [d for d in drained if f"{d[0].namespace}/{d[0].name}" not in lonely]
    queue = carried + [d for d in rest if _ref(d[0]) not in held] + [d for d in rest if _ref(d[0]) in held]
    # placed while the batch is cordoned (their controllers recreate them at once)
    left = _place_all(world, queue, owners, names, "drain", moves)
    checks = [_stalls(c, moves) for c in checks]
    # swap the device plugin for the DRA driver, uncordon
    for g in batch:
        node = world.nodes[g.name].model_copy(deep=True)
        for field_name in ("allocatable", "capacity"):
            values = getattr(node.status, field_name) if node.status else None
            if values:
                for r in g.resources:
                    values.pop(r, None)
        node.spec.unschedulable = None
        world.publish(g)
        world.set_node(node)
    world.placer.node_slices_changed(world.slices, members)
    left = _place_all(world, left, owners, names, "uncordon", moves)
    for pod, _ in left:
        key = (pod.namespace, pod.name)
        if explain and moves[key].result == "unschedulable":
            moves[key] = _with_explain(moves[key], world.explain(_replacement(pod)))
    ordered = tuple(moves[(p.namespace, p.name)] for p, _ in [*carried, *drained])
    fits = all(m.result in ("bound", "deleted") for m in ordered) and not any(c.stalls for c in checks)
    actions = _actions(members, bare, daemons, checks)
    rollback = _rollback(members)
    step = Step(
        index,
        tuple(members),
        pool,
        actions,
        rollback,
        fits,
        ordered,
        tuple(checks),
        tuple(bare),
        tuple(daemons),
        world.headroom(world.plan_classes),
    )
    return step, left


def _ref(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}"


def _stalls(check: BudgetCheck, moves: Mapping[Key, Move]) -> BudgetCheck:
    """The check with how many of its pods the drain cannot evict (disruption.stalled)."""
    if not check.blocks:
        return check
    placed = 0
    for ref in check.pods:
        ns, _, name = ref.partition("/")
        m = moves.get((ns, name))
        placed += m is not None and m.result == "bound" and m.phase == "drain"
    return replace(check, stalls=stalled(check, placed))


def _with_explain(move: Move, why: tuple[str, ...]) -> Move:
    return Move(
        move.namespace,
        move.name,
        move.owner,
        move.source,
        move.result,
        move.node,
        move.via,
        move.phase,
        move.reason,
        why,
    )


def _place_all(
    world: _World,
    queue: list[tuple[Pod, str]],
    owners: OwnerIndex,
    names: Sequence[str],
    phase: str,
    moves: dict[Key, Move],
) -> list[tuple[Pod, str]]:
    """Place the queue by priority (as PrioritySort orders it); return what is left, in queue order."""
    left: list[tuple[Pod, str]] = []
    order = sorted(range(len(queue)), key=lambda i: (-pod_priority(queue[i][0]), i))
    placed: set[int] = set()
    for i in order:
        pod, source = queue[i]
        replacement = _replacement(pod)
        if replacement.spec.resource_claims:
            moves[(pod.namespace, pod.name)] = Move(
                pod.namespace,
                pod.name,
                _owner_text(owners, pod),
                source,
                "unsupported",
                phase=phase,
                reason="not planned: the pod has its own ResourceClaims (spec.resourceClaims); simulate it",
            )
            continue
        placement = world.place(replacement)
        via = None
        if placement.result is PlacementResult.BOUND:
            placed.add(i)
            if placement.claim is not None:
                via = "shares"
            elif shared_requests(pod, names):
                via = "device plugin"
            else:
                via = "node"
        moves[(pod.namespace, pod.name)] = Move(
            pod.namespace,
            pod.name,
            _owner_text(owners, pod),
            source,
            placement.result.value,
            placement.node,
            via,
            phase,
            placement.reason,
        )
    for i, item in enumerate(queue):
        if i not in placed and moves[(item[0].namespace, item[0].name)].result == "unschedulable":
            left.append(item)
    return left


def _actions(
    members: Sequence[str], bare: Sequence[str], daemons: Sequence[str], checks: Sequence[BudgetCheck]
) -> tuple[str, ...]:
    nodes = " ".join(members)
    out = [f"kubectl cordon {nodes}"]
    drain = f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data"
    if bare:
        drain += " --force  # deletes the bare pods " + ", ".join(bare)
    out.append(drain)
    for c in checks:
        if c.stalls:
            out.append(
                f"# PodDisruptionBudget {c.budget} allows {c.allowed} disruption(s) and the batch holds "
                f"{c.evicted} of its pods, whose replacements find no room outside the batch (the drain "
                f"retries them last): it cannot evict {c.stalls} of them and does not end; drain fewer "
                "nodes at once (--max-unavailable) or make room first"
            )
        elif c.blocks:
            out.append(
                f"# PodDisruptionBudget {c.budget} allows {c.allowed} disruption(s) and the batch holds "
                f"{c.evicted} of its pods: the drain evicts them as the budget allows, awaiting replacements"
            )
    out.append(
        f"switch {nodes} from the device plugin to the DRA driver: stop the device plugin there (with the "
        f"GPU operator: kubectl label node {nodes} nvidia.com/gpu.deploy.device-plugin=false --overwrite) "
        "and run the DRA driver there"
    )
    out.append(
        f"kubectl get resourceslices --field-selector spec.nodeName={members[0]}  # the driver published"
    )
    out.append(f"kubectl uncordon {nodes}")
    return tuple(out)


def _rollback(members: Sequence[str]) -> tuple[str, ...]:
    nodes = " ".join(members)
    return (
        f"kubectl cordon {nodes}",
        f"kubectl drain {nodes} --ignore-daemonsets --delete-emptydir-data  # the pods on shares leave",
        f"switch {nodes} back: remove the DRA driver there, restore the device plugin and its sharing config",
        f"kubectl uncordon {nodes}",
    )
