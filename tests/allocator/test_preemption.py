"""DefaultPreemption's victim selection and node choice, on a stand-in fit check (units per node).

Each case mirrors one of upstream v1.37.2's, named in it: pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption_test.go (TestDryRunPreemption, TestSelectBestCandidate, TestPodEligibleToPreemptOthers).
The fit check here is a stand-in (a node holds `capacity` units; a pod takes its `size`), since these tests
are about the procedure; test_simulate_preemption.py runs it on the allocator's shares.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from support.workloads import pod

from allocator.scheduling.preemption import (
    NOT_ELIGIBLE_NEVER,
    Candidate,
    FitsWithout,
    candidate_offset,
    find_candidates,
    ineligible_reason,
    num_candidates,
    pick_one_node,
    postfilter_message,
    select_victims_on_node,
    split_by_pdb_violation,
)
from resourceapi.api.core_v1 import Pod, PodStatus
from resourceapi.api.policy_v1 import PodDisruptionBudget


def _pod(
    name: str, priority: int, size: int = 1, node: str = "", start: str | None = None, **labels: str
) -> Pod:
    p = pod(name, {"cpu": str(size)}, priority=priority, nodeName=node or None)
    p.metadata.labels = dict(labels) or None
    if start is not None:
        p.status = PodStatus.model_validate({"phase": "Running", "startTime": start})
    return p


def _size(p: Pod) -> int:
    return int(str(p.spec.containers[0].resources.requests["cpu"]))  # type: ignore[index]


def _fit(preemptor: Pod, capacity: Mapping[str, int], on: Mapping[str, Sequence[Pod]]) -> Any:
    def fits_on(node: str) -> FitsWithout:
        def fits(removed: Sequence[Pod]) -> bool:
            gone = {id(p) for p in removed}
            used = sum(_size(p) for p in on.get(node, ()) if id(p) not in gone)
            return used + _size(preemptor) <= capacity[node]

        return fits

    return fits_on


def _pdb(name: str, allowed: int, disrupted: Sequence[str] = (), **match: str) -> PodDisruptionBudget:
    return PodDisruptionBudget.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": match}},
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": {n: "2026-01-01T00:00:00Z" for n in disrupted},
            },
        }
    )


def _names(pods: Sequence[Pod]) -> list[str]:
    return [p.name for p in pods]


# (upstream case, capacity per node, pods per node as (name, priority, size), preemptor size, pdbs,
#  expected victims per candidate node, expected PDB violations per node)
DRY_RUN_CASES: list[
    tuple[
        str,
        dict[str, int],
        dict[str, list[tuple[str, int, int]]],
        int,
        list[Any],
        dict[str, list[str]],
        dict[str, int],
    ]
] = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        {"node1": 2, "node2": 2},
        {"node1": [("p1", 1, 2)], "node2": [("p2", 1, 2)]},
        2,
        [],
        {"node1": ["p1"], "node2": ["p2"]},
        {},
    ),
    (
        "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would "
        "happen",
        {"node1": 2, "node2": 2},
        {"node1": [("p1", 200, 2)], "node2": [("p2", 200, 2)]},
        2,
        [],
        {},
        {},
    ),
    (
        "medium priority pod is preempted, but lower priority one stays as it is small",
        {"node1": 3, "node2": 3},
        {"node1": [("p1.1", 1, 1), ("p1.2", 50, 2)], "node2": [("p2.1", 50, 3)]},
        2,
        [],
        {"node1": ["p1.2"], "node2": ["p2.1"]},
        {},
    ),
    (
        "mixed priority pods are preempted",
        {"node1": 5},
        {"node1": [("p1.1", 10, 1), ("p1.2", 50, 1), ("p1.3", 40, 1), ("p1.4", 60, 1), ("p1.5", 5, 1)]},
        3,
        [],
        {"node1": ["p1.1", "p1.3", "p1.5"]},  # reprieved by priority: p1.4 (60) and p1.2 (50) fit back
        {},
    ),
    (
        "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
        {"node1": 1},
        {"node1": [("p1", 1, 1)]},
        2,
        [],
        {},
        {},
    ),
    (
        "preemption with violation of same pdb",
        {"node1": 2},
        {"node1": [("p1.1", 10, 1), ("p1.2", 10, 1)]},
        2,
        [_pdb("pdb", 1, app="foo")],
        {"node1": ["p1.1", "p1.2"]},
        {"node1": 1},
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
        "DisruptedPods",
        {"node1": 2},
        {"node1": [("p1.1", 10, 1), ("p1.2", 10, 1)]},
        2,
        [_pdb("pdb", 1, disrupted=["p1.2"], app="foo")],
        {"node1": ["p1.1", "p1.2"]},
        {"node1": 0},
    ),
    (
        "preemption with violation of the pdb with pod whose eviction was processed, the victim which "
        "belongs to DisruptedPods is treated as 'nonViolating'",
        {"node1": 3},
        {"node1": [("p1.1", 10, 1), ("p1.2", 10, 1), ("p1.3", 10, 1)]},
        3,
        [_pdb("pdb", 1, disrupted=["p1.3"], app="foo")],
        {"node1": ["p1.1", "p1.2", "p1.3"]},
        {"node1": 1},
    ),
]


@pytest.mark.parametrize(
    ("capacity", "layout", "size", "pdbs", "victims", "violations"),
    [c[1:] for c in DRY_RUN_CASES],
    ids=[c[0] for c in DRY_RUN_CASES],
)
def test_dry_run_preemption_finds_upstreams_victims(
    capacity: dict[str, int],
    layout: dict[str, list[tuple[str, int, int]]],
    size: int,
    pdbs: list[PodDisruptionBudget],
    victims: dict[str, list[str]],
    violations: dict[str, int],
) -> None:
    preemptor = _pod("preemptor", 100, size)
    on = {
        n: [
            _pod(name, prio, sz, n, start=f"2026-01-01T00:00:{i:02d}Z", app="foo")
            for i, (name, prio, sz) in enumerate(ps)
        ]
        for n, ps in layout.items()
    }
    found = find_candidates(preemptor, sorted(capacity), on, pdbs, _fit(preemptor, capacity, on))
    assert {c.node: sorted(_names(c.victims)) for c in found} == {n: sorted(v) for n, v in victims.items()}
    for c in found:
        assert c.pdb_violations == violations.get(c.node, 0)


def test_reprieve_tries_pdb_violating_pods_first_even_before_more_important_ones() -> None:
    """SelectVictimsOnNode reprieves the violating victims first: the PDB-protected low-priority pod stays
    and the unprotected higher-priority one goes (upstream TestSelectVictimsOnNode's PDB ordering)."""
    preemptor = _pod("preemptor", 100, 1)
    protected = _pod("protected", 10, 1, "n1", app="db")
    other = _pod("other", 20, 1, "n1", app="web")
    fit = _fit(preemptor, {"n1": 2}, {"n1": [protected, other]})
    c = select_victims_on_node(preemptor, "n1", [protected, other], [_pdb("db", 0, app="db")], fit("n1"))
    assert c is not None
    assert _names(c.victims) == ["other"] and c.pdb_violations == 0
    assert _names(c.reprieved) == ["protected"]


def test_without_budgets_the_most_important_pod_is_reprieved_first() -> None:
    """The negative control of the case above: with no PDB, the higher-priority pod stays."""
    preemptor = _pod("preemptor", 100, 1)
    low, high = _pod("low", 10, 1, "n1"), _pod("high", 20, 1, "n1")
    fit = _fit(preemptor, {"n1": 2}, {"n1": [low, high]})
    c = select_victims_on_node(preemptor, "n1", [low, high], [], fit("n1"))
    assert c is not None and _names(c.victims) == ["low"]


def test_pdb_budget_counts_down_across_victims_and_ignores_empty_selectors() -> None:
    """FilterVictimsWithPDBViolation: one allowed disruption lets the first matching pod go; the second
    violates. A PDB with an empty selector matches nothing; a pod without labels never violates."""
    a, b, bare = _pod("a", 1, app="x"), _pod("b", 1, app="x"), _pod("bare", 1)
    empty = PodDisruptionBudget.model_validate(
        {"metadata": {"name": "e", "namespace": "default"}, "spec": {"selector": {}}, "status": {}}
    )
    bad, good = split_by_pdb_violation([a, b, bare], [_pdb("p", 1, app="x"), empty])
    assert [(p.name, n) for p, n in bad] == [("b", 1)]
    assert _names(good) == ["a", "bare"]


def _cand(node: str, *victims: tuple[int, str | None], pdb: int = 0) -> Candidate:
    pods = tuple(_pod(f"{node}-{i}", prio, start=start) for i, (prio, start) in enumerate(victims))
    return Candidate(node, pods, pdb)


T1, T2, T3 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z", "2026-01-01T00:00:03Z"
# (upstream TestSelectBestCandidate case or criterion, candidates, expected node)
PICK_CASES: list[tuple[str, list[Candidate], str]] = [
    ("fewest PDB violations first", [_cand("n1", (1, T1), pdb=1), _cand("n2", (50, T1))], "n2"),
    (
        "node with min highest priority pod is picked",
        [_cand("n1", (105, T1), (10, T1)), _cand("n2", (100, T1), (90, T1)), _cand("n3", (101, T1))],
        "n2",
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        [_cand("n1", (100, T1), (10, T1)), _cand("n2", (100, T1), (50, T1))],
        "n1",
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        [_cand("n1", (100, T1), (0, T1), (0, T1)), _cand("n2", (100, T1), (0, T1))],
        "n2",
    ),
    (
        "sum of adjusted priorities is considered",
        [_cand("n1", (100, T1), (-10, T1), (-10, T1)), _cand("n2", (100, T1), (-10, T1))],
        "n2",
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        [_cand("n1", (10, T1)), _cand("n2", (10, T3)), _cand("n3", (10, T2))],
        "n2",
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        [_cand("n1", (10, T3), (5, T1)), _cand("n2", (10, T2), (5, T3))],
        "n1",
    ),
]


@pytest.mark.parametrize(("candidates", "node"), [c[1:] for c in PICK_CASES], ids=[c[0] for c in PICK_CASES])
def test_pick_one_node_for_preemption_in_upstreams_order(candidates: list[Candidate], node: str) -> None:
    chosen = pick_one_node(candidates)
    assert chosen is not None and chosen.node == node


def test_no_candidates_picks_nothing() -> None:
    assert pick_one_node([]) is None


def test_preemption_policy_never_is_not_eligible() -> None:
    """TestPodEligibleToPreemptOthers: "Pod with PreemptNever preemption policy"."""
    assert ineligible_reason(pod("p", priority=100, preemptionPolicy="Never")) == NOT_ELIGIBLE_NEVER
    assert ineligible_reason(pod("p", priority=100, preemptionPolicy="PreemptLowerPriority")) is None
    assert ineligible_reason(pod("p", priority=100)) is None


def test_every_postfilter_message_starts_with_preemption() -> None:
    """DefaultPreemption.PostFilter prefixes each Evaluator message with `preemption: `, the ineligibility
    too: kube-scheduler v1.37.2 on the device plugin reads `... preemption: not eligible due to
    preemptionPolicy=Never.` (the `never` scenario of tests/e2e/test_preemption_vs_kube_scheduler.py)."""
    never = pod("p", priority=100, preemptionPolicy="Never")
    assert postfilter_message(never, 3, 1) == "preemption: not eligible due to preemptionPolicy=Never."
    assert postfilter_message(pod("p", priority=100), 3, 1) == (
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


def _random_node(rng: random.Random, n: int) -> tuple[list[Pod], list[PodDisruptionBudget], int, int]:
    """A node of `n` pods of random priority, size and app, budgets on two apps, a capacity and a size."""
    pods = [
        _pod(
            f"p{i}",
            rng.randrange(1, 5),
            rng.randrange(1, 4),
            "n1",
            start=f"2026-01-01T00:{rng.randrange(60):02d}:{i:02d}Z",
            app=rng.choice("abc"),
        )
        for i in range(n)
    ]
    pdbs = [_pdb("a", rng.randrange(3), app="a"), _pdb("b", rng.randrange(3), app="b")]
    capacity = sum(_size(p) for p in pods) + rng.randrange(0, 3)
    return pods, pdbs, capacity, rng.randrange(1, 6)


def test_monotone_reprieve_picks_the_greedy_loops_victims_with_fewer_checks() -> None:
    """The bisected reprieve (`monotone`, a fit that more free room never breaks) keeps exactly the pods
    the one-by-one loop keeps, on 300 random nodes with budgets, and checks the fit less often."""
    rng = random.Random(41)
    checks = {False: 0, True: 0}
    for _ in range(300):
        pods, pdbs, capacity, size = _random_node(rng, rng.randrange(1, 25))
        preemptor = _pod("preemptor", 100, size)
        fit = _fit(preemptor, {"n1": capacity}, {"n1": pods})("n1")
        got = {}
        for monotone in (False, True):

            def counted(removed: Sequence[Pod], m: bool = monotone, f: Any = fit) -> bool:
                checks[m] += 1
                return bool(f(removed))

            got[monotone] = select_victims_on_node(preemptor, "n1", pods, pdbs, counted, monotone)
        a, b = got[False], got[True]
        assert (a is None) == (b is None)
        if a is not None and b is not None:
            assert _names(a.victims) == _names(b.victims) and _names(a.reprieved) == _names(b.reprieved)
            assert a.pdb_violations == b.pdb_violations
    assert checks[True] < checks[False] / 2


def test_bisected_reprieve_is_only_for_a_monotone_fit() -> None:
    """The negative control: a fit that needs a pod present (as required pod affinity does) is not
    monotone, and bisecting it gives other victims than the greedy loop; the loop's are upstream's."""
    preemptor = _pod("preemptor", 100, 1)
    pods = [_pod(f"p{i}", 10 - i, 1, "n1") for i in range(4)]

    def fit(removed: Sequence[Pod]) -> bool:  # fits with at most 2 pods present, and p3 among them
        present = [p for p in pods if all(p is not r for r in removed)]
        return len(present) <= 2 and (not present or any(p.name == "p3" for p in present))

    loop = select_victims_on_node(preemptor, "n1", pods, [], fit)
    bisected = select_victims_on_node(preemptor, "n1", pods, [], fit, monotone=True)
    assert loop is not None and bisected is not None
    assert _names(loop.victims) == ["p0", "p1", "p2"]  # p0 alone fails the p3 need; p1, p2 too
    assert _names(loop.victims) != _names(bisected.victims)


@pytest.mark.parametrize(
    ("nodes", "expected"), [(1, 1), (99, 99), (100, 100), (999, 100), (1000, 100), (1500, 150), (5000, 500)]
)
def test_num_candidates_is_ten_percent_but_at_least_100(nodes: int, expected: int) -> None:
    """calculateNumCandidates with DefaultPreemptionArgs' defaults (10%, 100)."""
    assert num_candidates(nodes) == expected


def test_dry_run_stops_once_enough_candidates_are_found_from_the_offset() -> None:
    """DryRunPreemption over 150 nodes needs 100 candidates, one of them violating no budget: from offset
    120 it evaluates nodes 120..149 then 0..69 and stops; with every node a PDB violator it runs them all.
    Under 100 nodes the offset is never drawn (every node is evaluated, in order)."""
    names = [f"n{i:03d}" for i in range(150)]
    on = {n: [_pod(f"{n}-v", 1, 1, n, app="db")] for n in names}
    preemptor = _pod("preemptor", 100, 1)
    fit = _fit(preemptor, dict.fromkeys(names, 1), on)
    found = find_candidates(preemptor, names, on, [], fit, offset=120)
    assert [c.node for c in found] == names[120:] + names[:70]
    violating = find_candidates(preemptor, names, on, [_pdb("db", 0, app="db")], fit, offset=120)
    assert len(violating) == 150 and all(c.pdb_violations == 1 for c in violating)
    assert candidate_offset(150, lambda n: 120) == 120
    assert candidate_offset(99, lambda n: 42) == 0 and candidate_offset(100, lambda n: 42) == 0
