"""A Placer on given nodes and slices, and pods placed and committed one by one (the placement tests)."""

from __future__ import annotations

from allocator.scheduling.placement import Placement, Placer, Strategy
from allocator.structured.cluster import Cluster
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from support.workloads import GPU_SHARED, gpu_class, pod

GATES = FeatureGates.defaults()


def _placer(
    nodes: list[Node],
    slices: list[ResourceSlice],
    classes: list[DeviceClass] | None = None,
    strategy: Strategy = "binpack",
    gates: FeatureGates = GATES,
    running: list[Pod] | None = None,
    naive: bool = False,
    allocated: list[ResourceClaim] | None = None,
    percentage: int = 100,
) -> Placer:
    classes = classes if classes is not None else [gpu_class()]
    cluster = Cluster(gates, classes, slices, allocated or [])
    resolver = ExtendedResourceResolver(classes, gates)
    return Placer(
        cluster,
        gates,
        resolver,
        nodes,
        slices,
        running or [],
        strategy,
        naive=naive,
        percentage_of_nodes_to_score=percentage,
    )


def _run(
    placer: Placer, pods: list[Pod], claims: dict[str, list[ResourceClaim]] | None = None
) -> list[Placement]:
    out = []
    for p in pods:
        placement = placer.place(p, (claims or {}).get(p.name, []))
        placer.commit(placement)
        out.append(placement)
    return out


def _devices(p: Placement) -> list[str]:
    return [f"{r.pool}/{r.device}" for a in p.allocation if a.devices for r in (a.devices.results or [])]


def _gpu_pods(n: int, shares: int = 1) -> list[Pod]:
    return [pod(f"p{i}", {GPU_SHARED: shares}) for i in range(n)]
