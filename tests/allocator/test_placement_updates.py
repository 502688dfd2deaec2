"""A long-lived Placer fed with changes from elsewhere decides as one built afresh with those changes."""

from __future__ import annotations

from typing import Any

from support.placing import _devices, _gpu_pods, _placer, _run
from support.workloads import GPU_SHARED, gpu_slice, node, pod

from allocator.scheduling.placement import Placer
from resourceapi.api.core_v1 import Pod
from resourceapi.api.resource_v1 import ResourceClaim


def _decisions(placer: Placer, pods: list[Pod], committed: list[ResourceClaim] | None = None) -> list[Any]:
    """Place and commit `pods`; their claims (allocated) are appended to `committed`."""
    placed = _run(placer, pods)
    if committed is not None:
        committed.extend(p.claim for p in placed if p.claim is not None)
    return [(p.node, _devices(p)) for p in placed]


def _bound(name: str, node_name: str, cpu: str = "1") -> Pod:
    p = pod(name, {"cpu": cpu})
    p.metadata.uid = f"uid-{name}"
    p.spec.node_name = node_name
    return p


def test_allocations_counted_and_released_elsewhere() -> None:
    nodes, slices = [node("n1"), node("n2")], [gpu_slice("n1", 2), gpu_slice("n2", 2)]
    taken = _run(_placer(nodes[1:], slices[1:]), _gpu_pods(3))  # three shares of n2/gpu-0, made elsewhere
    claims: list[ResourceClaim] = [p.claim for p in taken if p.claim is not None]
    assert len(claims) == 3

    live = _placer(nodes, slices)
    ours: list[ResourceClaim] = []
    warm = [pod("warm", {GPU_SHARED: 1})]
    assert _decisions(live, warm, ours) == [("n1", ["n1/gpu-0"])]  # shapes cached before the changes
    for c, p in zip(claims, taken, strict=True):
        live.count_allocation(c, p.allocation[-1])
    fresh = _placer(nodes, slices, allocated=claims + ours)
    pods = _gpu_pods(3)
    assert _decisions(live, pods, ours) == _decisions(fresh, pods)

    for p in taken:
        live.release_allocation(p.allocation[-1])
    fresh = _placer(nodes, slices, allocated=ours)
    more = _gpu_pods(4)
    assert _decisions(live, more) == _decisions(fresh, more)


def test_pods_added_and_removed_elsewhere() -> None:
    nodes = [node("n1", {"cpu": "4"}), node("n2", {"cpu": "4"})]
    live = _placer(nodes, [])
    cpu_pods = [pod(f"c{i}", {"cpu": "1"}) for i in range(2)]
    assert [n for n, _ in _decisions(live, cpu_pods)] == ["n1", "n1"]  # binpack
    other = _bound("other", "n1", cpu="2")
    live.pod_added(other, "n1")
    live.pod_added(other, "n1")  # counted once
    assert live.node_usage("n1").pods == 3
    assert [n for n, _ in _decisions(live, [pod("c2", {"cpu": "1"})])] == ["n2"]  # n1 is full now
    live.pod_removed(other, "n1")
    live.pod_removed(other, "n1")  # removed once
    assert live.node_usage("n1").pods == 2
    assert live.node_usage("n1").requested.get("cpu") == 2000
    assert [n for n, _ in _decisions(live, [pod("c3", {"cpu": "1"})])] == ["n1"]


def test_a_node_changed_elsewhere_is_seen_cordon_and_allocatable_alike() -> None:
    nodes = [node("n1", {"cpu": "4"}), node("n2", {"cpu": "4"})]
    live = _placer(nodes, [])
    assert [n for n, _ in _decisions(live, [pod("c0", {"cpu": "1"})])] == ["n1"]  # static reasons cached
    live.node_changed(node("n1", {"cpu": "4"}, unschedulable=True))
    assert [n for n, _ in _decisions(live, [pod("c1", {"cpu": "1"})])] == ["n2"]
    live.node_changed(node("n2", {"cpu": "1"}))  # c1 holds n2's one cpu now
    assert _decisions(live, [pod("c2", {"cpu": "1"})]) == [(None, [])]
    live.node_changed(node("n1", {"cpu": "4"}))  # uncordoned
    assert [n for n, _ in _decisions(live, [pod("c3", {"cpu": "1"})])] == ["n1"]


def test_a_node_local_slice_published_elsewhere_is_seen_on_that_node() -> None:
    nodes, slices = [node("n1"), node("n2")], [gpu_slice("n1", 1)]
    live = _placer(nodes, slices)
    assert _decisions(live, _gpu_pods(4)) == [("n1", ["n1/gpu-0"])] * 4  # n1's one GPU is full now
    published = gpu_slice("n2", 1)
    live.core.upsert_slice(published)  # type: ignore[attr-defined]
    live.node_slices_changed([*slices, published], ["n2"])
    assert _decisions(live, [pod("more", {GPU_SHARED: 1})]) == [("n2", ["n2/gpu-0"])]
