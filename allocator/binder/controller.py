"""The binding controller: informers in, placement by the allocator core, the bind sequence out.

One scheduling thread places pods one at a time with a `Placer` built from the informers' snapshot (every
allocated claim is committed, and so is every allocation this binder has in flight); a pool of bind threads
makes each placement real (upstream's binding cycle runs beside the next scheduling cycle the same way):

1. create the claim (`<pod>-extended-resources-`, owned by the pod, finalizer included),
2. write `status.allocation` + `reservedFor` (get-and-retry on 409),
3. patch the pod's `status.extendedResourceClaimStatus`,
4. create `pods/binding`.

A failure after the claim exists deletes it (finalizer first) and the pod is retried from a fresh snapshot. A
leftover claim controlled by the pod is deleted before placing, except one already allocated and reserved for
the pod on a node that still fits (this binder's own crash recovery), which is completed with steps 3-4.
Objects the binder wrote are assumed (upstream's assume cache) until the informers catch up, so a pod is never
placed twice and a claim never counted twice or not at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import ValidationError

from allocator.binder import claims as bodies
from allocator.binder.events import EventSink
from allocator.binder.metrics import BinderMetrics
from allocator.binder.names import (
    CLAIM_ANNOTATION,
    DEFAULT_SCHEDULER_NAME,
    EVENT_NORMAL,
    EVENT_WARNING,
    REASON_FAILED_SCHEDULING,
    REASON_NOT_ROUTED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
)
from allocator.binder.queue import SchedulingQueue
from allocator.binder.usage_metrics import UsageMetrics
from allocator.binder.writes import BindError, Writer
from allocator.cluster import Cluster
from allocator.placement import Placement, PlacementResult, Placer, Strategy
from allocator.predicates import static_reasons
from allocator.synthesis import dra_resources_on_node, scalar_requests, synthesize_for_resources
from kubeio.informer import ADDED, Informer, Key, key_of, resource_version
from kubeio.kube import (
    DEVICE_CLASSES,
    NAMESPACES,
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    ApiError,
    Kube,
    Obj,
)
from resourceapi import routing
from resourceapi.core_v1 import Node, Pod
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.resource_v1 import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice

log = logging.getLogger("dra_capacity.binder")
_TERMINAL = ("Succeeded", "Failed")
STEPS = ("placed", "claim-created", "claim-allocated", "pod-status-patched", "bound")
"""The points of the sequence after which a crash hook may fire (the chaos test kills there)."""


class Stopped(BaseException):
    """This replica may not write any more (lease lost, stopping, or killed by a test): abandon the work as
    a killed process would, without cleanup; the next leader's leftover handling finishes it."""


def log_decision(**fields: Any) -> None:
    """One JSON line per decision (the command installs the JSON formatter on this logger)."""
    log.info("decision", extra={"fields": fields})


def _order(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("namespace") or ""), str(meta.get("name")))


def _pod_uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


@dataclass
class _InFlight:
    """A placement committed in memory whose writes are under way."""

    pod: Obj
    node: str
    claim: ResourceClaim | None  # with status.allocation; its name once created
    claim_uid: str | None = None


