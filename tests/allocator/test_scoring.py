"""Score plugins (allocator/scheduling/scoring.py, resourcescores.py) with upstream's test figures, and the
placer's choice following preferred node affinity and PreferNoSchedule taints under every strategy."""

from __future__ import annotations

from typing import Any

import pytest
from support.placing import _placer, _run
from support.workloads import GPU_SHARED, gpu_slice, node, pod

from allocator.scheduling.placement import STRATEGIES, Strategy
from allocator.scheduling.resourcescores import balanced_allocation, least_allocated
from allocator.scheduling.scoring import (
    BALANCED_ALLOCATION,
    DEFAULT_WEIGHTS,
    NODE_AFFINITY,
    NODE_RESOURCES_FIT,
    TAINT_TOLERATION,
    default_normalize_score,
    node_affinity_score,
    prioritize,
    taint_toleration_score,
)
from dra_capacity.cliopts import STRATEGY_CHOICES
from resourceapi.api.core_v1 import Pod
from resourceapi.scheduling_fields import SCHEDULING_FIELDS, Support

USER = "hub.jupyter.org/node-purpose"


def _preferring(*terms: tuple[int, dict[str, str]], requests: dict[str, Any] | None = None) -> Pod:
    preferred = [
        {
            "weight": w,
            "preference": {
                "matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in labels.items()]
            },
        }
        for w, labels in terms
    ]
    return pod(
        "p",
        requests if requests is not None else {GPU_SHARED: 1},
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}},
    )


def _plugin_scores(scores: dict[str, Any], plugin: str) -> dict[str, int]:
    """Each node's normalized score from `plugin`."""
    return {n: s.plugins[plugin] for n, s in scores.items()}


def _prefer_no_schedule(*keys: str) -> list[dict[str, Any]]:
    return [{"key": k, "value": "x", "effect": "PreferNoSchedule"} for k in keys]


# --- upstream's figures -------------------------------------------------------------------------------------


def test_default_weights_are_the_default_profiles() -> None:
    """pkg/scheduler/apis/config/v1/default_plugins.go."""
    assert DEFAULT_WEIGHTS == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
        "VolumeBinding": 1,
        "DynamicResources": 2,
    }


def test_default_normalize_score() -> None:
    """helper/normalize_score_test.go's cases."""
    assert list(default_normalize_score(dict(zip("abcd", [10, 5, 2, 1], strict=True)), False).values()) == [
        100,
        50,
        20,
        10,
    ]
    assert list(default_normalize_score(dict(zip("abc", [1, 4, 5], strict=True)), True).values()) == [
        80,
        20,
        0,
    ]
    assert default_normalize_score({"a": 0, "b": 0}, False) == {"a": 0, "b": 0}
    assert default_normalize_score({"a": 0, "b": 0}, True) == {"a": 100, "b": 100}


def test_node_affinity_scores_match_upstreams_test() -> None:
    """node_affinity_test.go "all nodes matches the preferred scheduling requirements of pod but with
    different priorities": raw 2, 4 and 11, normalized 18, 36 and 100."""
    p = _preferring(
        (2, {"foo": "bar"}), (4, {"key": "value"}), (5, {"foo": "bar", "key": "value", "az": "az1"})
    )
    nodes = [
        node("node1", labels={"foo": "bar"}),
        node("node2", labels={"key": "value"}),
        node("node3", labels={"foo": "bar", "key": "value", "az": "az1"}),
    ]
    assert [node_affinity_score(p, n) for n in nodes] == [2, 4, 11]
    scores = prioritize(p, nodes)
    assert _plugin_scores(scores, NODE_AFFINITY) == {"node1": 18, "node2": 36, "node3": 100}
    # weighted: NodeAffinity x2 plus TaintToleration x3 (no taints: 100 everywhere)
    assert {n: s.total for n, s in scores.items()} == {"node1": 336, "node2": 372, "node3": 500}


def test_node_affinity_is_skipped_without_preferred_terms() -> None:
    scores = prioritize(pod("p", {}), [node("a", labels={"foo": "bar"}), node("b")])
    assert all(NODE_AFFINITY not in s.plugins for s in scores.values())


def test_taint_toleration_scores_match_upstreams_test() -> None:
    """taint_toleration_test.go "the more intolerable taints a node has, the lower score it gets": 100, 50, 0;
    a toleration of the taint (effect PreferNoSchedule or none) removes it from the count."""
    nodes = [
        node("nodeA"),
        node("nodeB", taints=_prefer_no_schedule("cpu-type")),
        node("nodeC", taints=_prefer_no_schedule("cpu-type", "gpu-type")),
    ]
    p = pod("p", {})
    assert [taint_toleration_score(p, n) for n in nodes] == [0, 1, 2]
    scores = prioritize(p, nodes)
    assert _plugin_scores(scores, TAINT_TOLERATION) == {"nodeA": 100, "nodeB": 50, "nodeC": 0}
    assert {n: s.total for n, s in scores.items()} == {"nodeA": 300, "nodeB": 150, "nodeC": 0}
    tolerant = pod("t", {}, tolerations=[{"key": "gpu-type", "operator": "Exists"}])
    noschedule_only = pod(
        "n", {}, tolerations=[{"key": "gpu-type", "operator": "Exists", "effect": "NoSchedule"}]
    )
    assert taint_toleration_score(tolerant, nodes[2]) == 1
    assert taint_toleration_score(noschedule_only, nodes[2]) == 2


