"""The scheduler's snapshot: the `Placer` (allocator core, nodes, running pods) built from the informers,
with the assume cache overlaid (allocations we wrote or are writing count, claims we deleted do not), then
kept up to date by the informers' events.

Upstream: the scheduler cache's `UpdateSnapshot` and the DRA plugin's view of allocated claims (the assume
cache's objects). A claim's allocation is released and counted again in the allocator core
(`Placer.count_allocation`), a ResourceSlice goes to `Cluster.upsert_slice` / `delete_slice`, a pod that
leaves, joins or is relabeled on a node to `Placer.pod_removed` / `pod_added`: each costs the nodes it
touches, not the cluster. Slices are read with the DeviceTaintRules' taints applied, as kube-scheduler's
ResourceSlice tracker serves them (allocator/structured/devicetaints.py). A Node, DeviceClass or
DeviceTaintRule change (rare without heartbeats: placement reads only a node's labels, spec and
allocatable), a failed bind and crash recovery build the snapshot afresh. The caller holds the controller's
lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allocator.scheduling.placement import Placer
from allocator.structured.cluster import Cluster, NodeScope
from allocator.structured.devicetaints import ordered, patch_slice
from allocator.structured.ids import DeviceID
from binder.assume import InFlight
from binder.context import BinderContext
from binder.hints import Key, is_allocated, node_name
from binder.models import parse, parse_all
from kubeio.informer import key_of
from kubeio.kube import Obj
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import (
    AllocationResult,
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)
from resourceapi.extended import ExtendedResourceResolver


class Snapshot:
    def __init__(self, ctx: BinderContext) -> None:
        self.ctx = ctx
        self._placer: Placer | None = None
        self._cluster: Cluster | None = None
        self._slices: dict[str, ResourceSlice] = {}  # as patched by the rules
        self._rules: list[DeviceTaintRule] = []  # the DeviceTaintRules of the built snapshot, by name
        # claim key -> (uid, allocation JSON, the result counted in the core)
        self._counted: dict[Key, tuple[str, Any, AllocationResult]] = {}
        self.rebuilds = 0  # snapshots built
        self.updates = 0  # changes applied to the built snapshot

    def invalidate(self) -> None:
        """The next `placer()` builds a fresh snapshot."""
        self._placer = None
        self._cluster = None

    def placer(self) -> Placer:
        if self._placer is None:
            self._placer = self._build()
            self.rebuilds += 1
        return self._placer

    def cluster(self) -> Cluster:
        """The allocator core of the current snapshot (built if needed), for diagnosis."""
        self.placer()
        assert self._cluster is not None
        return self._cluster

    def version(self) -> tuple[int, int, int]:
        """Changes since the start: equal versions mean an equal snapshot (diagnoses are cached by it)."""
        return (self.rebuilds, self.updates, self._cluster.generation if self._cluster is not None else -1)

    def resolver(self) -> ExtendedResourceResolver:
        return self.placer().resolver

    # --- what the slice queueing hint reads (binder/hints.py SliceView) -------------------------------------

    def device_full(self, driver: str, pool: str, device: str) -> bool:
        """Nothing more fits on the device: a dedicated one is allocated; a shareable one (consumable
        capacity) has a capacity used up that every request consumes a positive amount of (the binder's
        requests are positive, KEP-6406; only a zero `requestPolicy.default` admits a zero amount)."""
        cluster = self.cluster()
        dev_id = DeviceID(driver, pool, device)
        record = cluster.device_record(dev_id)
        if record is None:
            return False
        if not (cluster.features.consumable_capacity and record.allow_multi):
            return dev_id in cluster.state.dedicated
        committed = cluster.state.aggregated.get(dev_id) or {}
        for name, entry in record.capacity.items():
            default = entry.policy.default if entry.policy is not None else None
            zero_default = default is not None and default.value == 0
            if entry.value > 0 and committed.get(name, 0) >= entry.value and not zero_default:
                return True
        return False

    def pool_slices(self, driver: str, pool: str) -> int:
        """How many slices of the pool the snapshot holds, any generation."""
        self.placer()
        return sum(1 for s in self._slices.values() if s.spec.driver == driver and s.spec.pool.name == pool)

    def counted_uids(self) -> frozenset[str]:
        """The uids of the claims the placer counts as allocated (a nominated pod waits for their release)."""
        self.placer()
        return frozenset(uid for uid, _, _ in self._counted.values() if uid)

    # --- changes --------------------------------------------------------------------------------------------

    def claim_changed(self, key: Key) -> None:
        """Count the claim `key` as the binder now sees it (see `AssumeCache.claim`)."""
        placer = self._placer
        if placer is None:
            return
        obj = self.ctx.assume.claim(key, self.ctx.informers.claims.get(key))
        have = self._counted.get(key)
        uid = str(obj["metadata"].get("uid") or "") if obj is not None else ""
        allocation = obj["status"]["allocation"] if obj is not None and is_allocated(obj) else None
        if have is not None and allocation is not None and (have[0], have[1]) == (uid, allocation):
            return
        self.updates += 1
        if have is not None:
            placer.release_allocation(have[2])
            del self._counted[key]
        if obj is not None and allocation is not None:
            parsed = parse(ResourceClaim, obj)
            if parsed is None or parsed.status is None or parsed.status.allocation is None:
                return
            placer.count_allocation(parsed, parsed.status.allocation)
            self._counted[key] = (uid, allocation, parsed.status.allocation)

    def flight_done(self, flight: InFlight) -> None:
        """A bind ended well: its claim, counted since Reserve, is from now on counted as the claim it is."""
        claim = flight.claim
        if self._placer is None or claim is None or not flight.claim_uid:
            return
        if claim.status is None or claim.status.allocation is None:
            return
        key = (claim.metadata.namespace or "default", claim.metadata.name)
        obj = self.ctx.assume.claim(key, self.ctx.informers.claims.get(key))
        same = obj is not None and obj["metadata"].get("uid") == flight.claim_uid and is_allocated(obj)
        allocation = obj["status"]["allocation"] if same and obj is not None else None
        self._counted[key] = (flight.claim_uid, allocation, claim.status.allocation)
        if allocation is None:
            self.claim_changed(key)

    def pod_changed(self, why: str, old: Obj | None, new: Obj | None) -> None:
        """A pod left, joined or was relabeled on a node (the hint `why` says which)."""
        placer = self._placer
        if placer is None:
            return
        self.updates += 1
        if why in ("pod-gone", "pod-labels"):
            gone = old if old is not None else new
            node = node_name(old) or node_name(new)
            pod = parse(Pod, gone) if gone is not None else None
            if node is None or pod is None:
                self.invalidate()  # ours, gone before its Binding's echo: its node is the assume cache's
                return
            placer.pod_removed(pod, node)
        if why in ("pod-bound-elsewhere", "pod-labels") and new is not None:
            node = node_name(new)
            pod = parse(Pod, new)
            if node is None or pod is None:
                self.invalidate()
                return
            placer.pod_added(pod, node)

    def slice_changed(self, old: Obj | None, new: Obj | None) -> None:
        placer, cluster = self._placer, self._cluster
        if placer is None or cluster is None:
            return
        self.updates += 1
        in_step = placer.in_step()
        scopes: list[NodeScope] = []
        if new is None:
            assert old is not None
            name = str(old["metadata"]["name"])
            scopes.append(cluster.delete_slice(name))
            self._slices.pop(name, None)
        else:
            model = parse(ResourceSlice, new)
            if model is None:
                self.invalidate()
                return
            model = patch_slice(model, self._rules)
            if old is not None and old["metadata"]["name"] != model.metadata.name:
                scopes.append(cluster.delete_slice(str(old["metadata"]["name"])))
            scopes.append(cluster.upsert_slice(model))
            self._slices[model.metadata.name] = model
        if in_step and all(scope is not None for scope in scopes):
            # a node-local pool's slice (a driver republishing a node's devices): that node alone
            placer.node_slices_changed(self._slices.values(), sorted({n for sc in scopes for n in sc or ()}))
        else:
            placer.slices_changed(self._slices.values())

    # --- a fresh snapshot -----------------------------------------------------------------------------------

    def _build(self) -> Placer:
        built = self.fresh()
        self._cluster, self._slices, self._counted = built.cluster, built.slices, built.counted
        self._rules = built.rules
        return built.placer

    def fresh(self) -> Built:
        """A snapshot built from the informers and the assume cache alone (what the incremental one must
        equal; the tests compare them)."""
        ctx, inf, assume = self.ctx, self.ctx.informers, self.ctx.assume
        classes = parse_all(DeviceClass, inf.classes.items())
        rules = ordered(parse_all(DeviceTaintRule, inf.taint_rules.items())) if inf.taint_rules else []
        slices = [patch_slice(s, rules) for s in parse_all(ResourceSlice, inf.slices.items())]
        nodes = parse_all(Node, inf.nodes.items())
        allocated: list[ResourceClaim] = []
        counted: dict[Key, tuple[str, Any, AllocationResult]] = {}
        for obj in assume.claims(inf.claims.items()).values():
            if is_allocated(obj):
                parsed = parse(ResourceClaim, obj)
                if parsed is not None and parsed.status is not None and parsed.status.allocation is not None:
                    allocated.append(parsed)
                    uid = str(obj["metadata"].get("uid") or "")
                    counted[key_of(obj)] = (uid, obj["status"]["allocation"], parsed.status.allocation)
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
        # devices with binding conditions are allocatable where the gates say so: PreBind waits for them
        cluster = Cluster(ctx.gates, classes, slices, allocated)
        resolver = ExtendedResourceResolver(classes, ctx.gates)
        placer = Placer(cluster, ctx.gates, resolver, nodes, slices, running, ctx.options.strategy)
        return Built(placer, cluster, {s.metadata.name: s for s in slices}, counted, rules)


@dataclass(frozen=True)
class Built:
    placer: Placer
    cluster: Cluster
    slices: dict[str, ResourceSlice]
    counted: dict[Key, tuple[str, Any, AllocationResult]]
    rules: list[DeviceTaintRule]
