"""Headroom: how many more pods of one shape fit now, counted by the allocator's own placement.

Not arithmetic over free capacity: the pods are placed, one after the other, by the `Placer` the binder uses
(node predicates, taints, resource fit, DRA allocation with its counters, constraints and requestPolicy
rounding), each seeing the ones before it, until one does not fit; then every allocation made for the count
is released again, so the engine's state is what the cluster holds.

Placing tens of thousands of pods per question would be slow, so the count is split and remembered:
* When nodes cannot affect each other for the shape (every slice belongs to one node; the shape has no
  topology spread or inter-pod (anti-)affinity and no running pod has required anti-affinity), a node's
  count depends on that node alone, and the total is the sum over nodes. The pods the binder would place
  land on some node, and on each node they meet exactly the state the per-node count met, so the sum is
  what placement binds.
* A node's count is kept per shape until something on that node changes (its Node, its pods, its slices,
  an allocation on its devices); a class or a slice for several nodes changes every node.
* Nodes in the same state for the shape (labels but the hostname, taints, allocatable, what their pods
  request, and device by device: whether the shape's class selects it, its capacities, counters, taints
  and committed use) share one count: a 5,000-node cluster of a few machine types costs a few counts.
Otherwise the pods are placed across all nodes, up to `cap`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from allocator.scheduling.nodeports import host_ports
from allocator.scheduling.placement import PlacementResult, Placer, Strategy
from allocator.scheduling.podindex import PodIndex, has_required_anti_affinity
from allocator.scheduling.predicates import fit_vector, pod_requests
from allocator.scheduling.synthesis import scalar_requests
from allocator.structured.cluster import Cluster, NodeInfo
from allocator.structured.ids import DeviceID
from allocator.structured.pools import DeviceRecord
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates

DEFAULT_CAP = 10_000
"""Counting on one node stops here (the answer is then "at least"): a bound on the work of one question
where nothing else bounds it (a node without `status.allocatable`, devices shared without a capacity)."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
_TERMINAL = ("Succeeded", "Failed")
_GLOBAL_CAP = 2_000  # placements across all nodes, when nodes are not independent


class ShapeError(ValueError):
    """A shape pod the count cannot place (the message says why)."""


@dataclass(frozen=True, slots=True)
class Headroom:
    """How many more pods of the shape fit; `capped`: counting stopped there, at least that many fit."""

    count: int
    capped: bool = False
    per_node: bool = True  # counted node by node (False: placed across all nodes)


@dataclass
class _ShapeCache:
    key: str
    epoch: int
    counts: dict[str, tuple[int, int]]  # node -> (node version, count)
    memo: dict[Any, int]  # node state signature -> count
    classes: tuple[str, ...]  # the classes the shape's extended resources resolve to
    by_name: bool  # the shape reads node names: nodes are never alike


def unit_pod(resource: str, units: int = 1, namespace: str = "default") -> Pod:
    """A pod asking for `units` of one extended resource and nothing else: the default shape."""
    quantity = str(units)
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "headroom", "namespace": namespace, "uid": "headroom"},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "headroom",
                        "resources": {"requests": {resource: quantity}, "limits": {resource: quantity}},
                    }
                ]
            },
        }
    )


_NO_CLAIM = ResourceClaim.model_validate(
    {"metadata": {"name": "committed", "namespace": "default"}, "spec": {"devices": {}}}
)


