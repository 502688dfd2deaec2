"""kube-scheduler's Score and NormalizeScore for the default score plugins the binder models, and their
weighted sum (pkg/scheduler/schedule_one.go `prioritizeNodes`).

NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go): the sum of the weights of the
pod's preferred terms the node matches, normalized by `DefaultNormalizeScore` (the best node gets
`MAX_NODE_SCORE`); PreScore skips the plugin when the pod has no preferred term. TaintToleration
(pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go): the count of the node's
PreferNoSchedule taints that the pod's PreferNoSchedule (or effect-less) tolerations do not tolerate,
reverse-normalized (no such taint: `MAX_NODE_SCORE`). `DefaultNormalizeScore` is
pkg/scheduler/framework/plugins/helper/normalize_score.go; the weights are the default profile's
(pkg/scheduler/apis/config/v1/default_plugins.go).

Upstream picks at random among the nodes with the highest total (`selectHost`); the placer breaks the tie
with its strategy's key instead, so a decision never depends on chance (docs/binder.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from allocator.scheduling.predicates import term_matches
from resourceapi.api.core_v1 import Node, Pod, Toleration
from resourceapi.tolerations import tolerates

MAX_NODE_SCORE = 100  # framework.MaxNodeScore
PREFER_NO_SCHEDULE = "PreferNoSchedule"

TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
NODE_RESOURCES_FIT = "NodeResourcesFit"
BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
VOLUME_BINDING = "VolumeBinding"
DYNAMIC_RESOURCES = "DynamicResources"

# the default profile's score plugins and weights, in its order
DEFAULT_WEIGHTS: dict[str, int] = {
    TAINT_TOLERATION: 3,
    NODE_AFFINITY: 2,
    NODE_RESOURCES_FIT: 1,
    POD_TOPOLOGY_SPREAD: 2,
    INTER_POD_AFFINITY: 2,
    BALANCED_ALLOCATION: 1,
    IMAGE_LOCALITY: 1,
    VOLUME_BINDING: 1,  # MultiPoint's default weight (no Weight in default_plugins.go)
    DYNAMIC_RESOURCES: 2,  # applyDynamicResources (DynamicResourceAllocation, GA and locked on)
}


def default_normalize_score(scores: Mapping[str, int], reverse: bool) -> dict[str, int]:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores): scale so the highest score becomes
    `MAX_NODE_SCORE` (integer division); `reverse` turns each into `MAX_NODE_SCORE` minus it. All zero: all
    stay zero, or all become `MAX_NODE_SCORE` when reversed."""
    highest = max(scores.values(), default=0)
    if highest == 0:
        return {n: MAX_NODE_SCORE if reverse else 0 for n in scores}
    out: dict[str, int] = {}
    for name, score in scores.items():
        scaled = MAX_NODE_SCORE * score // highest
        out[name] = MAX_NODE_SCORE - scaled if reverse else scaled
    return out


def has_preferred_node_affinity(pod: Pod) -> bool:
    """NodeAffinity.PreScore does not skip: the pod has preferred terms (addedAffinity is not modelled)."""
    affinity = pod.spec.affinity
    na = affinity.node_affinity if affinity else None
    return bool(na and na.preferred_during_scheduling_ignored_during_execution)


def node_affinity_score(pod: Pod, node: Node) -> int:
    """NodeAffinity.Score: the summed weights of the preferred terms the node matches (weight 0 ignored)."""
    affinity = pod.spec.affinity
    na = affinity.node_affinity if affinity else None
    terms = (na.preferred_during_scheduling_ignored_during_execution if na else None) or []
    return sum(
        t.weight for t in terms if t.weight != 0 and term_matches(t.preference, node.labels, node.name)
    )


def prefer_no_schedule_tolerations(pod: Pod) -> list[Toleration]:
    """getAllTolerationPreferNoSchedule: tolerations with effect PreferNoSchedule or no effect."""
    return [t for t in pod.spec.tolerations or [] if not t.effect or t.effect == PREFER_NO_SCHEDULE]


def taint_toleration_score(pod: Pod, node: Node) -> int:
    """TaintToleration.Score: how many of the node's PreferNoSchedule taints the pod does not tolerate."""
    tolerations = prefer_no_schedule_tolerations(pod)
    return sum(
        1
        for taint in node.spec.taints or []
        if taint.effect == PREFER_NO_SCHEDULE and not any(tolerates(t, taint) for t in tolerations)
    )


def has_prefer_no_schedule_taint(node: Node) -> bool:
    """Whether TaintToleration can tell this node from one without taints."""
    return any(t.effect == PREFER_NO_SCHEDULE for t in node.spec.taints or [])


@dataclass(frozen=True)
class NodeScore:
    """One node's normalized score per plugin (0 to `MAX_NODE_SCORE`) and their weighted sum."""

    plugins: dict[str, int] = field(default_factory=dict)
    total: int = 0


def prioritize(
    pod: Pod,
    nodes: Sequence[Node],
    other_scores: Mapping[str, Mapping[str, int]] | None = None,
    weights: Mapping[str, int] = DEFAULT_WEIGHTS,
) -> dict[str, NodeScore]:
    """prioritizeNodes over the feasible `nodes`: NodeAffinity and TaintToleration scored and normalized
    here, `other_scores` (plugin -> node -> score, already normalized: PodTopologySpread's, or
    NodeResourcesFit's and BalancedAllocation's, which have no NormalizeScore) added as given, each times its
    weight."""
    per_plugin: dict[str, dict[str, int]] = {}
    if has_preferred_node_affinity(pod):
        per_plugin[NODE_AFFINITY] = default_normalize_score(
            {n.name: node_affinity_score(pod, n) for n in nodes}, reverse=False
        )
    per_plugin[TAINT_TOLERATION] = default_normalize_score(
        {n.name: taint_toleration_score(pod, n) for n in nodes}, reverse=True
    )
    for plugin, scores in (other_scores or {}).items():
        per_plugin[plugin] = dict(scores)
    out: dict[str, NodeScore] = {}
    for n in nodes:
        plugins = {p: scores.get(n.name, 0) for p, scores in per_plugin.items()}
        out[n.name] = NodeScore(plugins, sum(weights.get(p, 0) * s for p, s in plugins.items()))
    return out
