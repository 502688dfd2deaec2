"""Topology spread constraints with `whenUnsatisfiable: DoNotSchedule`, as the scheduler's PodTopologySpread
filter checks them (pkg/scheduler/framework/plugins/podtopologyspread/filtering.go and common.go).

PreFilter counts, per topology pair, the pods in the incoming pod's namespace that match a constraint's
selector (terminating pods excluded), over the nodes that carry every constraint's topology key and pass the
constraint's node inclusion policies (nodeAffinityPolicy defaults to Honor, nodeTaintsPolicy to Ignore).
matchLabelKeys add the incoming pod's values to the selector. Filter: `count + self-match - global minimum`
must not exceed maxSkew; the global minimum is 0 while fewer domains than minDomains (default 1) exist.
ScheduleAnyway constraints only score nodes (allocator/scheduling/spreadscore.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from allocator.scheduling.labelselectors import selector_is_empty, selector_matches, with_labels
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.predicates import required_node_affinity_matches, untolerated_taint
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.meta import LabelSelector

REASON_SPREAD = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL = REASON_SPREAD + " (missing required label)"
DO_NOT_SCHEDULE = "DoNotSchedule"
HONOR = "Honor"
IGNORE = "Ignore"
_MAX_INT32 = 2**31 - 1


@dataclass(frozen=True)
class SpreadConstraint:
    """podtopologyspread's topologySpreadConstraint: the API constraint with defaults applied."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str

    def includes(self, pod: Pod, node: Node) -> bool:
        """matchNodeInclusionPolicies."""
        if self.node_affinity_policy == HONOR and not required_node_affinity_matches(pod, node):
            return False
        if self.node_taints_policy == HONOR:
            return untolerated_taint(node.spec.taints or [], pod.spec.tolerations or []) is None
        return True


def hard_constraints(pod: Pod) -> list[SpreadConstraint]:
    """The pod's DoNotSchedule constraints (filterTopologySpreadConstraints)."""
    return spread_constraints(pod, DO_NOT_SCHEDULE)


def spread_constraints(pod: Pod, action: str) -> list[SpreadConstraint]:
    """filterTopologySpreadConstraints: the pod's constraints with `whenUnsatisfiable: action`."""
    labels = pod.metadata.labels or {}
    out: list[SpreadConstraint] = []
    for c in pod.spec.topology_spread_constraints or []:
        if c.when_unsatisfiable != action:
            continue
        extra = {k: labels[k] for k in c.match_label_keys or [] if k in labels}
        out.append(
            SpreadConstraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=with_labels(c.label_selector, extra),
                min_domains=c.min_domains if c.min_domains is not None else 1,
                node_affinity_policy=c.node_affinity_policy or HONOR,
                node_taints_policy=c.node_taints_policy or IGNORE,
            )
        )
    return out


def count_matching(selector: LabelSelector | None, namespace: str, pods: Sequence[Pod]) -> int:
    """countPodsMatchSelector: same namespace, not terminating; an empty selector counts nothing."""
    if selector_is_empty(selector):
        return 0
    return sum(
        1
        for p in pods
        if not p.metadata.deletion_timestamp
        and p.namespace == namespace
        and selector_matches(selector, p.metadata.labels or {})
    )


class TopologySpreadCheck:
    """PreFilter state for one incoming pod; `reasons(node)` is the Filter."""

    def __init__(self, pod: Pod, index: PodIndex) -> None:
        self.pod = pod
        self.index = index
        self.constraints = hard_constraints(pod)
        self.counts: Counter[tuple[str, str]] = Counter()
        seen: set[tuple[str, str]] = set()
        keys = [c.topology_key for c in self.constraints]
        for name, node in index.nodes.items() if self.constraints else ():
            labels = node.labels
            if not all(k in labels for k in keys):
                continue
            for c in self.constraints:
                if not c.includes(pod, node):
                    continue
                pair = (c.topology_key, labels[c.topology_key])
                seen.add(pair)
                self.counts[pair] += self._matching(c, index.pods.get(name, ()))
        self.domains: Counter[str] = Counter(k for k, _ in seen)
        self.minimum: dict[str, int] = {}
        for k, v in seen:
            self.minimum[k] = min(self.minimum.get(k, _MAX_INT32), self.counts[(k, v)])

    def _matching(self, c: SpreadConstraint, pods: Sequence[Pod]) -> int:
        return count_matching(c.selector, self.pod.namespace, pods)

    @property
    def applies(self) -> bool:
        return bool(self.constraints)

    def reasons(self, node_name: str) -> list[str]:
        labels = self.index.nodes[node_name].labels
        own = self.pod.metadata.labels or {}
        for c in self.constraints:
            value = labels.get(c.topology_key)
            if value is None:
                return [REASON_SPREAD_LABEL]
            if c.topology_key not in self.domains:
                continue  # no eligible domain: upstream skips the constraint (minMatchNum error)
            minimum = self.minimum[c.topology_key]
            if self.domains[c.topology_key] < c.min_domains:
                minimum = 0
            self_match = 1 if selector_matches(c.selector, own) else 0
            if self.counts[(c.topology_key, value)] + self_match - minimum > c.max_skew:
                return [REASON_SPREAD]
        return []
