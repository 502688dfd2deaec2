"""Required inter-pod affinity and anti-affinity, as the scheduler's InterPodAffinity filter checks them
(pkg/scheduler/framework/plugins/interpodaffinity/filtering.go).

PreFilter counts, per topology pair (label key, value of the pod's node), the existing pods that match the
incoming pod's affinity terms (a pod counts when it matches all of them), those that match its anti-affinity
terms, and the existing pods whose own required anti-affinity terms match the incoming pod. Filter then
checks one node against those counts, in upstream's order: affinity, anti-affinity, existing anti-affinity.
Preferred terms only score nodes (allocator/scheduling/interpodscore.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from allocator.scheduling.labelselectors import selector_matches
from allocator.scheduling.podindex import PodIndex
from resourceapi.api.core_v1 import Pod, PodAffinityTerm
from resourceapi.api.meta import LabelSelector, LabelSelectorRequirement

REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

_Pair = tuple[str, str]


@dataclass(frozen=True)
class AffinityTerm:
    """framework.AffinityTerm: namespaces, namespace selector, label selector and topology key of one term."""

    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    selector: LabelSelector | None
    topology_key: str

    def matches(self, pod: Pod, index: PodIndex) -> bool:
        """schedutil.PodMatchesTermsNamespaceAndSelector."""
        if pod.namespace not in self.namespaces and not selector_matches(
            self.namespace_selector, index.labels_of_namespace(pod.namespace)
        ):
            return False
        return selector_matches(self.selector, pod.metadata.labels or {})


def affinity_term(owner: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """A term of `owner`: no namespaces and no namespaceSelector mean the owner's namespace
    (GetNamespacesFromPodAffinityTerm). matchLabelKeys / mismatchLabelKeys become `In` / `NotIn` the owner's
    values, as the API server merges them into the selector when the pod is created (merging again is
    harmless: the requirement is the same)."""
    namespaces = frozenset(term.namespaces or ())
    if not namespaces and term.namespace_selector is None:
        namespaces = frozenset([owner.namespace])
    selector = term.label_selector
    labels = owner.metadata.labels or {}
    extra = [
        LabelSelectorRequirement(key=k, operator=op, values=[labels[k]])
        for keys, op in ((term.match_label_keys, "In"), (term.mismatch_label_keys, "NotIn"))
        for k in keys or []
        if k in labels
    ]
    if extra and selector is not None:
        selector = selector.model_copy(
            update={"match_expressions": [*(selector.match_expressions or []), *extra]}
        )
    return AffinityTerm(namespaces, term.namespace_selector, selector, term.topology_key)


def required_terms(pod: Pod, anti: bool) -> list[AffinityTerm]:
    affinity = pod.spec.affinity
    part = (affinity.pod_anti_affinity if anti else affinity.pod_affinity) if affinity else None
    raw = part.required_during_scheduling_ignored_during_execution if part else None
    return [affinity_term(pod, t) for t in raw or []]


def _matches_all(pod: Pod, terms: Sequence[AffinityTerm], index: PodIndex) -> bool:
    return bool(terms) and all(t.matches(pod, index) for t in terms)


class InterPodAffinityCheck:
    """PreFilter state for one incoming pod; `reasons(node)` is the Filter."""

    def __init__(self, pod: Pod, index: PodIndex) -> None:
        self.pod = pod
        self.index = index
        self.affinity = required_terms(pod, anti=False)
        self.anti = required_terms(pod, anti=True)
        self.existing: Counter[_Pair] = Counter()
        for other, node_name in index.anti_affinity:
            labels = index.nodes[node_name].labels
            for term in required_terms(other, anti=True):
                if term.topology_key in labels and term.matches(pod, index):
                    self.existing[(term.topology_key, labels[term.topology_key])] += 1
        self.affinity_counts: Counter[_Pair] = Counter()
        self.anti_counts: Counter[_Pair] = Counter()
        if self.affinity or self.anti:
            for node_name, pods in index.pods.items():
                labels = index.nodes[node_name].labels
                for other in pods:
                    if _matches_all(other, self.affinity, index):
                        for t in self.affinity:
                            if t.topology_key in labels:
                                self.affinity_counts[(t.topology_key, labels[t.topology_key])] += 1
                    for t in self.anti:
                        if t.topology_key in labels and t.matches(other, index):
                            self.anti_counts[(t.topology_key, labels[t.topology_key])] += 1

    @property
    def applies(self) -> bool:
        """False when the filter passes every node (nothing to check)."""
        return bool(self.affinity or self.anti or self.existing)

    def reasons(self, node_name: str) -> list[str]:
        labels = self.index.nodes[node_name].labels
        if not self._satisfies_affinity(labels):
            return [REASON_AFFINITY]
        for t in self.anti:
            value = labels.get(t.topology_key)
            if value is not None and self.anti_counts[(t.topology_key, value)] > 0:
                return [REASON_ANTI_AFFINITY]
        if self.existing and any(self.existing[(k, v)] > 0 for k, v in labels.items()):
            return [REASON_EXISTING_ANTI_AFFINITY]
        return []

    def _satisfies_affinity(self, labels: dict[str, str]) -> bool:
        pods_exist = True
        for t in self.affinity:
            value = labels.get(t.topology_key)
            if value is None:
                return False  # all topology labels must exist on the node
            if self.affinity_counts[(t.topology_key, value)] <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # The first pod of a group with affinity to itself: allowed when no pod matches yet and the pod
        # matches its own terms.
        return not self.affinity_counts and _matches_all(self.pod, self.affinity, self.index)
