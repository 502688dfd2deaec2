"""The filters whose verdict on one node depends on the pods of other nodes, run in the default profile's
order (pkg/scheduler/apis/config/v1/default_plugins.go): PodTopologySpread, then InterPodAffinity.

`topology_filters(pod, index)` is None when neither applies to the pod: no DoNotSchedule constraint, no
required (anti-)affinity term, and no existing pod whose required anti-affinity matches it. Otherwise
placement applies the check per call over its per-shape evaluations, which never depend on other nodes'
pods and so stay cached.
"""

from __future__ import annotations

from dataclasses import dataclass

from allocator.scheduling.interpod import InterPodAffinityCheck
from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.topologyspread import TopologySpreadCheck
from resourceapi.api.core_v1 import Pod


@dataclass(frozen=True)
class TopologyFilters:
    spread: TopologySpreadCheck
    affinity: InterPodAffinityCheck

    def reasons(self, node_name: str) -> list[str]:
        """The first failing filter's reasons for this node ([] when it passes both)."""
        if self.spread.applies:
            reasons = self.spread.reasons(node_name)
            if reasons:
                return reasons
        if self.affinity.applies:
            return self.affinity.reasons(node_name)
        return []


def topology_filters(pod: Pod, index: PodIndex) -> TopologyFilters | None:
    affinity_spec = pod.spec.affinity
    if (
        not pod.spec.topology_spread_constraints
        and not index.anti_affinity
        and (
            affinity_spec is None
            or (affinity_spec.pod_affinity is None and affinity_spec.pod_anti_affinity is None)
        )
    ):
        return None  # the common case, decided without building either check
    spread = TopologySpreadCheck(pod, index)
    affinity = InterPodAffinityCheck(pod, index)
    if not spread.applies and not affinity.applies:
        return None
    return TopologyFilters(spread, affinity)
