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

This module is the wiring: the informers' events go through the assume cache (`assume.py`) and the queueing
hints (`hints.py`) to the queue (`scheduling_queue.py`) and the snapshot (`snapshot.py`); the scheduling
thread runs `scheduling_cycle.py`, the bind threads `binding_cycle.py`, both through the DRA phases
(`phases.py`), carrying one attempt object (`attempt.py`); `audit.py` is the routing audit.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from allocator.structured.devicetaints import rules_apply
from binder import hints, prechecks
from binder.audit import RoutingAudit
from binder.binding_conditions import BindingConditions
from binder.binding_cycle import BindingCycle
from binder.context import STEPS, BinderContext, BinderOptions, Stopped, log_decision
from binder.fence import fence
from binder.metrics import BinderMetrics
from binder.phases import ClaimPhases
from binder.scheduling_cycle import SchedulingCycle
from binder.snapshot import Snapshot
from binder.usage_metrics import UsageMetrics
from binder.volume_binding import VolumeBinding
from kubeio.informer import ADDED, Informer, Key, key_of
from kubeio.kube import ApiError, Kube, Obj
from resourceapi.gates import FeatureGates

__all__ = ["STEPS", "Binder", "BinderOptions", "Stopped", "log_decision"]

log = logging.getLogger("dra_capacity.binder")


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
        self.options = options or BinderOptions()
        self.ctx = ctx = BinderContext(kube, gates, self.options, metrics or BinderMetrics(), is_leader)
        self.kube, self.gates, self.metrics, self.is_leader = kube, gates, ctx.metrics, is_leader
        self.scheduler_name = ctx.scheduler_name
        inf = ctx.informers
        self.pods, self.nodes, self.classes = inf.pods, inf.nodes, inf.classes
        self.slices, self.claims, self.namespaces = inf.slices, inf.claims, inf.namespaces
        self.pvcs, self.pvs, self.storage_classes = inf.pvcs, inf.pvs, inf.storage_classes
        self.csinodes, self.csidrivers, self.capacities = inf.csinodes, inf.csidrivers, inf.capacities
        self.informers = inf.all
        self.queue, self.cond, self.events, self.writer = ctx.queue, ctx.cond, ctx.events, ctx.writer
        self.snapshot = Snapshot(ctx)
        self.phases = ClaimPhases(ctx, self.snapshot)
        self._pool = ThreadPoolExecutor(max(self.options.bind_workers, 1), thread_name_prefix="binder-bind")
        self.volumes = VolumeBinding(ctx, self._pool.submit, self.options.bind_timeout_seconds)
        self.conditions = BindingConditions(ctx, self._pool.submit, self.options.binding_timeout_seconds)
        self.binding = BindingCycle(ctx, self.snapshot, self.phases, self.volumes, self.conditions)
        self.scheduling = SchedulingCycle(
            ctx, self.snapshot, self.phases, self.binding, self._pool, self.volumes
        )
        self.audit = RoutingAudit(ctx, self.snapshot)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._relisting = False
        self._running = False  # started and not stopped: an informer added by a release switch starts at once
        self._rules_listing: Informer | None = None  # a DeviceTaintRule informer a switch added, unlisted
        self._rules_warned = False
        self._plugins_seen: set[str] = set()
        self._pod_models = prechecks.PodModels()  # parsed pods for the queueing hints' node pre-checks
        self.fenced = 0  # claims fenced on taking the lease (fence.py)
        self.pods.handlers.append(self._on_pod)
        self.nodes.handlers.append(self._on_node)
        self.classes.handlers.append(self._on_class)
        self.slices.handlers.append(self._on_slice)
        if inf.taint_rules is not None:
            inf.taint_rules.handlers.append(self._on_taint_rule)
        self.claims.handlers.append(self._on_claim)
        self.namespaces.handlers.append(lambda kind, old, new: self._invalidate_routing())
        for storage in inf.storage:  # a PVC bound, a PV made, a class or CSINode changed: retry waiting pods
            storage.handlers.append(lambda kind, old, new: self._changed("storage", hints.STORAGE))
        # the capacity metrics (usage_metrics.py), fed by the same informers (None: --capacity-metrics=false)
        self.usage = UsageMetrics.attach_to(self, gates, self.options.extra)

    def switch(self, gates: FeatureGates) -> None:
        """Place by `gates` from the next pod on (the served release changed: kubeio/serverversion.py). Under
        the controller's lock, which a scheduling cycle holds from Filter to Reserve, so no pod is placed half
        by one release: the snapshot is built afresh on the new allocator semantics
        (allocator/structured/features.py) and every unschedulable pod is tried again. The DeviceTaintRule
        informer follows the release too (`_follow_taint_rules`)."""
        with self.cond:
            if gates == self.ctx.gates:
                return
            self._follow_taint_rules(gates)
            self.ctx.gates = self.gates = gates
            self.snapshot.invalidate()
            self.audit.invalidate()
            self._changed("kubernetes-release")

    def _follow_taint_rules(self, gates: FeatureGates) -> None:
        """Watch DeviceTaintRules from a release that applies them, stop on one that does not, without a
        restart (kube-scheduler's ResourceSlice tracker watches them only with the gates on). An added
        informer counts in `synced()`, so no pod is placed until it has listed every rule; the snapshot is
        then rebuilt (`_rules_listed`). A dropped one's rules leave the next snapshot, which `fresh` builds
        from `informers.taint_rules`."""
        on = rules_apply(gates)
        informer = self.ctx.informers.watch_taint_rules(on)
        if informer is None:
            return
        if on:
            informer.handlers.append(self._on_taint_rule)
            self._rules_listing, self._rules_warned = informer, False
            if self._running:
                informer.start()
            log.info(
                "Kubernetes %s applies DeviceTaintRules: watching them; pods wait until they are listed",
                gates.release,
            )
            return
        informer.stop()
        if self._rules_listing is informer:
            self._rules_listing = None
        log.info(
            "Kubernetes %s does not apply DeviceTaintRules: stopped watching them (%d rule(s) dropped)",
            gates.release,
            len(informer),
        )

    def _rules_listed(self) -> None:
        """Under the lock, before a pod is popped: once a DeviceTaintRule informer a switch added has listed,
        the snapshot is rebuilt with every rule (and that is logged); while it cannot list (a 403: the
        ClusterRole lacks list/watch on devicetaintrules), one warning says why pods wait."""
        informer = self._rules_listing
        if informer is None:
            return
        if informer.synced.is_set():
            self._rules_listing = None
            self.snapshot.invalidate()
            log.info("DeviceTaintRules listed: %d rule(s) applied from now on", len(informer))
        elif informer.last_error is not None and not self._rules_warned:
            self._rules_warned = True
            log.warning(
                "pods wait: DeviceTaintRules cannot be listed (%s); Kubernetes %s applies them, so nothing "
                "is placed without them (the binder's ClusterRole needs list and watch on devicetaintrules)",
                informer.last_error,
                self.ctx.gates.release,
            )

    # --- counters for the command and the benchmark ---------------------------------------------------------

    @property
    def errors(self) -> int:
        return self.ctx.errors

    @property
    def rebuilds(self) -> int:
        """Snapshots built (a node or DeviceClass change, a failed bind, crash recovery cost one)."""
        return self.snapshot.rebuilds

    @property
    def changes(self) -> Counter[str]:
        """Relevant cluster changes seen, by kind."""
        return self.ctx.changes

    @property
    def attempted(self) -> set[Key]:
        return self.scheduling.attempted

    # --- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        self.events.start()
        with self.cond:
            self._running = True
            informers = list(self.informers)
        for inf in informers:
            inf.start()
        self._thread = threading.Thread(target=self._run, name="binder-scheduler", daemon=True)
        self._thread.start()
        self.volumes.start()
        self.conditions.start()

    def synced(self) -> bool:
        return self.ctx.informers.synced()

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        return all(inf.synced.wait(max(deadline - time.monotonic(), 0)) for inf in list(self.informers))

    def stop(self) -> None:
        """Stop placing, let running binds finish, stop the informers."""
        self._stop.set()
        with self.cond:
            self._running = False
            informers = list(self.informers)
            self.cond.notify_all()
        if self._thread is not None:
            self._thread.join(10)
        self.volumes.stop()
        self.conditions.stop()
        self._pool.shutdown(wait=True)
        for inf in informers:
            inf.stop()
        self.events.stop()

    def kill(self) -> None:
        """Die as a killed process would: every further write refuses, nothing is cleaned up."""
        self.ctx.dead = True
        self._stop.set()
        with self.cond:
            self._running = False
            informers = list(self.informers)
            self.cond.notify_all()
        for inf in informers:
            inf.stop()
        self.volumes.stop()
        self.conditions.stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def relist(self) -> None:
        """Fresh pods and claims, as a new leader needs: nothing the previous leader wrote is missed; then the
        takeover fence (fence.py). Nothing is placed until both are done."""
        with self.cond:
            self._relisting = True
        try:
            for inf in (self.pods, self.claims):
                try:
                    inf.resync()
                except ApiError as exc:
                    log.warning("relist of %s failed (the watch view is used): %s", inf.resource.plural, exc)
            with contextlib.suppress(Stopped):  # lost the lease again: nothing is placed anyway
                self.fenced += fence(self.ctx, self.snapshot)
        finally:
            with self.cond:
                self._relisting = False
                self.cond.notify_all()

    # --- informer handlers (informer threads) ---------------------------------------------------------------

    def _changed(
        self,
        why: str | None,
        resource: str = hints.WILDCARD,
        action: str = hints.WILDCARD,
        old: Obj | None = None,
        new: Obj | None = None,
        pre_check: hints.PreCheck | None = None,
    ) -> None:
        """Something that may change placement happened (the snapshot has it): the unschedulable pods the
        event may help go to backoff (the queueing hints, binder/hints.py)."""
        if why is None:
            return
        with self.cond:
            self.ctx.changes[why] += 1
            event = hints.ClusterEvent(resource, action, why)
            self.queue.move_all_to_active_or_backoff(event, old, new, pre_check)
            self.cond.notify_all()

    def _node_obj(self, name: str) -> Obj | None:
        return self.nodes.get(("", name))

    def _invalidate_routing(self) -> None:
        with self.cond:
            self.audit.invalidate()

    def _on_pod(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        key = key_of(obj)
        with self.cond:
            if new is not None and hints.pending_for(new, self.scheduler_name):
                if hints.enqueue_pending(old, new, self.scheduler_name):
                    self.queue.add(key, hints.pod_priority(new), time.monotonic(), new)
                    self.cond.notify_all()
            else:
                self.queue.remove(key)
            if new is None:
                self.attempted.discard(key)
            in_flight, own = self.ctx.assume.pod_event(key, old, new)
            why = hints.pod_hint(old, new, in_flight=in_flight, own_binding=own)
            if why is not None:
                self.snapshot.pod_changed(why, old, new)
                node = hints.node_name(old) or hints.node_name(new)
                pre_check = None
                if why == "pod-gone" and node is not None and not in_flight:
                    pre_check = prechecks.on_nodes(self._pod_models, [node], self._node_obj)
                self._changed(why, hints.ASSIGNED_POD, hints.POD_EVENTS[why], old, new, pre_check)
            if new is not None and kind == ADDED and self.audit.added(new):
                self.cond.notify_all()

    def _on_node(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        why = hints.node_hint(kind, old, new)
        if why is not None:
            with self.cond:
                self.snapshot.invalidate()
                pre_check = (
                    None if new is None else prechecks.on_nodes(self._pod_models, None, self._node_obj, [new])
                )
                self._changed(why, hints.NODE, hints.action_of(old, new), old, new, pre_check)

    def _on_class(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        with self.cond:
            self.audit.invalidate()
            self.snapshot.invalidate()
            self._changed("device-class", hints.DEVICE_CLASS, hints.action_of(old, new), old, new)

    def _on_taint_rule(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        """A DeviceTaintRule changes the taints of every device it selects: a fresh snapshot (rules are rare,
        as DeviceClass changes are); pods a lifted taint blocked are retried."""
        if old is not None and new is not None and old.get("spec") == new.get("spec"):
            return
        with self.cond:
            self.snapshot.invalidate()
            self._changed("device-taint-rule", hints.DEVICE_TAINT_RULE, hints.action_of(old, new), old, new)

    def _on_slice(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        """A slice update that adds no room (hints.slice_update_may_help) is applied and counted, and moves
        no pod; any other change moves the DRA-rejected pods the slice's node (or any node) may host."""
        why = hints.slice_hint(old, new)
        if why is None:
            return
        with self.cond:
            self.snapshot.slice_changed(old, new)
            if (
                old is not None
                and new is not None
                and not hints.slice_update_may_help(old, new, self.snapshot)
            ):
                self.ctx.changes["resource-slice-no-room"] += 1
                return
            scopes = [hints.slice_node_names(o) for o in (old, new) if o is not None]
            names = None if any(s is None for s in scopes) else sorted({n for s in scopes for n in s or ()})
            pre_check = prechecks.on_nodes(self._pod_models, names, self._node_obj)
            self._changed(why, hints.RESOURCE_SLICE, hints.action_of(old, new), old, new, pre_check)

    def _on_claim(self, kind: str, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        with self.cond:
            seen = self.ctx.assume.claim_event(old, new)
            if not seen.in_flight:
                self.snapshot.claim_changed(key_of(obj))
            self.audit.claim_event(old, new)
            why = hints.claim_hint(old, new, seen.assumed, seen.in_flight)
            if why is None:
                return
            freed = hints.freed_allocation(old, new)
            pre_check = None
            if freed is not None:
                names = hints.selector_node_names(freed.get("nodeSelector"))
                pre_check = prechecks.on_nodes(self._pod_models, names, self._node_obj)
            self._changed(why, hints.RESOURCE_CLAIM, hints.action_of(old, new), old, new, pre_check)

    # --- the scheduling loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                key = self._next()
                if key is None:
                    continue
                try:
                    self.scheduling.schedule(key)
                except Stopped:
                    return
                except Exception:
                    log.exception("scheduling %s/%s failed", *key)
                    with self.cond:
                        self.ctx.errors += 1
                        self.queue.done_error(key, time.monotonic())
        except Stopped:
            return

    def _next(self) -> Key | None:
        with self.cond:
            while not self._stop.is_set():
                self._rules_listed()
                if self.synced() and self.is_leader() and not self.ctx.dead and not self._relisting:
                    self.audit.run_pending()
                    key = self.queue.pop(time.monotonic())
                    if key is not None:
                        return key
                    wait = self.queue.next_ready_in(time.monotonic())
                else:
                    if not self.is_leader():
                        self.audit.standby()
                    wait = 0.1
                for state, n in self.queue.counts().items():
                    self.metrics.pending.labels(state).set(n)
                self._export_unschedulable()
                self.cond.wait(wait if wait is not None else 1.0)
        return None

    def _export_unschedulable(self) -> None:
        """`scheduler_unschedulable_pods{plugin, profile}` from the queue (a plugin seen once stays, at 0)."""
        counts = self.queue.unschedulable_plugins()
        self._plugins_seen.update(counts)
        for plugin in self._plugins_seen:
            self.metrics.unschedulable_pods.labels(plugin, self.scheduler_name).set(counts.get(plugin, 0))

    # --- --once ---------------------------------------------------------------------------------------------

    def pending_keys(self) -> set[Key]:
        with self.cond:
            return {key_of(p) for p in self.pods.items() if hints.pending_for(p, self.scheduler_name)}

    def settled(self, keys: set[Key]) -> bool:
        """Every pod of `keys` was tried at least once and nothing is in flight."""
        with self.cond:
            if self.ctx.assume.inflight:
                return False
            for key in keys:
                state = self.queue.state(key)
                if state is None:
                    continue
                if key not in self.attempted or state in ("active", "in-flight"):
                    return False
            return True
