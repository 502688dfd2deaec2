"""PodTopologySpread's ScheduleAnyway score (allocator/scheduling/spreadscore.py) with the figures of
upstream's podtopologyspread/scoring_test.go, and the placer following it."""

from __future__ import annotations

from typing import Any

from support.placing import _placer, _run
from support.workloads import GPU_SHARED, gpu_slice, node, pod

from allocator.scheduling.podindex import PodIndex
from allocator.scheduling.scoring import POD_TOPOLOGY_SPREAD, prioritize
from allocator.scheduling.spreadscore import HOSTNAME, spread_scores
from resourceapi.api.core_v1 import Node, Pod

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def _spreading(*constraints: tuple[int, str, dict[str, Any]], labels: dict[str, str] | None = None) -> Pod:
    p = pod(
        "p",
        {GPU_SHARED: 1},
        topologySpreadConstraints=[
            {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}
            for skew, key, sel in constraints
        ],
    )
    p.metadata.labels = labels if labels is not None else {"foo": ""}
    return p


def _on(node_name: str, count: int, labels: dict[str, str] | None = None) -> list[Pod]:
    out = []
    for i in range(count):
        p = pod(f"{node_name}-{i}-{len(labels or {})}", {}, nodeName=node_name)
        p.metadata.labels = labels if labels is not None else {"foo": ""}
        out.append(p)
    return out


def _hosts(*names: str, zone: dict[str, str] | None = None) -> list[Node]:
    return [node(n, labels={HOSTNAME: n, **({"zone": zone[n]} if zone and n in zone else {})}) for n in names]


def _spread_2_1_0_3() -> list[Pod]:
    return _on("node-a", 2) + _on("node-b", 1) + _on("node-d", 3)


def test_hostname_max_skew_2() -> None:
    """ "one constraint on node, all 4 nodes are candidates, maxSkew=2": 33, 66, 100, 16."""
    nodes = _hosts("node-a", "node-b", "node-c", "node-d")
    index = PodIndex.build(nodes, _spread_2_1_0_3())
    scores = spread_scores(_spreading((2, HOSTNAME, FOO)), [n.name for n in nodes], index)
    assert scores == {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16}


def test_hostname_three_of_four_candidates() -> None:
    """ "one constraint on node, 3 out of 4 nodes are candidates": 33, 83, 100 (node-y failed)."""
    nodes = _hosts("node-a", "node-b", "node-x", "node-y")
    pods = _on("node-a", 4) + _on("node-b", 2) + _on("node-x", 1) + _on("node-y", 3)
    scores = spread_scores(
        _spreading((1, HOSTNAME, FOO)), ["node-a", "node-b", "node-x"], PodIndex.build(nodes, pods)
    )
    assert scores == {"node-a": 33, "node-b": 83, "node-x": 100}


def test_a_node_without_the_key_scores_zero() -> None:
    """ "... one node doesn't match topology key": 16, 0, 100."""
    nodes = [*_hosts("node-a"), node("node-b", labels={"n": "node-b"}), *_hosts("node-x", "node-y")]
    pods = _on("node-a", 4) + _on("node-b", 2) + _on("node-x", 1) + _on("node-y", 3)
    scores = spread_scores(
        _spreading((1, HOSTNAME, FOO)), ["node-a", "node-b", "node-x"], PodIndex.build(nodes, pods)
    )
    assert scores == {"node-a": 16, "node-b": 0, "node-x": 100}


def test_zone_three_of_four_candidates() -> None:
    """ "one constraint on zone, 3 out of 4 nodes are candidates": 75, 75, 100."""
    zone = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    nodes = _hosts("node-a", "node-b", "node-x", "node-y", zone=zone)
    pods = _on("node-a", 4) + _on("node-b", 2) + _on("node-x", 1) + _on("node-y", 3)
    scores = spread_scores(
        _spreading((1, "zone", FOO)), ["node-a", "node-b", "node-x"], PodIndex.build(nodes, pods)
    )
    assert scores == {"node-a": 75, "node-b": 75, "node-x": 100}


def test_two_constraints_with_different_selectors() -> None:
    """ "two Constraints on zone and node, with different labelSelectors": 60, 20, 100, 60."""
    zone = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    nodes = _hosts("node-a", "node-b", "node-x", "node-y", zone=zone)
    pods = (
        _on("node-a", 1)
        + _on("node-b", 1, {"foo": "", "bar": ""})
        + _on("node-y", 1)
        + _on("node-y", 1, {"bar": ""})
    )
    p = _spreading((1, "zone", FOO), (1, HOSTNAME, BAR), labels={"foo": "", "bar": ""})
    scores = spread_scores(p, [n.name for n in nodes], PodIndex.build(nodes, pods))
    assert scores == {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60}
    # weighted: PodTopologySpread x2 plus TaintToleration x3 (no taints: 100 everywhere)
    totals = prioritize(p, nodes, {POD_TOPOLOGY_SPREAD: scores})
    assert {n: s.total for n, s in totals.items()} == {
        "node-a": 420,
        "node-b": 340,
        "node-x": 500,
        "node-y": 420,
    }


def test_do_not_schedule_constraints_do_not_score() -> None:
    p = pod(
        "p",
        {},
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": FOO,
            }
        ],
    )
    nodes = _hosts("a", "b")
    assert spread_scores(p, ["a", "b"], PodIndex.build(nodes)) is None


def test_schedule_anyway_spreads_a_binpacked_workload() -> None:
    """Binpack alone would put every replica on `a` (the fuller node); ScheduleAnyway over hostnames
    alternates them, the binpack key breaking the ties of equal spread."""
    nodes = _hosts("a", "b")
    placer = _placer(nodes, [gpu_slice("a", 4), gpu_slice("b", 4)])
    replicas = []
    for i in range(4):
        p = _spreading((1, HOSTNAME, FOO))
        p.metadata.name = f"r{i}"
        replicas.append(p)
    assert [p.node for p in _run(placer, replicas)] == ["a", "b", "a", "b"]
    plain = _placer(nodes, [gpu_slice("a", 4), gpu_slice("b", 4)])
    assert {p.node for p in _run(plain, [pod(f"q{i}", {GPU_SHARED: 1}) for i in range(4)])} == {"a"}
