"""InterPodAffinity's score (allocator/scheduling/interpodscore.py) with the figures of upstream's
interpodaffinity/scoring_test.go (TestPreferredAffinity), and the placer following it."""

from __future__ import annotations

from typing import Any

from support.placing import _placer, _run
from support.workloads import GPU_SHARED, gpu_slice, node, pod

from allocator.scheduling.interpodscore import interpod_scores
from allocator.scheduling.podindex import PodIndex
from resourceapi.api.core_v1 import Node, Pod

CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}


def _sel(*exprs: tuple[str, str, list[str] | None]) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": k, "operator": op, **({"values": v} if v is not None else {})} for k, op, v in exprs
        ]
    }


def _weighted(weight: int, selector: dict[str, Any], key: str) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": {"labelSelector": selector, "topologyKey": key}}


STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            _weighted(8, _sel(("security", "In", ["S1"])), "region")
        ]
    },
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            _weighted(5, _sel(("security", "In", ["S2"])), "az")
        ]
    },
}
AWAY_FROM_S1_IN_AZ = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            _weighted(5, _sel(("security", "In", ["S1"])), "az")
        ]
    }
}
AFFINITY3 = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            _weighted(8, _sel(("security", "NotIn", ["S1"]), ("security", "In", ["S2"])), "region"),
            _weighted(2, _sel(("security", "Exists", None), ("wrongkey", "DoesNotExist", None)), "region"),
        ]
    }
}
HARD_AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": _sel(("security", "In", ["S1", "value2"])), "topologyKey": "region"},
            {
                "labelSelector": _sel(("security", "Exists", None), ("wrongkey", "DoesNotExist", None)),
                "topologyKey": "region",
            },
        ]
    }
}


def _pod(name: str, labels: dict[str, str] | None, node_name: str = "", affinity: Any = None) -> Pod:
    spec: dict[str, Any] = {}
    if node_name:
        spec["nodeName"] = node_name
    if affinity is not None:
        spec["affinity"] = affinity
    p = pod(name, {GPU_SHARED: 1} if not node_name else {}, **spec)
    p.metadata.labels = labels
    return p


def _nodes(*labelled: tuple[str, dict[str, str]]) -> list[Node]:
    return [node(n, labels=labels) for n, labels in labelled]


def _scores(incoming: Pod, nodes: list[Node], existing: list[Pod]) -> dict[str, int] | None:
    return interpod_scores(incoming, [n.name for n in nodes], PodIndex.build(nodes, existing))


def test_no_affinity_anywhere_skips_the_plugin() -> None:
    """ "all nodes are same priority as Affinity is nil": PreScore returns Skip."""
    nodes = _nodes(("node1", CHINA), ("node2", INDIA), ("node3", AZ1))
    assert _scores(_pod("p", S1), nodes, []) is None


def test_operators_and_values_in_preferred_affinity() -> None:
    """ "Affinity: different Label operators and values ...": 20, 100, 0."""
    nodes = _nodes(("node1", CHINA), ("node2", INDIA), ("node3", AZ1))
    existing = [_pod("e1", S1, "node1"), _pod("e2", S2, "node2"), _pod("e3", S1, "node3")]
    assert _scores(_pod("p", S1, affinity=AFFINITY3), nodes, existing) == {
        "node1": 20,
        "node2": 100,
        "node3": 0,
    }


def test_existing_pods_required_affinity_counts_with_the_hard_weight() -> None:
    """ "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution ...": 100, 100, 0."""
    nodes = _nodes(("node1", CHINA), ("node2", INDIA), ("node3", AZ1))
    existing = [_pod("e1", S1, "node1", HARD_AFFINITY), _pod("e2", S2, "node2", HARD_AFFINITY)]
    assert _scores(_pod("p", S1), nodes, existing) == {"node1": 100, "node2": 100, "node3": 0}


def test_preferred_anti_affinity() -> None:
    """ "Anti Affinity: pod that does not match existing pods in node will get high score": 0, 100."""
    nodes = _nodes(("node1", AZ1), ("node2", CHINA))
    existing = [_pod("e1", S1, "node1"), _pod("e2", S2, "node2")]
    assert _scores(_pod("p", S1, affinity=AWAY_FROM_S1_IN_AZ), nodes, existing) == {"node1": 0, "node2": 100}


def test_affinity_anti_affinity_and_symmetry() -> None:
    """ "Affinity and Anti Affinity and symmetry: ...": raw 8, -5, 8, -5, normalized 100, 0, 100, 0."""
    nodes = _nodes(("node1", CHINA), ("node2", AZ1), ("node3", INDIA), ("node4", AZ2))
    existing = [
        _pod("e1", S1, "node1"),
        _pod("e2", S2, "node2"),
        _pod("e3", None, "node3", STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        _pod("e4", None, "node4", AWAY_FROM_S1_IN_AZ),
    ]
    incoming = _pod("p", S1, affinity=STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)
    assert _scores(incoming, nodes, existing) == {"node1": 100, "node2": 0, "node3": 100, "node4": 0}


def test_partial_topology_without_affinity_scores_zero() -> None:
    """ "Avoid panic when partial nodes in a topology don't have pods with affinity": 0, 0."""
    nodes = _nodes(("node1", CHINA), ("node2", CHINA))
    existing = [_pod("e1", S1, "node1"), _pod("e2", None, "node2", STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)]
    assert _scores(_pod("p", S1), nodes, existing) == {"node1": 0, "node2": 0}


HOST = "kubernetes.io/hostname"
WITH_USERS = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            _weighted(100, _sel(("component", "In", ["singleuser-server"])), HOST)
        ]
    }
}
AWAY_FROM_USERS = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            _weighted(100, _sel(("component", "In", ["singleuser-server"])), HOST)
        ]
    }
}
USER = {"component": "singleuser-server"}


def test_preferred_pod_affinity_joins_the_users_node() -> None:
    """Binpack alone takes `a` (a cpu-heavy pod runs there); affinity to the user pod on `b` wins."""
    nodes = [node("a"), node("b")]
    running = [pod("heavy", {"cpu": "8"}, nodeName="a"), _pod("u0", USER, "b")]
    placer = _placer(nodes, [gpu_slice("a", 2), gpu_slice("b", 2)], running=running)
    assert placer.place(_pod("plain", {})).node == "a"
    assert placer.place(_pod("p", USER, affinity=WITH_USERS)).node == "b"


def test_preferred_pod_anti_affinity_spreads_users() -> None:
    nodes = [node("a"), node("b"), node("c")]
    placer = _placer(nodes, [gpu_slice(n, 4) for n in "abc"])
    placed = _run(placer, [_pod(f"u{i}", USER, affinity=AWAY_FROM_USERS) for i in range(3)])
    assert [p.node for p in placed] == ["a", "b", "c"]
