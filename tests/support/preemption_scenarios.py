"""Preemption scenarios as data, for kube-scheduler on the device plugin's counted `nvidia.com/gpu.shared` and
dra-capacity on shares (tests/e2e/test_preemption_vs_kube_scheduler.py).

A scenario is nodes (each one GPU count for the device plugin, `gpus` x `shares` for the shares side), the
running pods already on them (priority, shares per container, labels), PodDisruptionBudgets and one preemptor.
Each is tie-free: the victims and the node follow from priorities, sizes and budgets alone, except where
`start_gap` is set: there the running pods' start times (a second apart, checked) decide, as
`pickOneNodeForPreemption`'s last criterion (`start`) and MoreImportantPod's reprieve order
(`start-reprieve`) use them. Priorities are PriorityClasses `prio-<value>` (`prio-<value>-never`:
preemptionPolicy Never). Each has one or two nodes, far under the 100 beyond which upstream samples.
On shares a container asking k needs a share on each of k GPUs (docs/divergences.md, "Shares, not
device-plugin units"), so where a container asks more than one, the nodes have one-share GPUs and both sides
count the same; elsewhere GPUs hold several shares and several pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

GPU_SHARED = "nvidia.com/gpu.shared"
# The lowest int32: only with it can two candidate nodes have equal priority sums but different victim counts
# (upstream shifts each priority by 2^31 before summing), the one case where `fewest victims` decides.
INT32_MIN = -(2**31)


@dataclass(frozen=True)
class Node:
    """`gpus` GPUs of `shares` shares each; the device plugin advertises `gpus * shares`."""

    name: str
    gpus: int = 1
    shares: int = 4

    @property
    def count(self) -> int:
        return self.gpus * self.shares


@dataclass(frozen=True)
class Running:
    """A pod already on `node`: its priority, shares per container (one entry a container) and labels."""

    name: str
    node: str
    priority: int
    shares: tuple[int, ...] = (1,)
    labels: tuple[tuple[str, str], ...] = ()
    init: tuple[int, ...] = ()  # init containers' shares (the pod counts the larger of them and the sum)


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget selecting `app=<app>` with `min_available`."""

    name: str
    app: str
    min_available: int


@dataclass(frozen=True)
class Scenario:
    """`expect_node`: where the preemptor goes (None: it stays pending); `expect_victims`: the pods evicted.
    `start_gap`: the running pods are started a second or more apart, in order (start times decide)."""

    tag: str
    title: str
    nodes: tuple[Node, ...]
    running: tuple[Running, ...]
    priority: int
    shares: tuple[int, ...] = (1,)  # the preemptor's shares per container
    init: tuple[int, ...] = ()  # the preemptor's init containers' shares
    never: bool = False  # preemptionPolicy: Never
    budgets: tuple[Budget, ...] = ()
    expect_node: str | None = None
    expect_victims: frozenset[str] = field(default_factory=frozenset)
    start_gap: bool = False
    # kube-scheduler names the filter's reason where evicting every lower pod is not enough, dra-capacity says
    # `Preemption is not helpful for scheduling` (docs/divergences.md, "Preemption suffix only ...")
    not_helpful: bool = False

    @property
    def priorities(self) -> set[int]:
        return {self.priority, *(r.priority for r in self.running)}

    def altered(self) -> Scenario:
        """The negative control's copy: one victim more expected (or one fewer), so a comparer must object."""
        names = sorted(r.name for r in self.running)
        extra = next(n for n in names if n not in self.expect_victims)
        return replace(self, tag=f"{self.tag}-altered", expect_victims=self.expect_victims | {extra})


def _r(
    name: str, node: str, priority: int, *shares: int, app: str | None = None, init: tuple[int, ...] = ()
) -> Running:
    return Running(name, node, priority, shares or (1,), (("app", app),) if app else (), init)


