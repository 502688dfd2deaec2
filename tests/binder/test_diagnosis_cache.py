"""The FailedScheduling diagnosis is shared and kept incremental without changing its text
(binder/diagnosis.py): replicas that differ only in their token volume share one diagnosis; after a change
of a few nodes only those are diagnosed again, and the text equals a whole diagnosis of the new state."""

from __future__ import annotations

from support.placing import _gpu_pods, _placer, _run
from support.workloads import GPU_SHARED, container, gpu_slice, node, pod

from allocator.scheduling.explain import PodContext, explain_pod
from allocator.scheduling.placement import PlacementResult, Placer
from allocator.structured.cluster import Cluster
from binder.diagnosis import Diagnoser
from resourceapi.api.core_v1 import Pod


def _replica(name: str, shares: int = 1) -> Pod:
    """A pod as the API server stores it: its own `kube-api-access-<random>` volume, mounted."""
    main = container("main", {GPU_SHARED: shares})
    main["volumeMounts"] = [{"name": f"kube-api-access-{name}", "mountPath": "/var/run/secrets/x"}]
    return pod(name, containers=[main], volumes=[{"name": f"kube-api-access-{name}", "emptyDir": {}}])


def _whole(placer: Placer, p: Pod) -> tuple[str, ...]:
    core = placer.core
    assert isinstance(core, Cluster)
    ctx = PodContext(placer.nodes, placer.node_usage, placer.index, placer.resolver, placer.gates)
    return tuple(explain_pod(core, ctx, p, []))


def _full_cluster(nodes: int = 3) -> Placer:
    """`nodes` nodes of one 4-share GPU each, every share taken."""
    placer = _placer([node(f"n{i}") for i in range(nodes)], [gpu_slice(f"n{i}", 1) for i in range(nodes)])
    placed = _run(placer, _gpu_pods(4 * nodes))
    assert all(p.result is PlacementResult.BOUND for p in placed)
    return placer


def test_replicas_differing_only_in_their_token_volume_share_one_diagnosis() -> None:
    placer = _full_cluster()
    diagnoser = Diagnoser()
    core = placer.core
    assert isinstance(core, Cluster)
    texts = [diagnoser.reasons(placer, core, _replica(f"web-{i}", shares=2)) for i in range(5)]
    assert diagnoser.runs == 1
    assert texts == [_whole(placer, _replica("web-0", shares=2))] * 5
    assert texts[0] and "shares" in texts[0][0]
    other = pod("other", {GPU_SHARED: 3})  # another request: its own diagnosis
    assert diagnoser.reasons(placer, core, other) == _whole(placer, other)
    assert diagnoser.runs == 2


def test_a_change_on_one_node_is_diagnosed_there_alone_as_a_whole_diagnosis_would() -> None:
    placer = _full_cluster()
    core = placer.core
    assert isinstance(core, Cluster)
    diagnoser = Diagnoser()
    wants = _replica("web", shares=2)
    before = diagnoser.reasons(placer, core, wants)
    assert before == _whole(placer, wants)
    # n1's driver republishes its slice with a second GPU: n1 alone is noted, n1 alone diagnosed again
    scope = core.upsert_slice(gpu_slice("n1", 2))
    assert scope == frozenset({"n1"})
    placer.node_slices_changed([gpu_slice("n0", 1), gpu_slice("n1", 2), gpu_slice("n2", 1)], sorted(scope))
    after = diagnoser.reasons(placer, core, wants)
    assert (diagnoser.runs, diagnoser.partial) == (2, 1)
    assert after == _whole(placer, wants) != before
    # a new placer (a fresh snapshot): diagnosed whole
    fresh = _full_cluster()
    fresh_core = fresh.core
    assert isinstance(fresh_core, Cluster)
    assert diagnoser.reasons(fresh, fresh_core, wants) == before
    assert (diagnoser.runs, diagnoser.partial) == (3, 1)


def test_a_slice_of_a_pool_spanning_nodes_concerns_every_node() -> None:
    placer = _full_cluster(2)
    core = placer.core
    assert isinstance(core, Cluster)
    spanning = gpu_slice("n1", 1)
    spanning.metadata.name = "n1-second"
    spanning.spec.pool.name = "n0"  # a second slice of n0's pool, on n1
    assert core.upsert_slice(spanning) is None
    assert core.upsert_slice(gpu_slice("n0", 1)) == frozenset()  # unchanged: nothing to do
    assert core.delete_slice("n1-second") is None
    assert core.delete_slice("n1-second") == frozenset()
