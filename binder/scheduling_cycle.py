"""The scheduling cycle (the scheduling thread): one pod from the queue, its leftovers, the placement, and
Reserve; the binding cycle then runs on a bind thread.

Upstream: `pkg/scheduler/schedule_one.go` `scheduleOne`/`schedulingCycle`, and the extended-resource
PostFilter that deletes a leftover claim controlled by the pod (finalizer first). A leftover already
allocated and reserved for the pod on a node that still fits is this binder's own crash recovery: it is
completed instead (`BindingCycle.resume`).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Executor

from allocator.scheduling.placement import PlacementResult, Placer
from allocator.scheduling.predicates import static_reasons
from allocator.scheduling.preemption import preemption_shown
from allocator.scheduling.volumes import uses_claims
from binder import claims
from binder.attempt import CycleState, QueuedPodInfo
from binder.binding_cycle import BindingCycle
from binder.context import BinderContext, log_decision
from binder.hints import Key, controller_pod_uid, pending_for, pod_uid
from binder.models import parse
from binder.names import (
    EVENT_WARNING,
    REASON_FAILED_SCHEDULING,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
)
from binder.phases import ClaimPhases
from binder.postfilter import Preemption
from binder.scheduler_metrics import DYNAMIC_RESOURCES, RESERVE, plugins_of
from binder.snapshot import Snapshot
from binder.volume_binding import VolumeBinding
from binder.writes import BindError
from kubeio.kube import RESOURCE_CLAIMS, ApiError, Obj
from resourceapi import routing
from resourceapi.api.core_v1 import Node

log = logging.getLogger("dra_capacity.binder")


class SchedulingCycle:
    def __init__(
        self,
        ctx: BinderContext,
        snapshot: Snapshot,
        phases: ClaimPhases,
        binding: BindingCycle,
        pool: Executor,
        volumes: VolumeBinding | None = None,
    ) -> None:
        self.ctx = ctx
        self.preemption = Preemption(ctx)
        self.preemption.counted = snapshot.counted_uids
        self.snapshot = snapshot
        self.phases = phases
        self.binding = binding
        self.pool = pool
        self.volumes = volumes
        self.attempted: set[Key] = set()

    def schedule(self, key: Key) -> None:
        ctx = self.ctx
        with ctx.cond:
            obj = ctx.informers.pods.get(key)
            if obj is None or not pending_for(obj, ctx.scheduler_name) or ctx.assume.is_bound(key, obj):
                ctx.queue.remove(key)
                return
            if ctx.assume.in_flight(key) is not None:
                ctx.queue.done_retry_now(key)  # a bind is still under way; try again when it ends
                return
            self.attempted.add(key)
            info = QueuedPodInfo.of(key, obj, time.monotonic(), ctx.queue.attempts(key))
            if info is None:
                self._report_unschedulable(key, obj, "pod could not be read", REASON_SCHEDULER_ERROR)
                return
            unsupported = routing.unsupported_features(obj)
            if unsupported:
                self._unschedulable(
                    info,
                    f"dra-capacity binder does not support pods with {', '.join(unsupported)}",
                    REASON_SCHEDULER_ERROR,
                )
                return
            uncertain = ctx.assume.is_uncertain(info.uid)
        if uncertain:
            self._read_claims(key[0])  # a claim may exist that the informer has not shown yet
            with ctx.cond:
                ctx.assume.settle_uncertain(info.uid)
        if self._clean_leftovers(info):
            return
        try:
            with ctx.cond:
                state = CycleState()
                placer = self._find_node(info, state)
                if placer is None:
                    return
                state.timer = ctx.plugin_timer()
                with state.timer.time(DYNAMIC_RESOURCES, RESERVE):
                    self.phases.reserve(info, state, placer)
                placement = state.placement
                if placement is not None and placement.volumes is not None and self.volumes is not None:
                    self.volumes.assume(placement.volumes)  # VolumeBinding's Reserve
        finally:
            self.preemption.flush()  # the PostFilter's API writes, outside the lock
        ctx.hook("placed", obj)
        self.pool.submit(self.binding.run, info, state)

    def _clean_leftovers(self, info: QueuedPodInfo) -> bool:
        """Leftover extended-resource claims the pod controls, before placing (upstream's DynamicResources
        deletes them in its PostFilter): stale ones are deleted; True when a leftover is this binder's crash
        recovery, completed instead of placing."""
        with self.ctx.cond:
            leftovers = self._leftovers(info)
        if leftovers.action is claims.LeftoverAction.RESUME:
            assert leftovers.keep is not None
            for stale in leftovers.delete:
                self.phases.delete_claim(stale, "leftover")
            self.binding.resume(info, leftovers.keep)
            return True
        if leftovers.action is claims.LeftoverAction.DELETE:
            for stale in leftovers.delete:
                self.phases.delete_claim(stale, "leftover")
        return False

    def _find_node(self, info: QueuedPodInfo, state: CycleState) -> Placer | None:
        """Filter and Score on the snapshot (caller holds the lock): the placer, with `state.placement` bound
        to a node; otherwise None, the pod reported gated or unschedulable. Pods nominated to a node with at
        least this pod's priority count there (binder/postfilter.py); a nominated pod tries its node first;
        on the UNSCHEDULABLE branch, DefaultPreemption's PostFilter runs when preemption is on."""
        ctx = self.ctx
        placer = self.snapshot.placer()
        if self.volumes is not None and uses_claims(info.pod):
            placer.storage = self.volumes.storage()  # the informers' objects and the assumed ones
        preemption = self.preemption
        postfilter = ""
        with preemption.holding(placer, info.key, info.pod):
            placement = None
            nominated = preemption.nominated_node(info.key, info.obj)
            if nominated is not None and nominated in placer.node_names:
                placement = placer.place_on(info.pod, [], nominated)  # schedule_one.go evaluateNominatedNode
                if placement.result is not PlacementResult.BOUND:
                    placement = None
            if placement is None:
                placement = placer.place(info.pod, [])
            if placement.result is PlacementResult.UNSCHEDULABLE and ctx.options.preemption:
                version = self.snapshot.version()
                postfilter = preemption.post_filter(info.key, info.obj, info.pod, placer, version)
        state.placement = placement
        ctx.metrics.attempts.labels(placement.result).inc()
        if placement.result is PlacementResult.GATED:
            self._gated(info, placement.reason)
            return None
        if placement.result is not PlacementResult.BOUND or placement.node is None:
            if placement.result is PlacementResult.UNSCHEDULABLE:
                detail = ctx.diagnoser.message(placement.reason, placer, self.snapshot.cluster(), info.pod)
                message = placement.reason
                if postfilter and preemption_shown(info.pod):  # the FitError with `Diagnosis.PostFilterMsg`
                    head, sep, reasons = detail.partition("\n")  # the summary line first, as there
                    message, detail = f"{message} {postfilter}", f"{head} {postfilter}{sep}{reasons}"
                self._unschedulable(info, message, REASON_UNSCHEDULABLE, detail, plugins_of(placement.reason))
            else:
                self._unschedulable(info, placement.reason, REASON_SCHEDULER_ERROR)
            return None
        preemption.forget(info.key)  # placed: the nomination (if any) holds nothing any more
        return placer

    def _read_claims(self, namespace: str) -> None:
        """A fresh list of the namespace's claims, assumed where newer than the informer's copies."""
        data = self.ctx.kube.list(RESOURCE_CLAIMS, namespace=namespace)
        with self.ctx.cond:
            for item in data.get("items") or []:
                if isinstance(item, dict) and controller_pod_uid(item) is not None:
                    self.ctx.assume.assume(item)

    def _leftovers(self, info: QueuedPodInfo) -> claims.Leftovers:
        ctx = self.ctx
        mine = ctx.assume.owned_claims(info.uid, ctx.informers.claims.get)
        if not mine:
            return claims.Leftovers(claims.LeftoverAction.NONE)

        def fits(node_name: str) -> bool:
            node_obj = ctx.informers.nodes.get(("", node_name))
            node = parse(Node, node_obj) if node_obj is not None else None
            return node is not None and not static_reasons(info.pod, node)

        return claims.classify_leftovers(mine, info.uid, fits)

    def _gated(self, info: QueuedPodInfo, message: str) -> None:
        """A pod with scheduling gates waits, as the SchedulingGates PreEnqueue plugin keeps it out of the
        active queue (pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go): no Event, no
        condition write (the API server set PodScheduled=False/SchedulingGated at creation,
        pkg/registry/core/pod/strategy.go applySchedulingGatedCondition), no retry until its spec changes."""
        self.ctx.queue.remove(info.key)
        log_decision(pod=info.name, uid=info.uid, result="gated", message=message)

    def _unschedulable(
        self,
        info: QueuedPodInfo,
        message: str,
        reason: str,
        detail: str | None = None,
        plugins: frozenset[str] | None = None,
    ) -> None:
        """The attempt found no node: record the plugins that rejected it on the attempt (default: those of
        `message`), and report."""
        info.unschedulable_plugins = plugins_of(message) if plugins is None else plugins
        self._report_unschedulable(info.key, info.obj, message, reason, detail, info.unschedulable_plugins)

    def _report_unschedulable(
        self,
        key: Key,
        obj: Obj,
        message: str,
        reason: str,
        detail: str | None = None,
        plugins: frozenset[str] | None = None,
    ) -> None:
        """FailedScheduling Event (`detail`: the summary and what exactly is unsatisfied, diagnosis.py) and
        PodScheduled=False with the summary alone; the pod waits for a relevant change."""
        ctx = self.ctx
        ctx.metrics.pods_unschedulable.labels(_reason_label(message)).inc()
        plugins = plugins_of(message) if plugins is None else plugins
        ctx.queue.done_unschedulable(key, time.monotonic(), plugins)
        log_decision(
            pod=f"{key[0]}/{key[1]}",
            uid=pod_uid(obj),
            result="unschedulable",
            reason=reason,
            message=message,
        )
        ctx.events.emit(obj, EVENT_WARNING, REASON_FAILED_SCHEDULING, detail or message)
        if not claims.condition_is(obj, reason, message):
            try:
                ctx.writer.patch_pod_status(
                    obj, claims.unschedulable_condition_patch(message, reason), claims.still_pending
                )
            except (ApiError, BindError) as exc:
                log.debug("pod condition not written for %s/%s: %s", *key, exc)


def _reason_label(message: str) -> str:
    """A bounded label for the unschedulable counter: the first per-node reason of the summary."""
    head, sep, rest = message.partition(": ")
    if sep and head.startswith("0/"):
        first = rest.split(", ")[0].rstrip(".")
        return first.split(" ", 1)[1] if " " in first else first
    return message[:60]
