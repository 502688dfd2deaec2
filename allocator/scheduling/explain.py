"""Why a pod or a set of claims did not fit: a diagnosis pass, run only for what failed (simulate --explain).

The scheduler's summary (`0/2 nodes are available: 2 cannot allocate all claims.`) says where a pod failed,
not why. This pass looks again, node by node: the node-only predicates (which taint, which selector), resource
fit, then each request of each claim against the node's devices, stage by stage (class selectors, request
selectors, per-device node selection, capacity names and amounts, dedicated use, consumed capacity, counters,
device taints). It never changes the search (allocator/structured/search.py) and reads the committed state
through a planned, never-run `Search` (`Cluster.plan`).

Each request is judged on its own against the committed state: when every request has devices but the search
still finds no combination (other requests of the pod, or constraints, take them), the text says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from allocator.scheduling.nodeports import REASON_PORTS, HostPort, host_ports
from allocator.scheduling.placement import REASON_CLAIM_NOT_ON_NODE
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.predicates import (
    REASON_AFFINITY,
    REASON_NODE_NAME,
    REASON_TAINT,
    REASON_UNSCHEDULABLE,
    NodeUsage,
    allocatable_vector,
    fit_reasons,
    fit_vector,
    node_selector_matches,
    pod_requests,
    static_reasons,
    untolerated_taint,
)
from allocator.scheduling.synthesis import dra_resources_on_node, scalar_requests, synthesize_for_resources
from allocator.scheduling.topologyfilters import TopologyFilters, topology_filters
from allocator.structured.cluster import Cluster, NodeInfo
from allocator.structured.errors import AllocationError
from allocator.structured.pools import DeviceRecord
from allocator.structured.requests import RequestData
from allocator.structured.search import Search, taint_prevents
from allocator.structured.selection import per_device_node_matches
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import ALLOCATION_MODE_ALL, ResourceClaim
from resourceapi.capacity import (
    CapacityNameConflict,
    compute_consumption,
    consumed_amount,
    normalize_requests,
    violates_policy,
)
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.machinery.quantity import Format, Quantity
from resourceapi.tolerations import tolerates

MAX_NODES_NAMED = 3  # node names listed after a grouped reason


@dataclass(frozen=True)
class NodeDiagnosis:
    """Why the pod (or the claims) cannot go to one node: one line per failing request or predicate."""

    node: str
    reasons: tuple[str, ...]


def group_by_reason(diagnoses: Iterable[NodeDiagnosis]) -> list[str]:
    """Reasons counted across nodes, most frequent first, then by text: `on 2 nodes: REASON (nodes: a, b)`."""
    nodes_of: dict[str, list[str]] = {}
    for d in diagnoses:
        for reason in d.reasons:
            nodes_of.setdefault(reason, []).append(d.node)
    out: list[str] = []
    for reason, nodes in sorted(nodes_of.items(), key=lambda item: (-len(item[1]), item[0])):
        named = ", ".join(nodes[:MAX_NODES_NAMED])
        if len(nodes) > MAX_NODES_NAMED:
            named += f", +{len(nodes) - MAX_NODES_NAMED} more"
        count = f"{len(nodes)} node" if len(nodes) == 1 else f"{len(nodes)} nodes"
        out.append(f"on {count}: {reason} (nodes: {named})")
    return out


# --- one node's devices ------------------------------------------------------------------------------------


def explain_claims(cluster: Cluster, node: NodeInfo, claims: Sequence[ResourceClaim]) -> list[str]:
    """Why `claims` (allocated together, all-or-nothing) do not fit on `node`: per failing request."""
    try:
        search = cluster.plan(node, claims)
    except AllocationError as exc:
        return [exc.message]
    reasons: list[str] = []
    try:
        for plan in search.plans:
            for entries in plan.requests:
                found = [_request_reason(search, data) for data in entries]
                if all(r is not None for r in found):
                    reasons.extend(r for r in found if r is not None)
    except AllocationError as exc:
        return [exc.message]
    if reasons:
        return reasons
    if search.pools.any_invalid:
        return ["invalid resource pools were encountered"]
    constrained = any(plan.constraints for plan in search.plans)
    why = "the claims' constraints" if constrained else "the other requests of these claims"
    return [
        "every request has devices on its own, but no combination fits them together "
        f"(devices taken by {why})"
    ]


def _label(data: RequestData) -> str:
    return f"claim {data.claim}, request {data.full_name}"


def _short(name: str) -> str:
    """A capacity's name without its driver domain (`gpu.nvidia.com/shares` -> `shares`)."""
    return name.rsplit("/", 1)[-1]


