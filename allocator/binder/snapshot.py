"""The scheduler's snapshot: the `Placer` (allocator core, nodes, running pods) built from the informers,
with the assume cache overlaid (allocations we wrote or are writing count, claims we deleted do not).

Upstream: the scheduler cache's `UpdateSnapshot` and the DRA plugin's view of allocated claims (the assume
cache's objects). The caller holds the controller's lock.
"""

from __future__ import annotations

from allocator.binder.context import BinderContext
from allocator.binder.hints import is_allocated
from allocator.binder.models import parse, parse_all
from allocator.cluster import Cluster
from allocator.placement import Placer
from resourceapi.core_v1 import Node, Pod
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice


class Snapshot:
    def __init__(self, ctx: BinderContext) -> None:
        self.ctx = ctx
        self._placer: Placer | None = None
        self.rebuilds = 0  # snapshots built

    def invalidate(self) -> None:
        """Something placement reads changed: the next `placer()` builds a fresh one."""
        self._placer = None

    def placer(self) -> Placer:
        if self._placer is None:
            self._placer = self._build()
            self.rebuilds += 1
        return self._placer

    def resolver(self) -> ExtendedResourceResolver:
        return self.placer().resolver

    def _build(self) -> Placer:
        ctx, inf, assume = self.ctx, self.ctx.informers, self.ctx.assume
        classes = parse_all(DeviceClass, inf.classes.items())
        slices = parse_all(ResourceSlice, inf.slices.items())
        nodes = parse_all(Node, inf.nodes.items())
        allocated: list[ResourceClaim] = []
        for obj in assume.claims(inf.claims.items()).values():
            if is_allocated(obj):
                parsed = parse(ResourceClaim, obj)
                if parsed is not None:
                    allocated.append(parsed)
        running: list[Pod] = []
        for obj in inf.pods.items():
            node = assume.node_of(obj)
            if not node:
                continue
            pod = parse(Pod, obj)
            if pod is not None:
                pod.spec.node_name = node
                running.append(pod)
        allocated.extend(assume.unseen_inflight_claims({c.metadata.uid for c in allocated if c.metadata.uid}))
        cluster = Cluster(ctx.gates, classes, slices, allocated)
        resolver = ExtendedResourceResolver(classes, ctx.gates)
        return Placer(cluster, ctx.gates, resolver, nodes, slices, running, ctx.options.strategy)
