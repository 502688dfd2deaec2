"""PodTopologySpread's Score and NormalizeScore for `whenUnsatisfiable: ScheduleAnyway` constraints
(pkg/scheduler/framework/plugins/podtopologyspread/scoring.go).

PreScore: feasible nodes missing a constraint's topology key are ignored (normalized score 0); every other
topology value seen on a feasible node gets the count of matching pods over all nodes that carry every key
and pass the constraint's node inclusion policies; a constraint's weight is `ln(values + 2)` (for the
hostname key: feasible nodes not ignored, + 2), and its hostname counts are the node's own pods. Score: per
constraint `count * weight + maxSkew - 1`, summed and rounded. NormalizeScore: `100 * (max + min - score) /
max` over the scored nodes (all 100 when max is 0), so the emptiest domain scores highest. PreScore skips a
pod without ScheduleAnyway constraints; the system default constraints (from the pod's Services and owners)
are not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.scoring import MAX_NODE_SCORE
from allocator.scheduling.topologyspread import SpreadConstraint, count_matching, spread_constraints
from resourceapi.api.core_v1 import Pod

SCHEDULE_ANYWAY = "ScheduleAnyway"
HOSTNAME = "kubernetes.io/hostname"


def soft_constraints(pod: Pod) -> list[SpreadConstraint]:
    """The pod's ScheduleAnyway constraints."""
    return spread_constraints(pod, SCHEDULE_ANYWAY)


def _has_keys(labels: dict[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def raw_spread_scores(pod: Pod, feasible: Sequence[str], index: PodIndex) -> dict[str, int | None]:
    """PreScore and Score: each feasible node's raw score, None for an ignored node."""
    constraints = soft_constraints(pod)
    ignored = {n for n in feasible if not _has_keys(index.nodes[n].labels, constraints)}
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for name in feasible:
        if name in ignored:
            continue
        labels = index.nodes[name].labels
        for i, c in enumerate(constraints):
            if c.topology_key != HOSTNAME:
                counts[i].setdefault(labels[c.topology_key], 0)
    weights = [
        math.log((len(feasible) - len(ignored) if c.topology_key == HOSTNAME else len(counts[i])) + 2)
        for i, c in enumerate(constraints)
    ]
    for name, node in index.nodes.items():
        labels = node.labels
        if not _has_keys(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME or not c.includes(pod, node):
                continue
            value = labels[c.topology_key]
            if value in counts[i]:
                counts[i][value] += count_matching(c.selector, pod.namespace, index.pods.get(name, ()))
    out: dict[str, int | None] = {}
    for name in feasible:
        if name in ignored:
            out[name] = None
            continue
        labels = index.nodes[name].labels
        score = 0.0
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME:
                cnt = count_matching(c.selector, pod.namespace, index.pods.get(name, ()))
            else:
                cnt = counts[i][labels[c.topology_key]]
            score += cnt * weights[i] + (c.max_skew - 1)
        out[name] = math.floor(score + 0.5)  # math.Round of a non-negative score
    return out


def normalize_spread_scores(raw: dict[str, int | None]) -> dict[str, int]:
    """NormalizeScore: ignored nodes 0; the others `100 * (max + min - score) // max`, or 100 if max is 0."""
    scored = [s for s in raw.values() if s is not None]
    if not scored:
        return dict.fromkeys(raw, 0)
    low, high = min(scored), max(scored)
    return {
        n: 0 if s is None else MAX_NODE_SCORE if high == 0 else MAX_NODE_SCORE * (high + low - s) // high
        for n, s in raw.items()
    }


def spread_scores(pod: Pod, feasible: Sequence[str], index: PodIndex) -> dict[str, int] | None:
    """The plugin's normalized scores, or None when PreScore skips it (no ScheduleAnyway constraint)."""
    if not soft_constraints(pod):
        return None
    return normalize_spread_scores(raw_spread_scores(pod, feasible, index))