def _v(*names: str) -> frozenset[str]:
    return frozenset(names)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "lowest",
        "priorities: one share frees the lowest of four",
        (Node("lowest-n1"),),
        (
            _r("p1", "lowest-n1", 1),
            _r("p2", "lowest-n1", 2),
            _r("p3", "lowest-n1", 3),
            _r("p4", "lowest-n1", 4),
        ),
        priority=100,
        expect_node="lowest-n1",
        expect_victims=_v("p1"),
    ),
    Scenario(
        "greedy",
        "priorities: reprieve by importance keeps a lower pod, one above the preemptor is never a victim",
        (Node("greedy-n1", gpus=4, shares=1),),
        (_r("a", "greedy-n1", 10), _r("b", "greedy-n1", 20, 2), _r("c", "greedy-n1", 1000)),
        priority=500,
        shares=(2,),
        expect_node="greedy-n1",
        expect_victims=_v("b"),
    ),
    Scenario(
        "pdb-reprieve",
        "PDB: the budgeted pod is reprieved first, two unbudgeted ones go instead",
        (Node("pdb-reprieve-n1", gpus=4, shares=1),),
        (
            _r("a", "pdb-reprieve-n1", 1, app="db"),
            _r("b", "pdb-reprieve-n1", 2),
            _r("c", "pdb-reprieve-n1", 3),
            _r("d", "pdb-reprieve-n1", 4),
        ),
        priority=100,
        shares=(2,),
        budgets=(Budget("db", "db", 1),),
        expect_node="pdb-reprieve-n1",
        expect_victims=_v("b", "c"),
    ),
    Scenario(
        "pdb-budget",
        "PDB: a budget allowing one disruption counts down in importance order, only the last is violating",
        (Node("pdb-budget-n1"),),
        (
            _r("a", "pdb-budget-n1", 1, app="db"),
            _r("b", "pdb-budget-n1", 2, app="db"),
            _r("c", "pdb-budget-n1", 3),
            _r("d", "pdb-budget-n1", 4),
        ),
        priority=100,
        shares=(1, 1, 1),
        budgets=(Budget("db", "db", 1),),
        expect_node="pdb-budget-n1",
        expect_victims=_v("b", "c", "d"),
    ),
    Scenario(
        "pdb-violated",
        "PDB: violations are minimised, not forbidden: the only way in evicts the budgeted pod",
        (Node("pdb-violated-n1", gpus=2, shares=1),),
        (_r("a", "pdb-violated-n1", 1, app="db"), _r("b", "pdb-violated-n1", 2)),
        priority=100,
        shares=(2,),
        budgets=(Budget("db", "db", 1),),
        expect_node="pdb-violated-n1",
        expect_victims=_v("a", "b"),
    ),
    Scenario(
        "pdb-node",
        "several nodes: fewest PDB violations first, over a lower-priority victim",
        (Node("pdb-node-n1", shares=2), Node("pdb-node-n2", shares=2)),
        (
            _r("a", "pdb-node-n1", 1, app="db"),
            _r("x", "pdb-node-n1", 900),
            _r("b", "pdb-node-n2", 5),
            _r("y", "pdb-node-n2", 900),
        ),
        priority=100,
        budgets=(Budget("db", "db", 1),),
        expect_node="pdb-node-n2",
        expect_victims=_v("b"),
    ),
    Scenario(
        "never",
        "preemptionPolicy Never: the pod waits, nothing is evicted",
        (Node("never-n1", shares=2),),
        (_r("a", "never-n1", 1), _r("b", "never-n1", 2)),
        priority=100,
        never=True,
    ),
    Scenario(
        "equal",
        "priorities: nothing below the preemptor, so no victims",
        (Node("equal-n1", shares=2),),
        (_r("a", "equal-n1", 100), _r("b", "equal-n1", 200)),
        priority=100,
    ),
    Scenario(
        "highest",
        "several nodes: the lowest highest-priority victim",
        (Node("highest-n1", shares=2), Node("highest-n2", shares=2)),
        (
            _r("a", "highest-n1", 20),
            _r("x", "highest-n1", 900),
            _r("b", "highest-n2", 10),
            _r("y", "highest-n2", 900),
        ),
        priority=100,
        expect_node="highest-n2",
        expect_victims=_v("b"),
    ),
    Scenario(
        "sum",
        "several nodes: equal highest victim priority, the smaller priority sum",
        (Node("sum-n1", gpus=2, shares=1), Node("sum-n2", gpus=2, shares=1)),
        (
            _r("a", "sum-n1", 30),
            _r("b", "sum-n1", 20),
            _r("c", "sum-n2", 30),
            _r("d", "sum-n2", 10),
        ),
        priority=100,
        shares=(2,),
        expect_node="sum-n2",
        expect_victims=_v("c", "d"),
    ),
    Scenario(
        "count",
        "several nodes: equal highest priority and sum (2^31 shift), the fewer victims",
        (Node("count-n1", gpus=2, shares=1), Node("count-n2", gpus=2, shares=1)),
        (
            _r("a", "count-n1", 0),
            _r("b", "count-n1", INT32_MIN),
            _r("c", "count-n2", 0, 2),
        ),
        priority=100,
        shares=(2,),
        expect_node="count-n2",
        expect_victims=_v("c"),
    ),
    Scenario(
        "start",
        "several nodes: everything else equal, the latest-started victim's node",
        (Node("start-n1", shares=1), Node("start-n2", shares=1)),
        (_r("a", "start-n1", 10), _r("b", "start-n2", 10)),
        priority=100,
        expect_node="start-n2",
        expect_victims=_v("b"),
        start_gap=True,
    ),
    Scenario(
        "multi-preemptor",
        "multi-container preemptor: three containers of one share free the three lowest",
        (Node("multi-preemptor-n1", gpus=2, shares=2),),
        (
            _r("p1", "multi-preemptor-n1", 1),
            _r("p2", "multi-preemptor-n1", 2),
            _r("p3", "multi-preemptor-n1", 3),
            _r("p4", "multi-preemptor-n1", 4),
        ),
        priority=100,
        shares=(1, 1, 1),
        expect_node="multi-preemptor-n1",
        expect_victims=_v("p1", "p2", "p3"),
    ),
    Scenario(
        "multi-victim",
        "multi-container victims: one two-container pod frees more than needed, the others stay",
        (Node("multi-victim-n1"),),
        (_r("a", "multi-victim-n1", 1, 1, 1), _r("b", "multi-victim-n1", 2), _r("c", "multi-victim-n1", 3)),
        priority=100,
        expect_node="multi-victim-n1",
        expect_victims=_v("a"),
    ),
    Scenario(
        "multi-nodes",
        "multi-container pods on two nodes: one two-container victim beats two single ones",
        (Node("multi-nodes-n1"), Node("multi-nodes-n2")),
        (
            _r("x", "multi-nodes-n1", 5, 1, 1),
            _r("u", "multi-nodes-n1", 50, 1, 1),
            _r("z", "multi-nodes-n2", 7),
            _r("w", "multi-nodes-n2", 8),
            _r("v", "multi-nodes-n2", 60, 1, 1),
        ),
        priority=100,
        shares=(1, 1),
        expect_node="multi-nodes-n1",
        expect_victims=_v("x"),
    ),
    Scenario(
        "start-reprieve",
        "priorities equal on one node: the earlier-started pod is reprieved first, the later one goes",
        (Node("start-reprieve-n1", shares=2),),
        (_r("a", "start-reprieve-n1", 10), _r("b", "start-reprieve-n1", 10)),
        priority=100,
        expect_node="start-reprieve-n1",
        expect_victims=_v("b"),
        start_gap=True,
    ),
    Scenario(
        "init",
        "init containers: each pod counts its larger init request, a victim's init shares are freed too",
        (Node("init-n1", gpus=4, shares=1),),
        (
            _r("v", "init-n1", 1, 1, init=(2,)),
            _r("w", "init-n1", 2),
            _r("x", "init-n1", 3),
        ),
        priority=100,
        shares=(1,),
        init=(3,),
        expect_node="init-n1",
        expect_victims=_v("v", "w"),
    ),
    Scenario(
        "not-enough",
        "priorities: evicting every lower pod frees too little, so nothing is evicted",
        (Node("not-enough-n1", shares=2),),
        (_r("a", "not-enough-n1", 10), _r("b", "not-enough-n1", 500)),
        priority=100,
        shares=(1, 1),
        not_helpful=True,
    ),
)