def _request_reason(search: Search, data: RequestData) -> str | None:
    """Why this request alone has too few devices on the node, or None when it has enough."""
    prefix = _label(data)
    devices: list[DeviceRecord] = list(search.pools.candidates)
    if not devices:
        unusable = [p for p in search.pools.pools if not p.usable]
        if unusable:
            pool = unusable[0]
            state = "invalid" if pool.invalid else "being updated (incomplete)"
            return f"{prefix}: resource pool {pool.id} is {state}"
        return f"{prefix}: no devices on this node"
    features = search.features
    if not features.device_binding_and_status:
        devices = [d for d in devices if not d.binding_conditions]
        if not devices:
            return (
                f"{prefix}: every device on this node has binding conditions (DRADeviceBindingConditions off)"
            )
    if data.cls is not None:
        cls = data.cls
        matched = [d for d in devices if search.matcher.class_matches(d, cls)]
        if not matched:
            return f"{prefix}: " + _selector_text(
                f"class {cls.name} selector", tuple(s or "" for s in cls.selectors), devices, search, data
            )
        devices = matched
    if data.selectors:
        matched = [d for d in devices if search.matcher.request_matches(d, data.selectors, data.claim)]
        if not matched:
            return f"{prefix}: " + _selector_text("request selector", data.selectors, devices, search, data)
        devices = matched
    matched = [d for d in devices if per_device_node_matches(d, search.node_name, search.labels)]
    if not matched:
        return f"{prefix}: none of the {len(devices)} matching devices is available to this node"
    devices = matched
    if features.consumable_capacity:
        devices_or_reason = _capacity_stage(data, devices)
        if isinstance(devices_or_reason, str):
            return f"{prefix}: {devices_or_reason}"
        devices = devices_or_reason
    return _availability(search, data, devices)


def _selector_text(
    owner: str, selectors: tuple[str, ...], devices: Sequence[DeviceRecord], search: Search, data: RequestData
) -> str:
    """Which selector excludes the devices: alone it matches none, or it excludes what the earlier match."""
    left = list(devices)
    for i, expression in enumerate(selectors):
        one = (expression,)
        kept = [d for d in left if search.matcher.request_matches(d, one, data.claim)]
        if not kept:
            if left is devices or not any(
                search.matcher.request_matches(d, one, data.claim) for d in devices
            ):
                return f"{owner} {i + 1} matches no device on this node ({len(devices)} devices)"
            return f"{owner} {i + 1} excludes the {len(left)} devices its earlier selectors match"
        left = kept
    return f"{owner}s together match no device on this node"


def _capacity_stage(data: RequestData, devices: list[DeviceRecord]) -> list[DeviceRecord] | str:
    """Devices that can serve the request's capacity at all (names published, amount within value and
    policy), or why none can."""
    requests = data.capacity or {}
    served: list[DeviceRecord] = []
    missing: dict[str, list[DeviceRecord]] = {}
    too_large: list[tuple[str, Quantity, DeviceRecord]] = []
    policy: list[tuple[str, Quantity]] = []
    for device in devices:
        try:
            normalized = normalize_requests(requests, device.id.driver)
        except CapacityNameConflict as exc:
            return str(exc)
        absent = [name for name in normalized if name not in device.capacity]
        if absent:
            missing.setdefault(absent[0], []).append(device)
            continue
        if compute_consumption(device.capacity, normalized) is not None:
            served.append(device)
            continue
        for name, entry in device.capacity.items():
            consumed = consumed_amount(normalized.get(name), entry)
            if consumed.value > entry.value:
                too_large.append((name, consumed, device))
                break
            if violates_policy(consumed, entry.policy):
                policy.append((name, normalized.get(name) or consumed))
                break
    if served:
        return served
    if missing and not too_large and not policy:
        name = next(iter(missing))
        advertised = sorted({_short(e.spelling) for d in devices for e in d.capacity.values()})
        return (
            f'no device publishes capacity "{_short(name)}" '
            f"(devices advertise: {', '.join(advertised) or 'no capacity'})"
        )
    if too_large and not policy:
        name, amount, _ = too_large[0]
        largest = max(d.capacity[name].quantity for n, _, d in too_large if n == name)
        every = "every matching device" if len(too_large) == len(devices) else "every device that has it"
        return f"{_short(name)} {amount} > {largest} on {every}"
    if policy:
        name, amount = policy[0]
        return f"{_short(name)}={amount} is not allowed by the requestPolicy of any matching device"
    return "no matching device can serve the requested capacity"


@dataclass
class _Busy:
    """Matching devices that cannot be taken now, by why."""

    allocated: int = 0
    full: int = 0
    full_detail: str = ""
    full_headroom: Fraction | None = None
    counters: int = 0
    counters_detail: str = ""
    tainted: int = 0
    taint_detail: str = ""