@dataclass
class BinderOptions:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    strategy: Strategy = "binpack"
    bind_workers: int = 16  # binding cycles in flight at once (kube-scheduler runs each in its own goroutine)
    audit_routing: bool = True
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    watch_timeout: float = 300.0
    hook: Callable[[str, Obj], None] | None = None  # test hook after each step (see STEPS)
    instance: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Binder:
    def __init__(
        self,
        kube: Kube,
        gates: FeatureGates,
        *,
        options: BinderOptions | None = None,
        metrics: BinderMetrics | None = None,
        is_leader: Callable[[], bool] = lambda: True,
    ) -> None:
        self.kube = kube
        self.gates = gates
        self.options = options or BinderOptions()
        self.metrics = metrics or BinderMetrics()
        self.is_leader = is_leader
        self.scheduler_name = self.options.scheduler_name
        o = self.options
        self.pods = Informer(kube, PODS, watch_timeout=o.watch_timeout)
        self.nodes = Informer(kube, NODES, watch_timeout=o.watch_timeout)
        self.classes = Informer(kube, DEVICE_CLASSES, watch_timeout=o.watch_timeout)
        self.slices = Informer(kube, RESOURCE_SLICES, watch_timeout=o.watch_timeout)
        self.claims = Informer(kube, RESOURCE_CLAIMS, watch_timeout=o.watch_timeout)
        self.namespaces = Informer(kube, NAMESPACES, watch_timeout=o.watch_timeout)
        self.informers = [self.nodes, self.classes, self.slices, self.claims, self.namespaces, self.pods]
        # capacity metrics (allocator/binder/usage_metrics.py), fed by the informers: the hook to re-wire
        self.usage = UsageMetrics.attach_to(self, gates, o.extra)
        self.queue = SchedulingQueue(o.initial_backoff, o.max_backoff)
        self.cond = threading.Condition(threading.RLock())
        self.events = EventSink(kube, o.instance or "dra-capacity-binder")
        self.writer = Writer(kube, self.metrics, self._guard)
        self._pool = ThreadPoolExecutor(max(o.bind_workers, 1), thread_name_prefix="binder-bind")
        self._stop = threading.Event()
        self._dead = False
        self._thread: threading.Thread | None = None
        self._placer: Placer | None = None
        self._resolver: ExtendedResourceResolver | None = None
        self._routed: frozenset[str] | None = None
        # assumed state (the scheduler's assume cache): what we wrote, until the informers show it
        self._inflight: dict[Key, _InFlight] = {}
        self._bound: dict[Key, tuple[str, str]] = {}  # pod key -> (uid, node)
        self._assumed_claims: dict[Key, Obj] = {}
        self._deleted_claims: dict[str, Key] = {}  # uid -> key
        self._owned: dict[str, set[Key]] = {}  # pod uid -> its extended-resource claims (informer)
        self._audited: set[str] = set()
        self._uncertain: set[str] = set()  # pods whose claim create got no clear answer
        self._relisting = False
        self._audit_all = True  # look at every pod for the routing audit (at start, on a routing change)
        self._audit: list[Obj] = []
        self.attempted: set[Key] = set()
        self.errors = 0
        self.rebuilds = 0  # snapshots built (each relevant cluster change costs one)
        self.changes: Counter[str] = Counter()  # relevant cluster changes seen, by kind
        self._wire()

    # --- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        self.events.start()
        for inf in self.informers:
            inf.start()
        self._thread = threading.Thread(target=self._run, name="binder-scheduler", daemon=True)
        self._thread.start()

    def synced(self) -> bool:
        return all(inf.synced.is_set() for inf in self.informers)

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(inf.synced.wait(max(deadline - time.monotonic(), 0)) for inf in self.informers)

    def stop(self) -> None:
        """Stop placing, let running binds finish, stop the informers."""
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        if self._thread is not None:
            self._thread.join(10)
        self._pool.shutdown(wait=True)
        for inf in self.informers:
            inf.stop()
        self.events.stop()

    def kill(self) -> None:
        """Die as a killed process would: every further write refuses, nothing is cleaned up."""
        self._dead = True
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        for inf in self.informers:
            inf.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def relist(self) -> None:
        """Fresh pods and claims, as a new leader needs: nothing the previous leader wrote is missed. Nothing
        is placed until both are merged."""
        with self.cond:
            self._relisting = True
        try:
            for inf in (self.pods, self.claims):
                try:
                    inf.resync()
                except ApiError as exc:
                    log.warning("relist of %s failed (the watch view is used): %s", inf.resource.plural, exc)
        finally:
            with self.cond:
                self._relisting = False
                self.cond.notify_all()

    def _guard(self) -> None:
        if self._dead or not self.is_leader():
            raise Stopped()

    def _hook(self, step: str, pod: Obj) -> None:
        if self.options.hook is not None:
            self.options.hook(step, pod)

    # --- informer handlers (informer threads) ---------------------------------------------------------------

    def _wire(self) -> None:
        self.pods.handlers.append(self._on_pod)
        self.nodes.handlers.append(self._on_node)
        self.classes.handlers.append(self._on_class)
        self.slices.handlers.append(self._on_slice)
        self.claims.handlers.append(self._on_claim)
        self.namespaces.handlers.append(lambda kind, old, new: self._invalidate_routing())

    def _changed(self, why: str) -> None:
        """Something that may change placement happened: rebuild the snapshot, retry unschedulable pods."""
        with self.cond:
            self.changes[why] += 1
            self._placer = None
            self.queue.cluster_changed()
            self.cond.notify_all()

    def _invalidate_routing(self) -> None:
        with self.cond:
            self._routed = None
            self._audit_all = True

    def _pending_ours(self, pod: Mapping[str, Any]) -> bool:
        spec = pod.get("spec") or {}
        return (
            spec.get("schedulerName") == self.scheduler_name
            and not spec.get("nodeName")
            and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") not in _TERMINAL
        )

    def _on_pod(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        key = key_of(obj)
        with self.cond:
            if new is not None and self._pending_ours(new):
                # A status write (ours: the condition, the claim link) is no reason to try again; a new pod,
                # or a changed spec, is (upstream's isPodUpdated ignores status too).
                if old is None or not self._pending_ours(old) or old.get("spec") != new.get("spec"):
                    self.queue.add(key, _order(new))
                    self.cond.notify_all()
            else:
                self.queue.remove(key)
            was_on_node = old is not None and bool((old.get("spec") or {}).get("nodeName"))
            on_node = new is not None and bool((new.get("spec") or {}).get("nodeName"))
            bound = self._bound.get(key)
            if new is None:
                self.attempted.discard(key)
            if new is None or (on_node and (new.get("status") or {}).get("phase") in _TERMINAL):
                self._bound.pop(key, None)
                if was_on_node or on_node or key in self._inflight:
                    self._changed("pod-gone")  # a pod that held node resources is gone: capacity frees up
            elif on_node and not was_on_node:
                node = (new.get("spec") or {}).get("nodeName")
                flight = self._inflight.get(key)
                if bound is not None and bound == (_pod_uid(new), node):
                    self._bound.pop(key, None)  # our own Binding, echoed
                elif flight is not None and (_pod_uid(flight.pod), flight.node) == (_pod_uid(new), node):
                    pass  # our own Binding, echoed before its answer reached us
                else:
                    self._changed("pod-bound-elsewhere")  # bound by someone else
            elif on_node and was_on_node and _labels(old) != _labels(new):
                # InterPodAffinity and PodTopologySpread match the labels of assigned pods: the queueing hint
                # of both plugins requeues on an assigned pod's label update
                self._changed("pod-labels")
            if (
                new is not None
                and kind == ADDED
                and self.options.audit_routing
                and not on_node
                and (new.get("spec") or {}).get("schedulerName") in (None, "", routing.DEFAULT_SCHEDULER)
            ):
                self._audit.append(new)
                self.cond.notify_all()

    def _on_node(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if kind == "MODIFIED" and old is not None and new is not None and _node_view(old) == _node_view(new):
            return  # a heartbeat or a status condition: nothing placement reads
        self._changed("node")

    def _on_class(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        with self.cond:
            self._resolver = None
            self._routed = None
            self._audit_all = True
        self._changed("device-class")

    def _on_slice(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        if old is not None and new is not None and old.get("spec") == new.get("spec"):
            return
        self._changed("resource-slice")

    def _on_claim(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        key = key_of(obj)
        uid = str(obj["metadata"].get("uid") or "")
        owner = _controller_pod_uid(obj)
        with self.cond:
            if owner is not None:
                owned = self._owned.setdefault(owner, set())
                assumed = self._assumed_claims.get(key)
                if new is None and (assumed is None or assumed["metadata"].get("uid") == uid):
                    owned.discard(key)  # (a newer claim of that name we wrote stays the pod's)
                    if not owned:
                        self._owned.pop(owner, None)
                elif new is not None:
                    owned.add(key)
            if new is None:
                self._deleted_claims.pop(uid, None)
                assumed = self._assumed_claims.get(key)
                if assumed is not None and assumed["metadata"].get("uid") == uid:
                    self._assumed_claims.pop(key, None)
                if (obj.get("status") or {}).get("allocation"):
                    self._changed("claim-deleted")
                return
            assumed = self._assumed_claims.get(key)
            if assumed is not None and resource_version(new) >= resource_version(assumed):
                self._assumed_claims.pop(key, None)
                if _claim_view(new) == _claim_view(assumed):
                    return  # the echo of our own write
            if owner is not None and any(_pod_uid(f.pod) == owner for f in self._inflight.values()):
                return  # a claim of a bind under way: its allocation is already counted
            if _claim_view(old) != _claim_view(new) and (
                assumed is None or _claim_view(new) != _claim_view(assumed)
            ):
                self._changed("claim-changed")

    # --- snapshot -------------------------------------------------------------------------------------------

    def _claim_objects(self) -> dict[Key, Obj]:
        """Informer claims, overlaid with the newer objects our writes returned, minus the ones we deleted."""
        out = {key_of(c): c for c in self.claims.items()}
        for key, obj in self._assumed_claims.items():
            if resource_version(obj) > resource_version(out.get(key)):
                out[key] = obj
        if self._deleted_claims:
            gone = set(self._deleted_claims)
            out = {k: c for k, c in out.items() if c["metadata"].get("uid") not in gone}
        return out

    def _build_placer(self) -> Placer:
        classes = _parse_all(DeviceClass, self.classes.items())
        slices = _parse_all(ResourceSlice, self.slices.items())
        nodes = _parse_all(Node, self.nodes.items())
        allocated: list[ResourceClaim] = []
        for obj in self._claim_objects().values():
            if (obj.get("status") or {}).get("allocation"):
                parsed = _parse(ResourceClaim, obj)
                if parsed is not None:
                    allocated.append(parsed)
        running: list[Pod] = []
        for obj in self.pods.items():
            key = key_of(obj)
            spec = obj.get("spec") or {}
            node = spec.get("nodeName")
            if not node:
                bound = self._bound.get(key)
                inflight = self._inflight.get(key)
                if bound is not None and bound[0] == _pod_uid(obj):
                    node = bound[1]
                elif inflight is not None and _pod_uid(inflight.pod) == _pod_uid(obj):
                    node = inflight.node
            if not node:
                continue
            pod = _parse(Pod, obj)
            if pod is not None:
                pod.spec.node_name = node
                running.append(pod)
        for flight in self._inflight.values():
            if flight.claim is not None and not any(
                c.metadata.uid and c.metadata.uid == flight.claim_uid for c in allocated
            ):
                allocated.append(flight.claim)
        cluster = Cluster(self.gates, classes, slices, allocated)
        resolver = ExtendedResourceResolver(classes, self.gates)
        self._resolver = resolver
        return Placer(cluster, self.gates, resolver, nodes, slices, running, self.options.strategy)

    def placer(self) -> Placer:
        with self.cond:
            if self._placer is None:
                self._placer = self._build_placer()
                self.rebuilds += 1
            return self._placer

    # --- the scheduling loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                key = self._next()
                if key is None:
                    continue
                try:
                    self._schedule(key)
                except Stopped:
                    return
                except Exception:
                    log.exception("scheduling %s/%s failed", *key)
                    with self.cond:
                        self.errors += 1
                        self.queue.done_error(key, time.monotonic())
        except Stopped:
            return

    def _next(self) -> Key | None:
        with self.cond:
            while not self._stop.is_set():
                if self.synced() and self.is_leader() and not self._dead and not self._relisting:
                    if self._audit_all:
                        self._audit_all, self._audit = False, []
                        self._run_audit(self.pods.items())
                    elif self._audit:
                        batch, self._audit = self._audit, []
                        self._run_audit(batch)
                    key = self.queue.pop(time.monotonic())
                    if key is not None:
                        return key
                    wait = self.queue.next_ready_in(time.monotonic())
                else:
                    if not self.is_leader():
                        # A standby reports nothing; once leader it looks at every pod.
                        self._audit.clear()
                        self._audit_all = True
                    wait = 0.1
                self._publish_queue()
                self.cond.wait(wait if wait is not None else 1.0)
        return None

    def _publish_queue(self) -> None:
        for state, n in self.queue.counts().items():
            self.metrics.pending.labels(state).set(n)

    def _schedule(self, key: Key) -> None:
        with self.cond:
            obj = self.pods.get(key)
            bound = self._bound.get(key)
            if (
                obj is None
                or not self._pending_ours(obj)
                or (bound is not None and bound[0] == _pod_uid(obj))
            ):
                self.queue.remove(key)
                return
            if key in self._inflight:
                self.queue.done_retry_now(key)  # a bind is still under way; try again when it ends
                return
            self.attempted.add(key)
            uid = _pod_uid(obj)
            pod = _parse(Pod, obj)
            if pod is None:
                self._unschedulable(key, obj, "pod could not be read", REASON_SCHEDULER_ERROR)
                return
            unsupported = routing.unsupported_features(obj)
            if unsupported:
                self._unschedulable(
                    key,
                    obj,
                    f"dra-capacity binder does not support pods with {', '.join(unsupported)}",
                    REASON_SCHEDULER_ERROR,
                )
                return
            uncertain = uid in self._uncertain
        if uncertain:
            self._read_claims(key[0])  # a claim may exist that the informer has not shown yet
            with self.cond:
                self._uncertain.discard(uid)
        with self.cond:
            leftovers = self._leftovers(obj, uid)
        if leftovers.action is bodies.LeftoverAction.RESUME:
            assert leftovers.keep is not None
            for stale in leftovers.delete:
                self._delete_claim(stale, "leftover")
            self._resume(key, obj, pod, leftovers.keep)
            return
        if leftovers.action is bodies.LeftoverAction.DELETE:
            for stale in leftovers.delete:
                self._delete_claim(stale, "leftover")
        with self.cond:
            placer = self.placer()
            placement = placer.place(pod, [])
            self.metrics.attempts.labels(placement.result).inc()
            if placement.result is PlacementResult.GATED:
                self._gated(key, obj, placement.reason)
                return
            if placement.result is not PlacementResult.BOUND or placement.node is None:
                reason = (
                    REASON_UNSCHEDULABLE
                    if placement.result is PlacementResult.UNSCHEDULABLE
                    else REASON_SCHEDULER_ERROR
                )
                self._unschedulable(key, obj, placement.reason, reason)
                return
            # The create body is taken before the commit names the claim and sets its status; the committed
            # claim itself (the placer keeps no reference to it) is the in-flight allocation.
            body = None
            if placement.claim is not None and placement.allocation:
                body = bodies.claim_create_body(placement.claim)
            placer.commit(placement, "pending-" + uid[:40])  # in flight: counted before it is written
            flight = _InFlight(obj, placement.node, placement.claim if body is not None else None)
            self._inflight[key] = flight
            result = placement.allocation[-1] if placement.claim is not None else None
        self._hook("placed", obj)
        self._pool.submit(self._bind_task, key, obj, placement, body, result)

    def _read_claims(self, namespace: str) -> None:
        """A fresh list of the namespace's claims, assumed where newer than the informer's copies."""
        data = self.kube.list(RESOURCE_CLAIMS, namespace=namespace)
        for item in data.get("items") or []:
            if isinstance(item, dict) and _controller_pod_uid(item) is not None:
                self._assume_claim(item)

    def _claim_object(self, key: Key) -> Obj | None:
        """One claim as `_claim_objects` has it (the newer of the informer's and our write's; None once we
        deleted it), without building the whole map."""
        obj = self.claims.get(key)
        assumed = self._assumed_claims.get(key)
        if assumed is not None and resource_version(assumed) > resource_version(obj):
            obj = assumed
        if obj is not None and obj["metadata"].get("uid") in self._deleted_claims:
            return None
        return obj

    def _leftovers(self, obj: Obj, uid: str) -> bodies.Leftovers:
        # `_owned` holds the claims the informer shows controlled by the pod and the ones we wrote for it
        mine = [c for c in map(self._claim_object, self._owned.get(uid, ())) if c is not None]
        if not mine:
            return bodies.Leftovers(bodies.LeftoverAction.NONE)
        pod = _parse(Pod, obj)

        def fits(node_name: str) -> bool:
            node_obj = self.nodes.get(("", node_name))
            node = _parse(Node, node_obj) if node_obj is not None else None
            return node is not None and pod is not None and not static_reasons(pod, node)

        return bodies.classify_leftovers(mine, uid, fits)

    def _gated(self, key: Key, obj: Obj, message: str) -> None:
        """A pod with scheduling gates waits, as the SchedulingGates PreEnqueue plugin keeps it out of the
        active queue (pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go): no Event, no
        condition write (the API server set PodScheduled=False/SchedulingGated at creation,
        pkg/registry/core/pod/strategy.go applySchedulingGatedCondition), no retry until its spec changes."""
        self.queue.remove(key)
        log_decision(pod=f"{key[0]}/{key[1]}", uid=_pod_uid(obj), result="gated", message=message)

    def _unschedulable(self, key: Key, obj: Obj, message: str, reason: str) -> None:
        """FailedScheduling Event and PodScheduled=False; the pod waits for a relevant change."""
        self.metrics.pods_unschedulable.labels(_reason_label(message)).inc()
        self.queue.done_unschedulable(key, time.monotonic())
        log_decision(
            pod=f"{key[0]}/{key[1]}",
            uid=_pod_uid(obj),
            result="unschedulable",
            reason=reason,
            message=message,
        )
        self.events.emit(obj, EVENT_WARNING, REASON_FAILED_SCHEDULING, message)
        if not bodies.condition_is(obj, reason, message):
            try:
                self.writer.patch_pod_status(obj, bodies.unschedulable_condition_patch(message, reason))
            except ApiError as exc:
                log.debug("pod condition not written for %s/%s: %s", *key, exc)

    # --- the binding cycle (bind threads) -------------------------------------------------------------------

    def _bind_task(
        self,
        key: Key,
        pod_obj: Obj,
        placement: Placement,
        body: Obj | None,
        result: AllocationResult | None,
    ) -> None:
        started = time.monotonic()
        created: Obj | None = None
        linked = False  # the pod's status names the claim
        try:
            claim_name: str | None = None
            if body is not None and result is not None:
                try:
                    created = self.writer.create_claim(body)
                except ApiError as exc:
                    if exc.transient:
                        with self.cond:
                            self._uncertain.add(_pod_uid(pod_obj))
                    raise
                self._assume_claim(created)
                self._hook("claim-created", pod_obj)
                allocated = self.writer.allocate(
                    created, bodies.allocation_status(result, pod_obj), _pod_uid(pod_obj)
                )
                created = allocated
                self._assume_claim(allocated)
                with self.cond:
                    flight = self._inflight.get(key)
                    if flight is not None:
                        flight.claim_uid = allocated["metadata"].get("uid")
                        if flight.claim is not None:
                            flight.claim.metadata.uid = flight.claim_uid
                            flight.claim.metadata.name = allocated["metadata"]["name"]
                self._hook("claim-allocated", pod_obj)
                claim_name = allocated["metadata"]["name"]
                self.writer.patch_pod_status(pod_obj, bodies.extended_status_patch(placement, claim_name))
                linked = True
                self._hook("pod-status-patched", pod_obj)
            assert placement.node is not None
            self.writer.bind(pod_obj, placement.node)
            self._hook("bound", pod_obj)
        except Stopped:
            return
        except (ApiError, BindError, ValueError) as exc:
            self._bind_failed(key, pod_obj, created, str(exc), linked)
            return
        except Exception as exc:
            log.exception("bind of %s/%s failed", *key)
            self._bind_failed(key, pod_obj, created, f"{type(exc).__name__}: {exc}", linked)
            return
        self._bound_ok(key, pod_obj, placement.node, claim_name, started)

    def _assume_claim(self, obj: Obj) -> None:
        with self.cond:
            key = key_of(obj)
            # Recorded even when the informer's store already holds this version: its handler may not have
            # run yet, and must recognize the event as our own write.
            if resource_version(obj) > resource_version(self._assumed_claims.get(key)):
                self._assumed_claims[key] = obj
            owner = _controller_pod_uid(obj)
            if owner is not None:
                self._owned.setdefault(owner, set()).add(key)

    def _bound_ok(self, key: Key, pod_obj: Obj, node: str, claim_name: str | None, started: float) -> None:
        with self.cond:
            self._inflight.pop(key, None)
            # Until the informer's handler sees the Binding (the store may already show it: handlers run
            # after the store is updated), so the echo is not taken for someone else's bind.
            self._bound[key] = (_pod_uid(pod_obj), node)
            self.queue.done_bound(key)
        self.metrics.pods_bound.inc()
        created = _parse_time((pod_obj.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            self.metrics.bind_latency.observe(max((datetime.now(UTC) - created).total_seconds(), 0.0))
        ns, name = key
        log_decision(
            pod=f"{ns}/{name}",
            uid=_pod_uid(pod_obj),
            result="bound",
            node=node,
            claim=claim_name,
            bind_ms=round((time.monotonic() - started) * 1000, 1),
        )
        self.events.emit(
            pod_obj, EVENT_NORMAL, REASON_SCHEDULED, f"Successfully assigned {ns}/{name} to {node}"
        )

    def _bind_failed(
        self, key: Key, pod_obj: Obj, created: Obj | None, message: str, linked: bool = False
    ) -> None:
        """Unreserve: delete the claim (finalizer first), report, and retry from a fresh snapshot.

        Once the pod's status names the claim (`linked`: only the Binding failed) the claim is kept: the retry
        finds it allocated and reserved for the pod and completes the Binding (crash recovery), and the pod
        status never has to name a second claim."""
        if created is not None and not linked:
            try:
                self._delete_claim(created, "failed-bind")
            except Stopped:
                return
            except (ApiError, BindError) as exc:
                log.warning(
                    "claim %s/%s not deleted after a failed bind: %s",
                    key[0],
                    created["metadata"]["name"],
                    exc,
                )
        with self.cond:
            self._inflight.pop(key, None)
            self._placer = None
            self.errors += 1
            self.queue.done_error(key, time.monotonic())
            self.cond.notify_all()
        self.metrics.attempts.labels("error").inc()
        log_decision(pod=f"{key[0]}/{key[1]}", uid=_pod_uid(pod_obj), result="error", message=message)
        self.events.emit(pod_obj, EVENT_WARNING, REASON_FAILED_SCHEDULING, f"binding rejected: {message}")

    def _delete_claim(self, claim: Obj, why: str) -> None:
        self.writer.delete_claim(claim)
        self.metrics.claims_deleted.labels(why).inc()
        with self.cond:
            uid = str(claim["metadata"].get("uid") or "")
            if uid:
                self._deleted_claims[uid] = key_of(claim)
            self._assumed_claims.pop(key_of(claim), None)
            if (claim.get("status") or {}).get("allocation"):
                self._placer = None

    def _resume(self, key: Key, obj: Obj, pod: Pod | None, claim: Obj) -> None:
        """Crash recovery: the claim is allocated and reserved for the pod; finish steps 3-4 on its node."""
        node = bodies.allocated_node(claim)
        assert node is not None and pod is not None
        with self.cond:
            self._inflight[key] = _InFlight(obj, node, None, claim["metadata"].get("uid"))
            resolver = self.placer().resolver
            self._placer = None  # the next snapshot counts this pod on its node
        node_obj = self.nodes.get(("", node))
        node_model = _parse(Node, node_obj) if node_obj is not None else None
        allocatable = node_model.status.allocatable if node_model is not None and node_model.status else None
        needs, _ = dra_resources_on_node(scalar_requests(pod), allocatable, resolver)
        outcome = synthesize_for_resources(pod, sorted(needs), resolver, self.gates)
        started = time.monotonic()
        name = claim["metadata"]["name"]
        linked = bodies.pod_claim_status_name(obj) == name
        try:
            self.writer.ensure_finalizer(claim)
            if outcome.mappings and not linked:
                patch = {"status": {"extendedResourceClaimStatus": outcome.status(name).to_api()}}
                self.writer.patch_pod_status(obj, patch)
                linked = True
            self._hook("pod-status-patched", obj)
            self.writer.bind(obj, node)
            self._hook("bound", obj)
        except (ApiError, BindError) as exc:
            self._bind_failed(key, obj, claim, str(exc), linked)
            return
        self.metrics.recovered.inc()
        self._bound_ok(key, obj, node, name, started)

    # --- routing audit --------------------------------------------------------------------------------------

    def _run_audit(self, batch: list[Obj]) -> None:
        if not self.options.audit_routing:
            return
        """Pods that should have come to this binder but kept the default scheduler (admitted while
        /mutate-pods was down): a warning Event on each, and a counter."""
        if self._routed is None:
            self._routed = routing.routed_resource_names(self.classes.items())
        for pod in batch:
            uid = _pod_uid(pod)
            spec = pod.get("spec") or {}
            if (
                uid in self._audited
                or spec.get("nodeName")
                or spec.get("schedulerName") not in (None, "", routing.DEFAULT_SCHEDULER)
                or (pod.get("metadata") or {}).get("deletionTimestamp")
            ):
                continue
            ns = (pod.get("metadata") or {}).get("namespace") or "default"
            ns_obj = self.namespaces.get(("", ns))
            labels = ((ns_obj or {}).get("metadata") or {}).get("labels") or {}
            decision = routing.decide(pod, self._routed, labels, self.scheduler_name)
            if decision.verdict is not routing.Verdict.ROUTE:
                continue
            self._audited.add(uid)
            self.metrics.not_routed.inc()
            message = (
                f"pod requests {', '.join(decision.resources)} (backed by a DeviceClass with capacity "
                f"requests) but was admitted with the default scheduler, not {self.scheduler_name!r}: the "
                "/mutate-pods webhook did not route it (was it unavailable?). The default scheduler allocates"
                " "
                "whole devices without the capacity requests; recreate the pod to route it."
            )
            log_decision(
                pod=f"{ns}/{pod['metadata'].get('name')}", uid=uid, result="not-routed", message=message
            )
            self.events.emit(pod, EVENT_WARNING, REASON_NOT_ROUTED, message)

    # --- --once ---------------------------------------------------------------------------------------------

    def pending_keys(self) -> set[Key]:
        with self.cond:
            return {key_of(p) for p in self.pods.items() if self._pending_ours(p)}

    def settled(self, keys: set[Key]) -> bool:
        """Every pod of `keys` was tried at least once and nothing is in flight."""
        with self.cond:
            if self._inflight:
                return False
            for key in keys:
                state = self.queue.state(key)
                if state is None:
                    continue
                if key not in self.attempted or state in ("active", "in-flight"):
                    return False
            return True


def _labels(obj: Mapping[str, Any] | None) -> Any:
    return ((obj or {}).get("metadata") or {}).get("labels")


def _controller_pod_uid(claim: Mapping[str, Any]) -> str | None:
    meta = claim.get("metadata") or {}
    if (meta.get("annotations") or {}).get(CLAIM_ANNOTATION) != "true":
        return None
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") is True and ref.get("kind") == "Pod" and ref.get("uid"):
            return str(ref["uid"])
    return None


def _node_view(node: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return (meta.get("labels"), node.get("spec"), status.get("allocatable"))


def _claim_view(claim: Mapping[str, Any] | None) -> tuple[Any, ...]:
    if claim is None:
        return (None, None)
    status = claim.get("status") or {}
    return (status.get("allocation"), status.get("reservedFor"))


M = TypeVar("M", DeviceClass, ResourceSlice, Node, Pod, ResourceClaim)


def _parse(model: type[M], obj: Obj) -> M | None:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        meta = obj.get("metadata") or {}
        log.warning("%s %s/%s skipped: %s", model.__name__, meta.get("namespace"), meta.get("name"), exc)
        return None


def _parse_all(model: type[M], objs: list[Obj]) -> list[M]:
    out: list[M] = []
    for o in objs:
        parsed = _parse(model, o)
        if parsed is not None:
            out.append(parsed)
    return out


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _reason_label(message: str) -> str:
    """A bounded label for the unschedulable counter: the first per-node reason of the summary."""
    head, sep, rest = message.partition(": ")
    if sep and head.startswith("0/"):
        first = rest.split(", ")[0].rstrip(".")
        return first.split(" ", 1)[1] if " " in first else first
    return message[:60]
