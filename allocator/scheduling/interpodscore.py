"""InterPodAffinity's Score and NormalizeScore: preferred pod affinity and anti-affinity
(pkg/scheduler/framework/plugins/interpodaffinity/scoring.go, default args: hardPodAffinityWeight 1,
ignorePreferredTermsOfExistingPods false).

PreScore sums, per topology pair (key, value of an existing pod's node), for each existing pod: the weight
of each of the incoming pod's preferred affinity terms the pod matches (anti-affinity: minus the weight),
`hardPodAffinityWeight` for each of its required affinity terms the incoming pod matches, and the weights of
its own preferred affinity (plus) and anti-affinity (minus) terms the incoming pod matches. Every pod counts
when the incoming pod has preferred terms; otherwise only pods with some pod (anti-)affinity do, and the
plugin is skipped when no pair got a sum. Score: the node's summed pairs. NormalizeScore:
`100 * (score - min) / (max - min)` truncated (all 0 when max equals min).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from allocator.scheduling.interpod import AffinityTerm, affinity_term, required_terms
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.scoring import MAX_NODE_SCORE
from resourceapi.api.core_v1 import Pod

HARD_POD_AFFINITY_WEIGHT = 1

_Weighted = list[tuple[AffinityTerm, int]]


def preferred_terms(pod: Pod, anti: bool) -> _Weighted:
    """The pod's preferred (anti-)affinity terms with their weights."""
    affinity = pod.spec.affinity
    part = (affinity.pod_anti_affinity if anti else affinity.pod_affinity) if affinity else None
    raw = part.preferred_during_scheduling_ignored_during_execution if part else None
    return [(affinity_term(pod, w.pod_affinity_term), w.weight) for w in raw or []]


def has_preferred_pod_affinity(pod: Pod) -> bool:
    return bool(preferred_terms(pod, anti=False) or preferred_terms(pod, anti=True))


def _add(
    sums: dict[tuple[str, str], int],
    terms: Iterable[tuple[AffinityTerm, int]],
    pod: Pod,
    labels: dict[str, str],
    sign: int,
    index: PodIndex,
) -> None:
    """processTerm: a matching term adds `sign * weight` to the pair of its key on the existing pod's node."""
    for term, weight in terms:
        value = labels.get(term.topology_key)
        if value is not None and term.matches(pod, index):
            pair = (term.topology_key, value)
            sums[pair] = sums.get(pair, 0) + sign * weight


def _topology_sums(pod: Pod, index: PodIndex) -> dict[tuple[str, str], int]:
    """PreScore's topologyScore."""
    affinity = preferred_terms(pod, anti=False)
    anti = preferred_terms(pod, anti=True)
    if affinity or anti:
        existing: Iterable[tuple[Pod, str]] = ((p, n) for n, pods in index.pods.items() for p in pods)
    else:
        existing = index.with_affinity
    sums: dict[tuple[str, str], int] = {}
    for other, node_name in existing:
        labels = index.nodes[node_name].labels
        if not labels:
            continue
        _add(sums, affinity, other, labels, 1, index)
        _add(sums, anti, other, labels, -1, index)
        hard = [(t, HARD_POD_AFFINITY_WEIGHT) for t in required_terms(other, anti=False)]
        _add(sums, hard, pod, labels, 1, index)
        _add(sums, preferred_terms(other, anti=False), pod, labels, 1, index)
        _add(sums, preferred_terms(other, anti=True), pod, labels, -1, index)
    return sums


def interpod_scores(pod: Pod, feasible: Sequence[str], index: PodIndex) -> dict[str, int] | None:
    """The plugin's normalized scores for the feasible nodes, or None when PreScore skips it."""
    if not index.with_affinity and not has_preferred_pod_affinity(pod):
        return None
    sums = _topology_sums(pod, index)
    if not sums:
        return None
    raw = {name: sum(sums.get((k, v), 0) for k, v in index.nodes[name].labels.items()) for name in feasible}
    low, high = min(raw.values(), default=0), max(raw.values(), default=0)
    if high == low:
        return dict.fromkeys(raw, 0)
    return {n: int(MAX_NODE_SCORE * ((s - low) / (high - low))) for n, s in raw.items()}