def _availability(search: Search, data: RequestData, devices: list[DeviceRecord]) -> str | None:
    features = search.features
    busy = _Busy()
    free = 0
    for device in devices:
        multi = features.consumable_capacity and device.allow_multi
        if not data.admin and device.id in search.state.dedicated:
            busy.allocated += 1
            continue
        if features.consumable_capacity and not search.capacity_fits(data, device):
            _note_full(busy, data, device, search)
            continue
        paid = multi and search.state.has_shares(device.id)
        if device.consumes and not paid:
            if not features.partitionable_devices:
                continue
            short = _counter_shortage(device, search.available_counters(device.id.pool_id))
            if short:
                busy.counters += 1
                busy.counters_detail = busy.counters_detail or short
                continue
        if features.device_taints and taint_prevents(device, data.tolerations):
            busy.tainted += 1
            if not busy.taint_detail:
                busy.taint_detail = _taint_text(device, data)
            continue
        free += 1
    needed = len(devices) if data.mode == ALLOCATION_MODE_ALL else max(1, data.num_devices)
    if free >= needed:
        return None
    prefix = _label(data)
    parts = _busy_parts(busy)
    n = len(devices)
    if free == 0 and len(parts) == 1:
        kind = parts[0][0]
        every = "the one matching device" if n == 1 else f"all {n} matching devices"
        if kind == "full":
            return f"{prefix}: {_amounts(data)}: {every}{' is' if n == 1 else ''} full ({busy.full_detail})"
        if kind == "allocated":
            return f"{prefix}: {every} {'is' if n == 1 else 'are'} already allocated (dedicated)"
        if kind == "counters":
            return f"{prefix}: counters exhausted for {every} ({busy.counters_detail})"
        return f"{prefix}: {every} {'has' if n == 1 else 'have'} a taint not tolerated ({busy.taint_detail})"
    why = "; ".join(text for _, text in parts)
    wanted = "all" if data.mode == ALLOCATION_MODE_ALL else str(needed)
    plural = "device" if needed == 1 and wanted != "all" else "devices"
    detail = f" ({why})" if why else ""
    matching = "matching device" if n == 1 else "matching devices"
    return f"{prefix}: needs {wanted} {plural}, {free} of {n} {matching} available{detail}"


def _busy_parts(busy: _Busy) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    if busy.allocated:
        parts.append(("allocated", f"{busy.allocated} already allocated (dedicated)"))
    if busy.full:
        parts.append(("full", f"{busy.full} full ({busy.full_detail})"))
    if busy.counters:
        parts.append(("counters", f"{busy.counters} with counters exhausted ({busy.counters_detail})"))
    if busy.tainted:
        parts.append(("tainted", f"{busy.tainted} with a taint not tolerated ({busy.taint_detail})"))
    return parts


def _amounts(data: RequestData) -> str:
    if not data.capacity:
        return "the devices' default amounts"
    return "request " + ", ".join(f"{k}={v}" for k, v in sorted(data.capacity.items()))


def _note_full(busy: _Busy, data: RequestData, device: DeviceRecord, search: Search) -> None:
    """Count a device without room for the request; keep the used/total of the least used one. A capacity
    the request names is reported before one it does not (which takes the policy's default, or all of it)."""
    busy.full += 1
    consumption = data.consumption(device)
    committed = search.state.aggregated.get(device.id, {})
    if consumption is None:
        return
    named = set(normalize_requests(data.capacity or {}, device.id.driver))
    for name, amount in sorted(consumption.amounts, key=lambda item: item[0] not in named):
        entry = device.capacity[name]
        used = committed.get(name, Fraction(0))
        if used + amount <= entry.value:
            continue
        headroom = entry.value - used
        if busy.full_headroom is None or headroom > busy.full_headroom:
            busy.full_headroom = headroom
            used_q = Quantity.from_fraction(used, entry.quantity.format)
            short = _short(entry.spelling)
            busy.full_detail = f"{used_q}/{entry.quantity} {short} used"
            if name not in named:
                taken = Quantity.from_fraction(amount, entry.quantity.format)
                busy.full_detail += f"; {short} not requested, so each allocation takes {taken}"
        return


def _counter_shortage(device: DeviceRecord, available: Mapping[str, Mapping[str, Fraction]]) -> str:
    """The first counter the device needs more of than its pool has left, as text; "" when all fit."""
    for set_name, counters in device.consumes:
        have = available.get(set_name, {})
        for counter, amount in counters.items():
            left = have.get(counter, Fraction(0))
            if amount > left:
                left_q = _amount(max(left, Fraction(0)))
                return f"counter set {set_name}: {counter} needs {_amount(amount)}, {left_q} left"
    return ""


def _amount(value: Fraction) -> Quantity:
    """A counter amount (its unit's spelling is not kept): binary suffixes for whole numbers, as `80Gi`."""
    return Quantity.from_fraction(value, Format.BINARY_SI if value.denominator == 1 else Format.DECIMAL_SI)


