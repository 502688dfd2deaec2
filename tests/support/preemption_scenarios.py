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
from typing import Any

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


def _p(name: str, priority: int, *shares: int, app: str | None = None, init: tuple[int, ...] = ()) -> Running:
    """A running pod, `shares` per container (one share when none), labelled `app=<app>`; `_on` places it."""
    return Running(name, "", priority, shares or (1,), (("app", app),) if app else (), init)


def _on(gpus: int, shares: int, *pods: Running) -> tuple[tuple[int, int], tuple[Running, ...]]:
    """A node of `gpus` GPUs x `shares` shares and the pods running on it."""
    return (gpus, shares), pods


def _scenario(
    tag: str,
    title: str,
    nodes: tuple[tuple[tuple[int, int], tuple[Running, ...]], ...],
    *,
    expect_node: int | None = None,
    expect_victims: tuple[str, ...] = (),
    **fields: Any,
) -> Scenario:
    """A Scenario from a table row: its nodes (`_on`) are `<tag>-n1`, `<tag>-n2`, ..., the running pods theirs
    in that order; `expect_node` is the preemptor's node by number; `fields` the Scenario's other fields."""
    names = [f"{tag}-n{i}" for i in range(1, len(nodes) + 1)]
    return Scenario(
        tag,
        title,
        tuple(Node(name, gpus, shares) for name, ((gpus, shares), _) in zip(names, nodes, strict=True)),
        tuple(replace(pod, node=name) for name, (_, pods) in zip(names, nodes, strict=True) for pod in pods),
        expect_node=None if expect_node is None else names[expect_node - 1],
        expect_victims=frozenset(expect_victims),
        **fields,
    )


SCENARIOS: tuple[Scenario, ...] = (
    _scenario(
        "lowest",
        "priorities: one share frees the lowest of four",
        (_on(1, 4, _p("p1", 1), _p("p2", 2), _p("p3", 3), _p("p4", 4)),),
        priority=100,
        expect_node=1,
        expect_victims=("p1",),
    ),
    _scenario(
        "greedy",
        "priorities: reprieve by importance keeps a lower pod, one above the preemptor is never a victim",
        (_on(4, 1, _p("a", 10), _p("b", 20, 2), _p("c", 1000)),),
        priority=500,
        shares=(2,),
        expect_node=1,
        expect_victims=("b",),
    ),
    _scenario(
        "pdb-reprieve",
        "PDB: the budgeted pod is reprieved first, two unbudgeted ones go instead",
        (_on(4, 1, _p("a", 1, app="db"), _p("b", 2), _p("c", 3), _p("d", 4)),),
        priority=100,
        shares=(2,),
        budgets=(Budget("db", "db", 1),),
        expect_node=1,
        expect_victims=("b", "c"),
    ),
    _scenario(
        "pdb-budget",
        "PDB: a budget allowing one disruption counts down in importance order, only the last is violating",
        (_on(1, 4, _p("a", 1, app="db"), _p("b", 2, app="db"), _p("c", 3), _p("d", 4)),),
        priority=100,
        shares=(1, 1, 1),
        budgets=(Budget("db", "db", 1),),
        expect_node=1,
        expect_victims=("b", "c", "d"),
    ),
    _scenario(
        "pdb-violated",
        "PDB: violations are minimised, not forbidden: the only way in evicts the budgeted pod",
        (_on(2, 1, _p("a", 1, app="db"), _p("b", 2)),),
        priority=100,
        shares=(2,),
        budgets=(Budget("db", "db", 1),),
        expect_node=1,
        expect_victims=("a", "b"),
    ),
    _scenario(
        "pdb-node",
        "several nodes: fewest PDB violations first, over a lower-priority victim",
        (_on(1, 2, _p("a", 1, app="db"), _p("x", 900)), _on(1, 2, _p("b", 5), _p("y", 900))),
        priority=100,
        budgets=(Budget("db", "db", 1),),
        expect_node=2,
        expect_victims=("b",),
    ),
    _scenario(
        "never",
        "preemptionPolicy Never: the pod waits, nothing is evicted",
        (_on(1, 2, _p("a", 1), _p("b", 2)),),
        priority=100,
        never=True,
    ),
    _scenario(
        "equal",
        "priorities: nothing below the preemptor, so no victims",
        (_on(1, 2, _p("a", 100), _p("b", 200)),),
        priority=100,
    ),
    _scenario(
        "highest",
        "several nodes: the lowest highest-priority victim",
        (_on(1, 2, _p("a", 20), _p("x", 900)), _on(1, 2, _p("b", 10), _p("y", 900))),
        priority=100,
        expect_node=2,
        expect_victims=("b",),
    ),
    _scenario(
        "sum",
        "several nodes: equal highest victim priority, the smaller priority sum",
        (_on(2, 1, _p("a", 30), _p("b", 20)), _on(2, 1, _p("c", 30), _p("d", 10))),
        priority=100,
        shares=(2,),
        expect_node=2,
        expect_victims=("c", "d"),
    ),
    _scenario(
        "count",
        "several nodes: equal highest priority and sum (2^31 shift), the fewer victims",
        (_on(2, 1, _p("a", 0), _p("b", INT32_MIN)), _on(2, 1, _p("c", 0, 2))),
        priority=100,
        shares=(2,),
        expect_node=2,
        expect_victims=("c",),
    ),
    _scenario(
        "start",
        "several nodes: everything else equal, the latest-started victim's node",
        (_on(1, 1, _p("a", 10)), _on(1, 1, _p("b", 10))),
        priority=100,
        start_gap=True,
        expect_node=2,
        expect_victims=("b",),
    ),
    _scenario(
        "multi-preemptor",
        "multi-container preemptor: three containers of one share free the three lowest",
        (_on(2, 2, _p("p1", 1), _p("p2", 2), _p("p3", 3), _p("p4", 4)),),
        priority=100,
        shares=(1, 1, 1),
        expect_node=1,
        expect_victims=("p1", "p2", "p3"),
    ),
    _scenario(
        "multi-victim",
        "multi-container victims: one two-container pod frees more than needed, the others stay",
        (_on(1, 4, _p("a", 1, 1, 1), _p("b", 2), _p("c", 3)),),
        priority=100,
        expect_node=1,
        expect_victims=("a",),
    ),
    _scenario(
        "multi-nodes",
        "multi-container pods on two nodes: one two-container victim beats two single ones",
        (
            _on(1, 4, _p("x", 5, 1, 1), _p("u", 50, 1, 1)),
            _on(1, 4, _p("z", 7), _p("w", 8), _p("v", 60, 1, 1)),
        ),
        priority=100,
        shares=(1, 1),
        expect_node=1,
        expect_victims=("x",),
    ),
    _scenario(
        "start-reprieve",
        "priorities equal on one node: the earlier-started pod is reprieved first, the later one goes",
        (_on(1, 2, _p("a", 10), _p("b", 10)),),
        priority=100,
        start_gap=True,
        expect_node=1,
        expect_victims=("b",),
    ),
    _scenario(
        "init",
        "init containers: each pod counts its larger init request, a victim's init shares are freed too",
        (_on(4, 1, _p("v", 1, init=(2,)), _p("w", 2), _p("x", 3)),),
        priority=100,
        init=(3,),
        expect_node=1,
        expect_victims=("v", "w"),
    ),
    _scenario(
        "not-enough",
        "priorities: evicting every lower pod frees too little, so nothing is evicted",
        (_on(1, 2, _p("a", 10), _p("b", 500)),),
        priority=100,
        shares=(1, 1),
        not_helpful=True,
    ),
)
