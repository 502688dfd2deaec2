"""Node predicates a secondary scheduler applies so the kubelet never rejects its pods; upstream's reasons.

Plugins run in the default profile's order and the first failing one decides (as the framework's
RunFilterPlugins does): NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeResourcesFit. Resource
fit compares the pod's effective requests (max(init, sum(containers)) + sidecars + overhead, upstream's
PodRequests) with allocatable minus what the node's pods already request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from resourceapi.api.core_v1 import (
    TAINT_NODE_UNSCHEDULABLE,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    Taint,
    Toleration,
)
from resourceapi.machinery.quantity import Quantity
from resourceapi.tolerations import tolerates

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_TAINT = "node(s) had untolerated taint(s)"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS = "Too many pods"

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"
_CORE_ORDER = (CPU, MEMORY, EPHEMERAL_STORAGE)
_EFFECTS_THAT_BLOCK = ("NoSchedule", "NoExecute")


# --- effective requests -------------------------------------------------------------------------------------


def _add(into: dict[str, Quantity], items: Mapping[str, Quantity] | None) -> None:
    for name, q in (items or {}).items():
        have = into.get(name)
        into[name] = q if have is None else have + q


def _max(into: dict[str, Quantity], items: Mapping[str, Quantity]) -> None:
    for name, q in items.items():
        have = into.get(name)
        if have is None or q > have:
            into[name] = q


def pod_requests(pod: Pod) -> dict[str, Quantity]:
    """Upstream's PodRequests: containers summed, sidecars added, max with each init container; pod-level
    `spec.resources.requests` replace that for the resources they may name (PodLevelResources); + overhead."""
    reqs: dict[str, Quantity] = {}
    for c in pod.spec.containers:
        _add(reqs, c.resources.requests)
    sidecars: dict[str, Quantity] = {}
    init_max: dict[str, Quantity] = {}
    for c in pod.spec.init_containers or []:
        creqs = c.resources.requests or {}
        if c.is_sidecar:
            _add(reqs, creqs)
            _add(sidecars, creqs)
            effective = dict(sidecars)
        else:
            effective = {}
            _add(effective, creqs)
            _add(effective, sidecars)
        _max(init_max, effective)
    _max(reqs, init_max)
    pod_level = pod.spec.resources.requests if pod.spec.resources is not None else None
    for name, q in (pod_level or {}).items():
        if is_pod_level_resource(name):
            reqs[name] = q
    _add(reqs, pod.spec.overhead)
    return reqs


def is_pod_level_resource(name: str) -> bool:
    """IsSupportedPodLevelResource (component-helpers/resource/helpers.go): cpu, memory, hugepages-*."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def fit_vector(requests: Mapping[str, Quantity]) -> dict[str, int]:
    """The scheduler's integer view of requests: cpu in millicores, everything else Value() (rounded up)."""
    out: dict[str, int] = {}
    for name, q in requests.items():
        out[name] = q.milli_value_ceil() if name == CPU else q.value_ceil()
    return out


# --- taints and tolerations ---------------------------------------------------------------------------------


def untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates (FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if taint.effect not in _EFFECTS_THAT_BLOCK:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


# --- node selection -----------------------------------------------------------------------------------------


def _int_or_none(s: str) -> int | None:
    try:
        return int(s, 10)
    except ValueError:
        return None


def requirement_matches(req: NodeSelectorRequirement, value: str | None) -> bool:
    """One matchExpressions requirement against a label value (None = label absent)."""
    values = req.values or []
    op = req.operator
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        have, bound = _int_or_none(value), _int_or_none(values[0])
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_matches(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """All expressions and fields of a term; a term without requirements matches nothing (upstream)."""
    exprs = term.match_expressions or []
    fields = term.match_fields or []
    if not exprs and not fields:
        return False
    for req in exprs:
        if not requirement_matches(req, labels.get(req.key)):
            return False
    for req in fields:
        if req.key != "metadata.name" or req.operator not in ("In", "NotIn"):
            return False
        if not requirement_matches(req, node_name):
            return False
    return True


def node_selector_matches(selector: NodeSelector, labels: Mapping[str, str], node_name: str) -> bool:
    """Terms are ORed."""
    return any(term_matches(t, labels, node_name) for t in selector.node_selector_terms)


# --- the static plugins -------------------------------------------------------------------------------------


def static_reasons(pod: Pod, node: Node) -> list[str]:
    """Reasons of the first failing node-only plugin (they never change while the node object does not)."""
    tolerations = pod.spec.tolerations or []
    if node.spec.unschedulable:
        probe = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect="NoSchedule")
        if not any(tolerates(t, probe) for t in tolerations):
            return [REASON_UNSCHEDULABLE]
    if pod.spec.node_name and pod.spec.node_name != node.name:
        return [REASON_NODE_NAME]
    if untolerated_taint(node.spec.taints or [], tolerations) is not None:
        return [REASON_TAINT]
    if not required_node_affinity_matches(pod, node):
        return [REASON_AFFINITY]
    return []


def required_node_affinity_matches(pod: Pod, node: Node) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): the nodeSelector and the required terms."""
    labels = node.labels
    if pod.spec.node_selector and any(labels.get(k) != v for k, v in pod.spec.node_selector.items()):
        return False
    affinity = pod.spec.affinity
    required = (
        affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if (affinity and affinity.node_affinity)
        else None
    )
    return required is None or node_selector_matches(required, labels, node.name)


# --- resource fit -------------------------------------------------------------------------------------------


@dataclass
class NodeUsage:
    """What the pods on a node already request (scheduler integer units) and how many pods there are."""

    requested: dict[str, int] = field(default_factory=dict)
    pods: int = 0

    def add(self, vector: Mapping[str, int]) -> None:
        for name, v in vector.items():
            self.requested[name] = self.requested.get(name, 0) + v
        self.pods += 1

    def remove(self, vector: Mapping[str, int]) -> None:
        """A pod counted by `add` left the node."""
        for name, v in vector.items():
            self.requested[name] = self.requested.get(name, 0) - v
        self.pods -= 1


def allocatable_vector(node: Node) -> dict[str, int] | None:
    """Allocatable in scheduler units; None when the node declares no `status.allocatable` at all."""
    if node.status is None or node.status.allocatable is None:
        return None
    return fit_vector(node.status.allocatable)


def fit_reasons(
    vector: Mapping[str, int],
    allocatable: Mapping[str, int] | None,
    usage: NodeUsage,
    delegated: Callable[[str], bool] = lambda _name: False,
) -> list[str]:
    """NodeResourcesFit: `Too many pods`, then `Insufficient <name>` (cpu, memory, ephemeral-storage, rest).

    `delegated(name)` is true for an extended resource DRA provides on this node (skipped, as upstream).
    A node without `status.allocatable` is not checked (see docs/divergences.md).
    """
    if allocatable is None:
        return []
    reasons: list[str] = []
    if usage.pods + 1 > allocatable.get(PODS, 0):
        reasons.append(REASON_TOO_MANY_PODS)
    if not any(v for name, v in vector.items() if name != PODS):
        return reasons
    for name in _CORE_ORDER:
        want = vector.get(name, 0)
        if want > 0 and want > allocatable.get(name, 0) - usage.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    for name in sorted(vector):
        if name in _CORE_ORDER or name == PODS:
            continue
        want = vector[name]
        if want == 0 or delegated(name):
            continue
        if want > allocatable.get(name, 0) - usage.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return reasons