def _taint_text(device: DeviceRecord, data: RequestData) -> str:
    """The first NoSchedule/NoExecute device taint the request does not tolerate."""
    for taint in device.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            tolerates(t, taint) for t in data.tolerations or ()
        ):
            value = f"={taint.value}" if taint.value else ""
            return f"device taint {taint.key}{value}:{taint.effect}"
    return "device taint"


# --- pods --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodContext:
    """What the pod diagnosis reads besides the allocator core: the nodes, their usage, the pod index."""

    nodes: Sequence[Node]
    usage: Callable[[str], NodeUsage]
    index: PodIndex
    resolver: ExtendedResourceResolver
    gates: FeatureGates


def explain_pod(cluster: Cluster, ctx: PodContext, pod: Pod, claims: Sequence[ResourceClaim]) -> list[str]:
    """Why `pod` (with its own `claims`) fits no node, grouped and counted across nodes."""
    return group_by_reason(diagnose_pod(cluster, ctx, pod, claims))


def diagnose_pod(
    cluster: Cluster, ctx: PodContext, pod: Pod, claims: Sequence[ResourceClaim]
) -> list[NodeDiagnosis]:
    """Per node, the reasons `pod` does not fit there, in the order the scheduler's filters run."""
    pending = [c for c in claims if c.status is None or c.status.allocation is None]
    allocated = [c for c in claims if c.status is not None and c.status.allocation is not None]
    vector = fit_vector(pod_requests(pod))
    scalars = scalar_requests(pod) if ctx.resolver.enabled else {}
    ports = host_ports(pod)
    topology = topology_filters(pod, ctx.index)
    out: list[NodeDiagnosis] = []
    for node in sorted(ctx.nodes, key=lambda n: n.name):
        reasons = _node_reasons(cluster, ctx, node, pod, pending, allocated, vector, scalars, ports, topology)
        if reasons:
            out.append(NodeDiagnosis(node.name, tuple(reasons)))
    return out


def _node_reasons(
    cluster: Cluster,
    ctx: PodContext,
    node: Node,
    pod: Pod,
    pending: list[ResourceClaim],
    allocated: list[ResourceClaim],
    vector: dict[str, int],
    scalars: dict[str, int],
    ports: list[HostPort],
    topology: TopologyFilters | None,
) -> list[str]:
    static = static_reasons(pod, node)
    if static:
        return [_static_detail(static[0], pod, node)]
    if ports and ctx.index.ports_conflict(node.name, ports):
        return [REASON_PORTS]
    allocatable = node.status.allocatable if node.status else None
    fit = fit_reasons(
        vector,
        allocatable_vector(node),
        ctx.usage(node.name),
        lambda r: r in scalars and ctx.resolver.delegated_to_dra(r, allocatable),
    )
    if fit:
        return fit
    if topology is not None:
        spread = topology.reasons(node.name)
        if spread:
            return list(spread)
    for c in allocated:
        sel = c.status.allocation.node_selector if c.status and c.status.allocation else None
        if sel is not None and not node_selector_matches(sel, node.labels, node.name):
            return [f"{REASON_CLAIM_NOT_ON_NODE}: claim {c.metadata.name} is allocated elsewhere"]
    claims = list(pending)
    if scalars:
        dra, reason = dra_resources_on_node(scalars, allocatable, ctx.resolver)
        if reason is not None:
            return [reason]
        needs = sorted(dra)
        if needs:
            outcome = synthesize_for_resources(pod, needs, ctx.resolver, ctx.gates)
            if outcome.reason is not None:
                return [outcome.reason]
            if outcome.claim is not None:
                claims.append(outcome.claim)
    if not claims:
        return []
    return explain_claims(cluster, NodeInfo(node.name, dict(node.labels)), claims)


def _static_detail(reason: str, pod: Pod, node: Node) -> str:
    """The node-only predicate's reason with what exactly failed."""
    if reason == REASON_TAINT:
        taint = untolerated_taint(node.spec.taints or [], pod.spec.tolerations or [])
        if taint is not None:
            value = f"={taint.value}" if taint.value else ""
            return f"node taint {taint.key}{value}:{taint.effect} not tolerated"
    if reason == REASON_AFFINITY:
        wrong = [
            f"{k}={v}" for k, v in sorted((pod.spec.node_selector or {}).items()) if node.labels.get(k) != v
        ]
        if wrong:
            return f"node selector mismatch ({', '.join(wrong)} not among the node's labels)"
        return "node selector mismatch (required node affinity)"
    if reason == REASON_UNSCHEDULABLE:
        return "node is unschedulable (cordoned)"
    if reason == REASON_NODE_NAME:
        return f"the pod's spec.nodeName is {pod.spec.node_name}"
    return reason
