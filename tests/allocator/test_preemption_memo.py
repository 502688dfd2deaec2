"""Preemption's dry run on a real Placer (allocator/scheduling/preemption.py placer_fit, DryRunMemo): the
placer is left as it was, and a node's result is reused only while nothing it reads changed."""

from __future__ import annotations

from support.placing import _placer
from support.workloads import GPU_SHARED, gpu_slice, node, pod

from allocator.scheduling.placement import PlacementResult, Placer
from allocator.scheduling.preemption import DryRunMemo, evict, find_candidates, placer_fit
from resourceapi.api.core_v1 import Pod
from resourceapi.api.resource_v1 import ResourceClaim

NODES = ["n1", "n2", "n3"]


def _full() -> tuple[Placer, dict[str, list[Pod]], list[ResourceClaim]]:
    """Three nodes of one 4-share GPU each, filled with one-share pods of priorities 1..12."""
    placer = _placer([node(n) for n in NODES], [gpu_slice(n, 1) for n in NODES])
    on: dict[str, list[Pod]] = {}
    claims: list[ResourceClaim] = []
    for i in range(12):
        p = pod(f"low-{i}", {GPU_SHARED: 1}, priority=i + 1)
        p.metadata.resource_version = "1"
        placement = placer.place(p, [])
        assert placement.result is PlacementResult.BOUND and placement.node is not None
        placer.commit(placement)
        p.spec.node_name = placement.node
        on.setdefault(placement.node, []).append(p)
        assert placement.claim is not None
        claims.append(placement.claim)
    return placer, on, claims


def _dry_run(
    placer: Placer,
    on: dict[str, list[Pod]],
    claims: list[ResourceClaim],
    memo: DryRunMemo | None,
    full: bool = True,
) -> list[tuple[str, list[str]]]:
    preemptor = pod("high", {GPU_SHARED: 1}, priority=100)
    with placer_fit(placer, preemptor, [], claims) as fit:
        assert fit.monotone
        if memo is not None:
            memo.begin(("high", 100), fit.node_key)
        found = find_candidates(preemptor, NODES, on, [], fit, monotone=True, memo=memo)
    if full:  # the placer is restored: the cluster still full
        assert placer.place(preemptor, []).result is PlacementResult.UNSCHEDULABLE
    return [(c.node, [v.name for v in c.victims]) for c in found]


def _evict_lowest(
    placer: Placer, on: dict[str, list[Pod]], claims: list[ResourceClaim]
) -> list[ResourceClaim]:
    """low-0 goes (the victim on n1): its pod and claim leave the placer; the claims left."""
    gone = on["n1"][0]
    assert gone.name == "low-0"
    evict(placer, [gone], claims)
    on["n1"] = on["n1"][1:]
    return [c for c in claims if c.status is None or c.status.reserved_for[0].name != "low-0"]  # type: ignore[index]


def test_the_memo_reuses_unchanged_nodes_and_runs_a_changed_one_again() -> None:
    """With the memo and without (on a twin placer): the same candidates each time; the second run reuses
    every node, and after n1's victim goes only n1 is run again."""
    placer, on, claims = _full()
    twin, twin_on, twin_claims = _full()
    memo = DryRunMemo()
    first = _dry_run(placer, on, claims, memo)
    assert first == _dry_run(twin, twin_on, twin_claims, None)
    assert first == [("n1", ["low-0"]), ("n2", ["low-4"]), ("n3", ["low-8"])]  # the lowest of each node
    assert (memo.hits, memo.misses) == (0, 3)
    assert _dry_run(placer, on, claims, memo) == first
    assert (memo.hits, memo.misses) == (3, 3)
    claims = _evict_lowest(placer, on, claims)
    twin_claims = _evict_lowest(twin, twin_on, twin_claims)
    after = _dry_run(placer, on, claims, memo, full=False)
    assert (memo.hits, memo.misses) == (5, 4)
    assert after == _dry_run(twin, twin_on, twin_claims, None, full=False)
    assert after[1:] == first[1:]


def test_a_changed_pod_version_is_a_miss() -> None:
    """The negative control of the reuse: the same node with a pod at another resourceVersion is run again."""
    placer, on, claims = _full()
    memo = DryRunMemo()
    _dry_run(placer, on, claims, memo)
    on["n1"][0].metadata.resource_version = "2"
    _dry_run(placer, on, claims, memo)
    assert (memo.hits, memo.misses) == (2, 4)
