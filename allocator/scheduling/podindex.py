"""The pods on each node, as the scheduler's snapshot holds them for the inter-pod filters.

`PodTopologySpread` and `InterPodAffinity` (pkg/scheduler/framework/plugins/) read every node's pods and
labels, not only the node being filtered. The index holds the running pods (terminal ones excluded, as the
scheduler's pod informer excludes them) and every pod placed during the run, and the namespaces' labels for
`namespaceSelector` (a namespace without an object has only `kubernetes.io/metadata.name`, which the API
server sets on every namespace).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from allocator.scheduling.nodeports import HostPort, conflicts, host_ports
from resourceapi.api.core_v1 import Node, Pod

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_TERMINAL = ("Succeeded", "Failed")


def has_required_anti_affinity(pod: Pod) -> bool:
    affinity = pod.spec.affinity
    anti = affinity.pod_anti_affinity if affinity else None
    return bool(anti and anti.required_during_scheduling_ignored_during_execution)


def has_pod_affinity(pod: Pod) -> bool:
    """NodeInfo.PodsWithAffinity holds the pod: it has pod affinity or anti-affinity of any kind."""
    affinity = pod.spec.affinity
    return bool(affinity and (affinity.pod_affinity or affinity.pod_anti_affinity))


@dataclass
class PodIndex:
    """Nodes by name, the pods on each, the pods with required anti-affinity and those with any pod
    (anti-)affinity (with their node)."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, list[Pod]] = field(default_factory=dict)
    anti_affinity: list[tuple[Pod, str]] = field(default_factory=list)
    with_affinity: list[tuple[Pod, str]] = field(default_factory=list)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    ports: dict[str, list[HostPort]] = field(default_factory=dict)  # node -> host ports its pods use

    @classmethod
    def build(
        cls,
        nodes: Iterable[Node],
        running_pods: Iterable[Pod] = (),
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> PodIndex:
        index = cls(nodes={n.name: n for n in nodes})
        index.namespace_labels = {k: dict(v) for k, v in (namespace_labels or {}).items()}
        for p in running_pods:
            if p.spec.node_name and (p.status is None or p.status.phase not in _TERMINAL):
                index.add(p, p.spec.node_name)
        return index

    def add(self, pod: Pod, node_name: str) -> None:
        """A pod now holds `node_name` (pods on nodes outside the index are ignored, as upstream's snapshot
        skips pods whose node it does not know)."""
        if node_name not in self.nodes:
            return
        self.pods.setdefault(node_name, []).append(pod)
        used = host_ports(pod)
        if used:
            self.ports.setdefault(node_name, []).extend(used)
        if has_required_anti_affinity(pod):
            self.anti_affinity.append((pod, node_name))
        if has_pod_affinity(pod):
            self.with_affinity.append((pod, node_name))

    def holds(self, pod: Pod, node_name: str) -> bool:
        return any(_same_pod(p, pod) for p in self.pods.get(node_name, ()))

    def remove(self, pod: Pod, node_name: str) -> bool:
        """The pod no longer holds `node_name` (deleted, finished, or relabeled: `add` it again); False when
        the index did not hold it there."""
        pods = self.pods.get(node_name, [])
        for i, p in enumerate(pods):
            if _same_pod(p, pod):
                del pods[i]
                break
        else:
            return False
        if node_name in self.ports:
            used = [port for p in pods for port in host_ports(p)]
            if used:
                self.ports[node_name] = used
            else:
                del self.ports[node_name]
        self.anti_affinity = [
            (p, n) for p, n in self.anti_affinity if not (n == node_name and _same_pod(p, pod))
        ]
        if has_pod_affinity(pod):
            self.with_affinity = [
                (p, n) for p, n in self.with_affinity if not (n == node_name and _same_pod(p, pod))
            ]
        return True

    def ports_conflict(self, node_name: str, wanted: list[HostPort]) -> bool:
        """NodePorts Filter: does any wanted host port clash with one the node's pods use?"""
        used = self.ports.get(node_name)
        return used is not None and any(conflicts(used, w) for w in wanted)

    def labels_of_namespace(self, namespace: str) -> dict[str, str]:
        labels = self.namespace_labels.get(namespace)
        if labels is None:
            return {NAMESPACE_NAME_LABEL: namespace}
        return {**labels, NAMESPACE_NAME_LABEL: namespace}


def _same_pod(a: Pod, b: Pod) -> bool:
    """One pod: by uid when both have one, else by namespace and name."""
    if a.metadata.uid and b.metadata.uid:
        return a.metadata.uid == b.metadata.uid
    return (a.namespace, a.name) == (b.namespace, b.name)