def test_least_allocated_and_balanced_match_upstreams_test() -> None:
    """least_allocated_test.go and balanced_allocation_test.go "nothing scheduled, resources requested,
    differently sized nodes": a pod of 3000m cpu and 5000 memory on 4000m/10000 and 6000m/10000 nodes."""
    requested = {"cpu": 3000, "memory": 5000}
    small, large = {"cpu": 4000, "memory": 10000}, {"cpu": 6000, "memory": 10000}
    assert least_allocated(small, requested) == 37
    assert least_allocated(large, requested) == 50
    assert balanced_allocation(small, requested, True) == 87
    assert balanced_allocation(large, requested, True) == 100
    assert balanced_allocation(large, {}, False) == 0  # a best-effort pod: PreScore skips the plugin
    assert least_allocated(small, {"cpu": 5000, "memory": 0}) == 50  # over-requested cpu scores 0


def test_weighted_sum_adds_resource_scores_as_given() -> None:
    scores = prioritize(
        pod("p", {}),
        [node("a"), node("b")],
        {NODE_RESOURCES_FIT: {"a": 37, "b": 50}, BALANCED_ALLOCATION: {"a": 87, "b": 100}},
    )
    assert {n: s.total for n, s in scores.items()} == {"a": 300 + 37 + 87, "b": 300 + 50 + 100}


# --- the placer's choice ------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("naive", [False, True])
def test_a_hub_user_pod_goes_to_the_preferred_node(strategy: Strategy, naive: bool) -> None:
    """Issue 38: JupyterHub's user pods prefer nodes labelled node-purpose=user with weight 100. Without the
    preference every strategy would take `a` (binpack: the fuller; spread and least-allocated: the emptier);
    with it, `b`."""
    nodes = [node("a"), node("b", labels={USER: "user"})]
    running = [pod("r", {"cpu": "8"}, nodeName="a" if strategy == "binpack" else "b")]
    placer = _placer(
        nodes, [gpu_slice("a", 2), gpu_slice("b", 2)], strategy=strategy, running=running, naive=naive
    )
    assert placer.place(pod("plain", {GPU_SHARED: 1, "cpu": "1"})).node == "a"
    assert placer.place(_preferring((100, {USER: "user"}))).node == "b"


def test_ties_of_the_weighted_sum_follow_binpack() -> None:
    """Two preferred nodes score alike: the fuller one wins (binpack's key), deterministically."""
    nodes = [node("a", labels={USER: "user"}), node("b", labels={USER: "user"}), node("c")]
    placer = _placer(nodes, [gpu_slice(n, 2) for n in "abc"])
    placed = _run(placer, [_preferring((100, {USER: "user"})) for _ in range(3)])
    assert [p.node for p in placed] == ["a", "a", "a"]


def test_a_stronger_preference_wins_over_a_weaker_one() -> None:
    nodes = [node("a", labels={"tier": "gold"}), node("b", labels={USER: "user"})]
    placer = _placer(nodes, [gpu_slice("a", 1), gpu_slice("b", 1)])
    assert placer.place(_preferring((10, {"tier": "gold"}), (90, {USER: "user"}))).node == "b"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_prefer_no_schedule_taints_steer_pods_away(strategy: Strategy) -> None:
    nodes = [node("a", taints=_prefer_no_schedule("spot")), node("b")]
    placer = _placer(nodes, [gpu_slice("a", 2), gpu_slice("b", 2)], strategy=strategy)
    assert placer.place(pod("p", {GPU_SHARED: 1})).node == "b"
    tolerant = pod("t", {GPU_SHARED: 1}, tolerations=[{"key": "spot", "operator": "Exists"}])
    assert placer.place(tolerant).node == "a"  # no taint counts: the name tie (least-allocated: equal nodes)


def test_least_allocated_spreads_by_cpu_and_memory() -> None:
    nodes = [node("a"), node("b")]
    running = [pod("r", {"cpu": "16", "memory": "64Gi"}, nodeName="a")]
    placer = _placer(
        nodes, [gpu_slice("a", 2), gpu_slice("b", 2)], strategy="least-allocated", running=running
    )
    placed = _run(placer, [pod(f"p{i}", {GPU_SHARED: 1, "cpu": "8", "memory": "32Gi"}) for i in range(3)])
    assert [p.node for p in placed] == ["b", "b", "a"]


def test_the_command_lines_offer_every_strategy() -> None:
    assert STRATEGY_CHOICES == STRATEGIES


def test_preferred_node_affinity_is_listed_as_scored() -> None:
    field = "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    assert SCHEDULING_FIELDS[field] == (Support.SCORED, "NodeAffinity")


def test_a_partial_search_scores_only_the_nodes_it_found() -> None:
    """percentageOfNodesToScore: of 200 nodes the search stops after 100 feasible ones, and only those are
    scored, as upstream scores them: a preferred node beyond them is not seen; one among them wins."""
    names = [f"n{i:03}" for i in range(200)]
    preferred = {"n050", "n150"}
    nodes = [node(n, labels={USER: "user"} if n in preferred else None) for n in names]
    placer = _placer(nodes, [gpu_slice(n, 1) for n in names], percentage=50)
    assert placer.place(_preferring((100, {USER: "user"}))).node == "n050"
    late = _placer(
        [node(n, labels={USER: "user"} if n == "n150" else None) for n in names],
        [gpu_slice(n, 1) for n in names],
        percentage=50,
    )
    assert late.place(_preferring((100, {USER: "user"}))).node == "n000"
