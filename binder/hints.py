"""Queueing hints: which informer events may change where a pending pod fits. Pure functions on JSON.

Upstream: each plugin's `EventsToRegister` with its `QueueingHintFn` (pkg/scheduler/framework/plugins/):
NodeAffinity and NodeResourcesFit requeue on a node's labels, spec or allocatable (not on a heartbeat);
DynamicResources on a ResourceSlice's spec, a DeviceClass, or a claim's allocation or reservation;
InterPodAffinity and PodTopologySpread on an assigned pod's labels; every plugin on a pod that leaves its
node. The event functions (`pod_hint`, `node_hint`, ...) return the reason (a label of the `changes`
counter) or None for "no event"; then `worth_requeuing` asks, per parked pod, the hints (`HINTS`) of the
plugins that rejected it, as upstream's isPodWorthRequeuing (finer where upstream requeues everything:
docs/divergences.md, "Per-pod queueing hints").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from binder.names import CLAIM_ANNOTATION
from binder.scheduler_metrics import DYNAMIC_RESOURCES, NODE_RESOURCES_FIT

TERMINAL = ("Succeeded", "Failed")

Key = tuple[str, str]


def pod_uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def pod_priority(pod: Mapping[str, Any]) -> int:
    """The pod's `spec.priority`, 0 when unset (corev1helpers.PodPriority, which PrioritySort orders by)."""
    priority = (pod.get("spec") or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def pending_for(pod: Mapping[str, Any], scheduler_name: str) -> bool:
    """A pod this binder should place: ours by schedulerName, not on a node, not deleted, not finished."""
    spec = pod.get("spec") or {}
    return (
        spec.get("schedulerName") == scheduler_name
        and not spec.get("nodeName")
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in TERMINAL
    )


def enqueue_pending(old: Mapping[str, Any] | None, new: Mapping[str, Any], scheduler_name: str) -> bool:
    """Queue the pending pod `new` again? A new pod or a changed spec is a reason; a status write (ours: the
    condition, the claim link) is not (upstream's isPodUpdated ignores status too)."""
    return old is None or not pending_for(old, scheduler_name) or old.get("spec") != new.get("spec")


def node_name(pod: Mapping[str, Any] | None) -> str | None:
    return ((pod or {}).get("spec") or {}).get("nodeName") or None


def labels(obj: Mapping[str, Any] | None) -> Any:
    return ((obj or {}).get("metadata") or {}).get("labels")


def pod_hint(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, *, in_flight: bool, own_binding: bool
) -> str | None:
    """A pod event, as it may change other pods' placement. `in_flight`: the pod had a bind under way;
    `own_binding`: the event is the echo of our own Binding (both from the assume cache).

    "pod-gone" when a pod that held node resources (or was being bound) is gone or finished,
    "pod-bound-elsewhere" when someone else bound it, "pod-labels" when an assigned pod's labels changed
    (the queueing hint of InterPodAffinity and PodTopologySpread)."""
    was_on_node, on_node = bool(node_name(old)), bool(node_name(new))
    if new is None or (on_node and (new.get("status") or {}).get("phase") in TERMINAL):
        return "pod-gone" if was_on_node or on_node or in_flight else None
    if on_node and not was_on_node:
        return None if own_binding else "pod-bound-elsewhere"
    if on_node and was_on_node and labels(old) != labels(new):
        return "pod-labels"
    return None


def node_view(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What placement reads of a node: labels, spec, allocatable."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return (meta.get("labels"), node.get("spec"), status.get("allocatable"))


def node_hint(kind: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """None for a heartbeat or a status condition: nothing placement reads."""
    if kind == "MODIFIED" and old is not None and new is not None and node_view(old) == node_view(new):
        return None
    return "node"


def slice_hint(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str | None:
    """None for a watch resync or a metadata-only update."""
    if old is not None and new is not None and old.get("spec") == new.get("spec"):
        return None
    return "resource-slice"


def claim_view(claim: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What placement reads of a claim: its allocation and its reservations."""
    if claim is None:
        return (None, None)
    status = claim.get("status") or {}
    return (status.get("allocation"), status.get("reservedFor"))


def is_allocated(claim: Mapping[str, Any] | None) -> bool:
    return bool(((claim or {}).get("status") or {}).get("allocation"))


def controller_pod_uid(claim: Mapping[str, Any]) -> str | None:
    """The uid of the pod controlling an extended-resource claim (ours by annotation); None for any other."""
    meta = claim.get("metadata") or {}
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return None
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("kind") == "Pod" and ref.get("uid"):
            return str(ref["uid"])
    return None


def claim_hint(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    assumed: Mapping[str, Any] | None,
    in_flight: bool,
) -> str | None:
    """A claim event. `assumed`: the object our own last write of that claim returned, as the assume cache
    held it when the event came (None if none); `in_flight`: the claim belongs to a bind under way, whose
    allocation is counted already."""
    if new is None:
        return "claim-deleted" if is_allocated(old) else None
    if assumed is not None and claim_view(new) == claim_view(assumed):
        return None  # the echo of our own write
    if in_flight:
        return None
    if claim_view(old) != claim_view(new):
        return "claim-changed"
    return None


# --- per-pod queueing hints (upstream's QueueingHintFn per plugin and ClusterEvent) -------------------------

QUEUE = "Queue"
QUEUE_SKIP = "QueueSkip"

# ClusterEvent resources (fwk.EventResource); WILDCARD moves every unschedulable pod (upstream's wildcard
# event), as does a storage change (the volume reasons carry no plugin of their own here)
NODE = "Node"
ASSIGNED_POD = "AssignedPod"
RESOURCE_SLICE = "ResourceSlice"
RESOURCE_CLAIM = "ResourceClaim"
DEVICE_CLASS = "DeviceClass"
DEVICE_TAINT_RULE = "DeviceTaintRule"
STORAGE = "Storage"
WILDCARD = "*"
# ActionTypes
ADD = "Add"
UPDATE = "Update"
DELETE = "Delete"
UPDATE_POD_LABEL = "UpdatePodLabel"

PreCheck = Callable[[Mapping[str, Any]], bool]
"""May the node(s) an event concerns host this pod, by its static predicates (node name, unschedulable,
taints, node affinity: allocator/scheduling/predicates.py `static_reasons`)? None: any node may."""

HintFn = Callable[[Mapping[str, Any], Any, Any, "PreCheck | None"], str]


@dataclass(frozen=True)
class ClusterEvent:
    """One informer event as the queue sees it (fwk.ClusterEvent); `label` is the `changes` counter's."""

    resource: str
    action: str
    label: str


def _queue(pod: Mapping[str, Any], old: Any, new: Any, pre_check: PreCheck | None) -> str:
    """No hint of our own: the event may help the pod (upstream's default for a registered event)."""
    return QUEUE


def _may_host(pod: Mapping[str, Any], pre_check: PreCheck | None) -> str:
    return QUEUE if pre_check is None or pre_check(pod) else QUEUE_SKIP


def _on_event_nodes(pod: Mapping[str, Any], old: Any, new: Any, pre_check: PreCheck | None) -> str:
    """A plugin whose verdict is per node (resources, ports, devices, taints): the event changes only the
    node(s) it concerns, so it helps only a pod those nodes may host."""
    return _may_host(pod, pre_check)


def _node_affinity(pod: Mapping[str, Any], old: Any, new: Any, pre_check: PreCheck | None) -> str:
    """NodeAffinity's isSchedulableAfterNodeChange: a new node, or changed labels, that now match."""
    if old is not None and new is not None and labels(old) == labels(new):
        return QUEUE_SKIP
    return _may_host(pod, pre_check)


def _dra_claim(pod: Mapping[str, Any], old: Any, new: Any, pre_check: PreCheck | None) -> str:
    """DynamicResources' isSchedulableAfterClaimChange, finer: the pod's own claim changed, or a claim freed
    devices (deallocated or deleted while allocated) that a node the pod may use reaches."""
    claim = new if new is not None else old
    if claim is not None and controller_pod_uid(claim) == pod_uid(pod) and pod_uid(pod):
        return QUEUE
    if freed_allocation(old, new) is None:
        return QUEUE_SKIP
    return _may_host(pod, pre_check)


NODE_PORTS = "NodePorts"
NODE_AFFINITY = "NodeAffinity"
TAINT_TOLERATION = "TaintToleration"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"

_PER_NODE = (
    DYNAMIC_RESOURCES,
    NODE_RESOURCES_FIT,
    NODE_PORTS,
    TAINT_TOLERATION,
    NODE_UNSCHEDULABLE,
    NODE_NAME,
)
_TOPOLOGY = (POD_TOPOLOGY_SPREAD, INTER_POD_AFFINITY)  # a change anywhere in a domain counts: always Queue


def _node_event_hints() -> tuple[tuple[str, HintFn], ...]:
    return (
        *((p, _on_event_nodes) for p in _PER_NODE),
        (NODE_AFFINITY, _node_affinity),
        *((p, _queue) for p in _TOPOLOGY),
    )


HINTS: dict[tuple[str, str], tuple[tuple[str, HintFn], ...]] = {
    (NODE, ADD): _node_event_hints(),
    (NODE, UPDATE): _node_event_hints(),
    (NODE, DELETE): tuple((p, _queue) for p in _TOPOLOGY),
    # a pod left its node (pre_check: that node). DynamicResources queues without a node check: its label
    # also carries the volume reasons (a ReadWriteOncePod volume freed anywhere) and an in-flight bind's
    # released devices.
    (ASSIGNED_POD, DELETE): (
        (NODE_RESOURCES_FIT, _on_event_nodes),
        (NODE_PORTS, _on_event_nodes),
        (DYNAMIC_RESOURCES, _queue),
        *((p, _queue) for p in _TOPOLOGY),
    ),
    (ASSIGNED_POD, ADD): ((DYNAMIC_RESOURCES, _queue), *((p, _queue) for p in _TOPOLOGY)),
    (ASSIGNED_POD, UPDATE_POD_LABEL): tuple((p, _queue) for p in _TOPOLOGY),
    **{(RESOURCE_SLICE, a): ((DYNAMIC_RESOURCES, _on_event_nodes),) for a in (ADD, UPDATE, DELETE)},
    **{(RESOURCE_CLAIM, a): ((DYNAMIC_RESOURCES, _dra_claim),) for a in (ADD, UPDATE, DELETE)},
    **{(DEVICE_CLASS, a): ((DYNAMIC_RESOURCES, _queue),) for a in (ADD, UPDATE, DELETE)},
    **{(DEVICE_TAINT_RULE, a): ((DYNAMIC_RESOURCES, _queue),) for a in (ADD, UPDATE, DELETE)},
}
"""Each plugin's EventsToRegister with its QueueingHintFn (pkg/scheduler/framework/plugins/*); an event a
plugin does not register never requeues a pod that plugin alone rejected."""

KNOWN_PLUGINS = frozenset(p for hs in HINTS.values() for p, _ in hs) | {NODE_AFFINITY}


def worth_requeuing(
    event: ClusterEvent,
    rejectors: frozenset[str],
    pod: Mapping[str, Any] | None,
    old: Any,
    new: Any,
    pre_check: PreCheck | None,
) -> bool:
    """Upstream's isPodWorthRequeuing: a pod rejected by no known plugin, a wildcard event, or a Queue from
    a hint of a plugin that rejected it. A plugin this table does not know (or a pod not held) queues."""
    if not rejectors or event.resource in (WILDCARD, STORAGE) or pod is None or rejectors - KNOWN_PLUGINS:
        return True
    for plugin, fn in HINTS.get((event.resource, event.action), ()):
        if plugin in rejectors and fn(pod, old, new, pre_check) == QUEUE:
            return True
    return False


# --- what an event concerns, computed once per event -------------------------------------------------------


def action_of(old: Any, new: Any) -> str:
    return ADD if old is None else DELETE if new is None else UPDATE


POD_EVENTS = {"pod-gone": DELETE, "pod-bound-elsewhere": ADD, "pod-labels": UPDATE_POD_LABEL}


def freed_allocation(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> Any:
    """The allocation a claim event gave back (deallocated, replaced or deleted while allocated), or None."""
    before = ((old or {}).get("status") or {}).get("allocation")
    if not before:
        return None
    after = ((new or {}).get("status") or {}).get("allocation")
    return before if after != before else None


def selector_node_names(selector: Any) -> list[str] | None:
    """The node names an allocation's nodeSelector pins (one term of `metadata.name In [...]`, as the
    allocator writes for node-local devices); None for any other selector or none (any node: conservative)."""
    terms = (selector or {}).get("nodeSelectorTerms") if isinstance(selector, Mapping) else None
    if not isinstance(terms, list) or len(terms) != 1 or not isinstance(terms[0], Mapping):
        return None
    term = terms[0]
    fields = term.get("matchFields") or []
    if term.get("matchExpressions") or len(fields) != 1 or not isinstance(fields[0], Mapping):
        return None
    req = fields[0]
    values = req.get("values")
    if req.get("key") != "metadata.name" or req.get("operator") != "In" or not isinstance(values, list):
        return None
    return [str(v) for v in values]


def slice_node_names(obj: Mapping[str, Any] | None) -> list[str] | None:
    """The node a ResourceSlice's devices are on (`spec.nodeName`); None for nodeSelector, allNodes or
    perDeviceNodeSelection (any node, conservatively)."""
    name = ((obj or {}).get("spec") or {}).get("nodeName")
    return [str(name)] if name else None


class SliceView(Protocol):
    """What the slice rule reads of the snapshot (after the event was applied to it)."""

    def device_full(self, driver: str, pool: str, device: str) -> bool:
        """No further allocation (by a request that consumes a positive amount) fits on the device."""
        ...

    def pool_slices(self, driver: str, pool: str) -> int:
        """How many slices the snapshot holds of the pool, any generation."""
        ...


_BUDGET = ("capacity", "consumesCounters", "allowMultipleAllocations")


def _frame(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """A slice's spec without its devices and its pool's generation."""
    rest = {k: v for k, v in spec.items() if k not in ("devices", "pool")}
    pool = {k: v for k, v in (spec.get("pool") or {}).items() if k != "generation"}
    return (rest, pool)


def _devices(spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]] | None:
    """Devices by name; None when a name repeats (a pool the allocator may reject as a whole)."""
    out: dict[str, Mapping[str, Any]] = {}
    for dev in spec.get("devices") or []:
        name = str((dev or {}).get("name"))
        if name in out:
            return None
        out[name] = dev
    return out


def slice_update_may_help(old: Mapping[str, Any], new: Mapping[str, Any], view: SliceView) -> bool:
    """May this ResourceSlice update make any pending pod fit? False only when it adds nothing usable:

    * the spec is the same, or
    * the same node scope, driver, pool, slice count and shared counters; a new pool generation only for
      a pool of this one slice (otherwise the generation decides which slices count); no new device, and a
      device gone consumes no counters; every changed device keeps its capacity, counter consumption and
      multi-allocation, and is full in the snapshot (its changed attributes or taints cannot admit a pod
      while nothing more fits on it; the binder's claims never use adminAccess, which would share it).

    A changed device with room left (a new attribute may make a CEL selector match) may help."""
    os, ns = old.get("spec") or {}, new.get("spec") or {}
    if os == ns:
        return False
    if _frame(os) != _frame(ns):
        return True
    driver, pool = str(ns.get("driver")), str((ns.get("pool") or {}).get("name"))
    generation = ((os.get("pool") or {}).get("generation"), (ns.get("pool") or {}).get("generation"))
    if generation[0] != generation[1] and view.pool_slices(driver, pool) != 1:
        return True
    before, after = _devices(os), _devices(ns)
    if before is None or after is None:
        return True
    for name, dev in after.items():
        was = before.get(name)
        if was is None:
            return True
        if dev == was:
            continue
        if any(dev.get(k) != was.get(k) for k in _BUDGET) or not view.device_full(driver, pool, name):
            return True
    return any(name not in after and dev.get("consumesCounters") for name, dev in before.items())