class HeadroomEngine:
    """The cluster as placement sees it, kept incrementally, and headroom per pod shape."""

    def __init__(
        self,
        gates: FeatureGates,
        strategy: Strategy = "binpack",
        *,
        cap: int = DEFAULT_CAP,
    ) -> None:
        self.gates = gates
        self.strategy: Strategy = strategy
        self.cap = cap
        self.cluster = Cluster(gates, (), ())
        self._classes: dict[str, DeviceClass] = {}
        self._resolver: ExtendedResourceResolver | None = None
        self._slices: dict[str, ResourceSlice] = {}
        self._slice_node: dict[str, str] = {}  # slice -> its node ("" : several nodes)
        self._pool_node: dict[tuple[str, str], str] = {}  # (driver, pool) -> node of its slices
        self._shared = 0  # slices for several nodes
        self._device_count = 0  # devices of all slices (bounds the per-device caches)
        self._nodes: dict[str, Node] = {}
        self._pods: dict[str, dict[tuple[str, str], Pod]] = {}  # node -> running pods by (namespace, name)
        self._pod_node: dict[tuple[str, str], str] = {}
        self._vectors: dict[tuple[str, str], dict[str, int]] = {}
        self._anti_affinity = 0
        self._namespaces: dict[str, dict[str, str]] = {}
        self._versions: dict[str, int] = {}
        self._epoch = 0  # bumped when every node may have changed
        self._shapes: dict[str, _ShapeCache] = {}
        self._statics: dict[int, tuple[DeviceRecord, int]] = {}  # per device record: its static part's token
        self._capacities: dict[int, tuple[object, int]] = {}  # per (shared) capacity map: its token
        self._node_statics: dict[tuple[str, bool], tuple[Node, int]] = {}
        self._tokens: dict[tuple[Any, ...], int] = {}

    # --- inputs --------------------------------------------------------------------------------------------

    def upsert_class(self, model: DeviceClass) -> None:
        self._classes[model.metadata.name] = model
        self.cluster.upsert_class(model)
        self._resolver = None
        self._epoch += 1

    def delete_class(self, name: str) -> None:
        if self._classes.pop(name, None) is not None:
            self.cluster.delete_class(name)
            self._resolver = None
            self._epoch += 1

    def upsert_slice(self, model: ResourceSlice) -> None:
        name = model.metadata.name
        old = self._slices.get(name)
        if old is not None and old.spec == model.spec:
            return
        self.delete_slice(name)
        self._slices[name] = model
        self._device_count += len(model.spec.devices or ())
        node = model.spec.node_name or ""
        self._slice_node[name] = node
        self._pool_node[(model.spec.driver, model.spec.pool.name)] = node
        if node:
            self._bump(node)
        else:
            self._shared += 1
            self._epoch += 1
        self.cluster.upsert_slice(model)
        self._prune_statics()

    def _prune_statics(self) -> None:
        """Drop the static parts of devices no slice holds any more (bounded: at most twice the devices)."""
        if len(self._statics) > 2 * self._device_count + 4096:
            self._statics.clear()
            self._capacities.clear()

    def delete_slice(self, name: str) -> None:
        model = self._slices.pop(name, None)
        if model is None:
            return
        self._device_count -= len(model.spec.devices or ())
        node = self._slice_node.pop(name, "")
        if node:
            self._bump(node)
        else:
            self._shared -= 1
            self._epoch += 1
        self.cluster.delete_slice(name)

    def upsert_node(self, model: Node) -> None:
        self._nodes[model.name] = model
        self._pods.setdefault(model.name, {})
        self._bump(model.name)

    def delete_node(self, name: str) -> None:
        if self._nodes.pop(name, None) is not None:
            self._node_statics.pop((name, False), None)
            self._node_statics.pop((name, True), None)
            self._bump(name)

    def set_namespaces(self, labels: dict[str, dict[str, str]]) -> None:
        self._namespaces = labels
        self._epoch += 1

    def upsert_pod(self, pod: Pod) -> None:
        """A pod and the node it holds (pods without a node, and finished ones, hold nothing)."""
        key = (pod.namespace, pod.name)
        self.delete_pod(key)
        node = pod.spec.node_name
        if not node or (pod.status is not None and pod.status.phase in _TERMINAL):
            return
        self._pods.setdefault(node, {})[key] = pod
        self._pod_node[key] = node
        self._vectors[key] = fit_vector(pod_requests(pod))
        if has_required_anti_affinity(pod):
            self._anti_affinity += 1
        self._bump(node)

    def delete_pod(self, key: tuple[str, str]) -> None:
        node = self._pod_node.pop(key, None)
        if node is None:
            return
        pod = self._pods.get(node, {}).pop(key, None)
        self._vectors.pop(key, None)
        if pod is not None and has_required_anti_affinity(pod):
            self._anti_affinity -= 1
        self._bump(node)

    def add_allocation(self, result: AllocationResult) -> None:
        self.cluster.commit(_NO_CLAIM, result)
        self._allocation_touched(result)

    def remove_allocation(self, result: AllocationResult) -> None:
        self.cluster.release(result)
        self._allocation_touched(result)

    def _allocation_touched(self, result: AllocationResult) -> None:
        for r in (result.devices.results or []) if result.devices else []:
            node = self._pool_node.get((r.driver, r.pool))
            if node:
                self._bump(node)
            else:
                self._epoch += 1

    def _bump(self, node: str) -> None:
        self._versions[node] = self._versions.get(node, 0) + 1

    # --- questions -----------------------------------------------------------------------------------------

    @property
    def resolver(self) -> ExtendedResourceResolver:
        if self._resolver is None:
            self._resolver = ExtendedResourceResolver(self._classes.values(), self.gates)
        return self._resolver

    def headroom(self, shape: Pod) -> Headroom:
        """How many more pods like `shape` fit now (raises ShapeError for a shape placement cannot count)."""
        if shape.spec.resource_claims:
            raise ShapeError(
                "a shape with spec.resourceClaims is not supported; ask for the device by its extended "
                "resource (resources.requests) instead"
            )
        if shape.spec.node_name:
            raise ShapeError("a shape must not set spec.nodeName: it asks where pods would fit")
        affinity = shape.spec.affinity
        independent = (
            self._shared == 0
            and self._anti_affinity == 0
            and not shape.spec.topology_spread_constraints
            and (affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None))
        )
        if not independent:
            return self._across_nodes(shape)
        cache = self._shape(shape)
        total = 0
        capped = False
        for name in self._nodes:
            version = self._versions.get(name, 0)
            known = cache.counts.get(name)
            if known is None or known[0] != version:
                signature = self._signature(name, cache)
                count = cache.memo.get(signature)
                if count is None:
                    if len(cache.memo) > 4 * len(self._nodes) + 1024:
                        cache.memo.clear()  # states long gone (a long-running binder): bounded memory
                    count = cache.memo[signature] = self._count_on(name, shape, self.cap)
                known = cache.counts[name] = (version, count)
            total += known[1]
            capped = capped or known[1] >= self.cap
        return Headroom(total, capped)

    def _shape(self, shape: Pod) -> _ShapeCache:
        spec = shape.spec
        key = json.dumps([shape.namespace, spec.to_api()], sort_keys=True, default=str)
        cache = self._shapes.get(key)
        if cache is None or cache.epoch != self._epoch:
            classes = []
            for resource in sorted(scalar_requests(shape)):
                resolved = self.resolver.resolve(resource)
                if resolved is not None:
                    classes.append(resolved.name)
            placement = json.dumps(
                [spec.node_selector, spec.affinity.to_api() if spec.affinity else None], default=str
            )
            by_name = HOSTNAME_LABEL in placement or "metadata.name" in placement
            cache = _ShapeCache(key, self._epoch, {}, {}, tuple(classes), by_name)
            self._shapes[key] = cache
            if len(self._shapes) > 64:
                self._shapes.pop(next(iter(self._shapes)))
        return cache

    def _signature(self, name: str, cache: _ShapeCache) -> tuple[Any, ...]:
        """What the shape's count on this node depends on; equal for nodes where it must be equal."""
        node = self._nodes[name]
        node_part = self._node_static(node, cache.by_name)
        requested: dict[str, int] = {}
        pods = self._pods.get(name, {})
        for key in pods:
            for r, v in self._vectors[key].items():
                requested[r] = requested.get(r, 0) + v
        ports = sorted(port for pod in pods.values() for port in host_ports(pod))
        state = self.cluster.state
        devices = []
        pools = self.cluster.node_pools(NodeInfo(name, node.labels))
        selects = self.cluster.selects
        statics = self._statics
        for d in pools.candidates:
            dev_id: DeviceID = d.id
            static = statics.get(id(d))
            if static is None or static[0] is not d:
                static = statics[id(d)] = (d, self._intern(self._device_static(d)))
            aggregated = state.aggregated.get(dev_id)
            devices.append(
                (
                    tuple(selects(c, d) for c in cache.classes),
                    static[1],
                    state.dedicated.get(dev_id, 0),
                    state.share_count.get(dev_id, 0),
                    tuple(sorted(aggregated.items())) if aggregated else (),
                )
            )
        pool_part = tuple(
            (
                p.usable,
                tuple(sorted((s, tuple(sorted(c.items()))) for s, c in p.counter_sets.items())),
                len(p.slices),
            )
            for p in pools.pools
        )
        return (
            node_part,
            tuple(sorted(requested.items())),
            len(pods),
            tuple(ports),
            tuple(devices),
            pool_part,
        )

    def _intern(self, value: tuple[Any, ...]) -> int:
        """A small number standing for a static part (equal parts, equal numbers): signatures hash ints,
        not Fractions and strings."""
        token = self._tokens.get(value)
        if token is None:
            token = self._tokens[value] = len(self._tokens)
        return token

    def _node_static(self, node: Node, by_name: bool) -> int:
        """What placement reads of the Node object (its labels but the hostname, unless the shape reads
        names), once per Node version."""
        key = (node.name, by_name)
        cached = self._node_statics.get(key)
        if cached is not None and cached[0] is node:
            return cached[1]
        labels = node.labels if by_name else {k: v for k, v in node.labels.items() if k != HOSTNAME_LABEL}
        status = node.status
        allocatable = sorted((k, str(v)) for k, v in ((status.allocatable if status else None) or {}).items())
        taints = [t.to_api() for t in node.spec.taints or []] if node.spec else []
        static = (
            node.name if by_name else "",
            json.dumps(labels, sort_keys=True),
            tuple(allocatable),
            json.dumps(taints, sort_keys=True),
            bool(node.spec.unschedulable) if node.spec else False,
        )
        token = self._intern(static)
        self._node_statics[key] = (node, token)
        return token

    def _device_static(self, d: DeviceRecord) -> tuple[Any, ...]:
        """What of a device (one slice version) placement reads, but its name and the attributes only the
        class selectors read (their results are part of the signature); capacity maps, shared by devices
        of one model, are described once."""
        capacity = self._capacities.get(id(d.capacity))
        if capacity is None or capacity[0] is not d.capacity:
            described = tuple((n, e.value, _policy(e.policy)) for n, e in d.capacity.items())
            capacity = self._capacities[id(d.capacity)] = (d.capacity, self._intern(described))
        return (
            d.id.driver,
            capacity[1],
            d.allow_multi,
            tuple((s, tuple(sorted(c.items()))) for s, c in d.consumes) if d.consumes else (),
            tuple(json.dumps(t.to_api(), sort_keys=True) for t in d.taints) if d.taints else (),
            tuple(d.binding_conditions or ()),
            d.binds_to_node,
        )

    def _count_on(self, name: str, shape: Pod, limit: int) -> int:
        """Place copies of `shape` on this node alone until one does not fit (or `limit`), then release."""
        node = self._nodes[name]
        slices = [s for s in self._slices.values() if s.spec.node_name == name]
        pods = list(self._pods.get(name, {}).values())
        index = PodIndex.build([node], pods, self._namespaces)
        placer = Placer(
            self.cluster, self.gates, self.resolver, [node], slices, pods, self.strategy, index=index
        )
        return self._fill(placer, shape, limit)

    def _across_nodes(self, shape: Pod) -> Headroom:
        """Nodes that affect each other for the shape: placed across all nodes, up to a lower cap."""
        limit = min(self.cap, _GLOBAL_CAP)
        nodes = list(self._nodes.values())
        pods = [p for by_key in self._pods.values() for p in by_key.values()]
        index = PodIndex.build(nodes, pods, self._namespaces)
        placer = Placer(
            self.cluster,
            self.gates,
            self.resolver,
            nodes,
            self._slices.values(),
            pods,
            self.strategy,
            index=index,
        )
        count = self._fill(placer, shape, limit)
        return Headroom(count, count >= limit, per_node=False)

    def _fill(self, placer: Placer, shape: Pod, limit: int) -> int:
        made: list[AllocationResult] = []
        count = 0
        try:
            while count < limit:
                pod = _instance(shape, count)
                placement = placer.place(pod)
                if placement.result is not PlacementResult.BOUND:
                    break
                placer.commit(placement, claim_name=f"{pod.name}-claim")
                made.extend(placement.allocation)
                count += 1
        finally:
            for result in made:
                self.cluster.release(result)
        return count


def _instance(shape: Pod, n: int) -> Pod:
    meta = shape.metadata.model_copy(update={"name": f"headroom-{n}", "uid": f"headroom-{n}"})
    return shape.model_copy(update={"metadata": meta})


def _policy(policy: Any) -> Any:
    if policy is None:
        return None
    return (
        policy.default and policy.default.value,
        tuple(v.value for v in policy.valid_values) if policy.valid_values is not None else None,
        policy.range_min and policy.range_min.value,
        policy.range_max and policy.range_max.value,
        policy.range_step and policy.range_step.value,
    )


def running(pods: Iterable[Pod]) -> list[Pod]:
    """Pods that hold node resources: on a node, not finished."""
    return [p for p in pods if p.spec.node_name and (p.status is None or p.status.phase not in _TERMINAL)]
