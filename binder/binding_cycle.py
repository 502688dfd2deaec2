"""The binding cycle (bind threads): PreBind, Bind, and the report; and crash recovery's short cycle.

Upstream: `pkg/scheduler/schedule_one.go` `bindingCycle`, run beside the next scheduling cycle the same way.
A failure after the claim exists goes to Unreserve (`phases.ClaimPhases.unreserve`).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from allocator.scheduling.placement import Placement, PlacementResult
from allocator.scheduling.synthesis import dra_resources_on_node, scalar_requests, synthesize_for_resources
from allocator.scheduling.volumes import VOLUME_BINDING
from allocator.structured.features import Features
from binder import claims
from binder.assume import InFlight
from binder.attempt import CycleState, QueuedPodInfo, Written
from binder.binding_conditions import (
    REASON_PENDING,
    BindingConditions,
    has_binding_conditions,
    pending_message,
)
from binder.context import BinderContext, Stopped, log_decision
from binder.models import parse
from binder.names import EVENT_NORMAL, REASON_SCHEDULED
from binder.phases import ClaimPhases
from binder.scheduler_metrics import BIND, DEFAULT_BINDER, DYNAMIC_RESOURCES, PRE_BIND, UNRESERVE
from binder.snapshot import Snapshot
from binder.volume_binding import VolumeBinding, prebind_message
from binder.writes import BindError
from kubeio.kube import ApiError, Obj
from resourceapi.api.core_v1 import Node
from resourceapi.machinery.objects import parse_time

log = logging.getLogger("dra_capacity.binder")


class BindingCycle:
    def __init__(
        self,
        ctx: BinderContext,
        snapshot: Snapshot,
        phases: ClaimPhases,
        volumes: VolumeBinding | None = None,
        conditions: BindingConditions | None = None,
    ) -> None:
        self.ctx = ctx
        self.snapshot = snapshot
        self.phases = phases
        self.volumes = volumes
        self.conditions = conditions

    def run(
        self,
        info: QueuedPodInfo,
        state: CycleState,
        volumes_bound: bool = False,
        conditions_met: bool = False,
    ) -> None:
        """PreBind and Bind of a reserved placement; Unreserve on a failure. A pod with volumes to bind
        first goes through `_bind_volumes`, which calls back here once they are bound; a pod whose devices
        have binding conditions is handed to `_wait_for_conditions` after DynamicResources' writes, which
        calls back here (`conditions_met`) once they are all True."""
        placement = state.placement
        volumes_first = placement is not None and placement.volumes is not None and self.volumes is not None
        if volumes_first and not volumes_bound:
            self._bind_volumes(info, state)
            return
        timer = state.timer
        try:
            if not conditions_met:
                state.bind_started = time.monotonic()
                self._pre_bind(info, state)
                if self._wait_for_conditions(info, state):
                    return
            with timer.time(DEFAULT_BINDER, BIND):
                self._bind(info, state)
            self.ctx.hook("bound", info.obj)
        except Stopped:
            return
        except (ApiError, BindError, ValueError) as exc:
            self._revert_volumes(state)
            with timer.time(DYNAMIC_RESOURCES, UNRESERVE):
                self.phases.unreserve(info, state, str(exc))
            return
        except Exception as exc:
            log.exception("bind of %s/%s failed", *info.key)
            self._revert_volumes(state)
            with timer.time(DYNAMIC_RESOURCES, UNRESERVE):
                self.phases.unreserve(info, state, f"{type(exc).__name__}: {exc}")
            return
        self.bound_ok(info, state)

    def _bind_volumes(self, info: QueuedPodInfo, state: CycleState) -> None:
        """VolumeBinding's PreBind: write the PVs and claims, then leave the wait for their binding to the
        poller (binder/volume_binding.py): this bind thread is free at once, the share stays reserved."""
        volumes, placement = self.volumes, state.placement
        assert volumes is not None and placement is not None and placement.volumes is not None
        assert placement.node is not None
        try:
            with state.timer.time(VOLUME_BINDING, PRE_BIND):
                written = volumes.write(placement.volumes)
        except Stopped:
            return
        except (ApiError, BindError) as exc:
            self._volumes_failed(info, state, prebind_message(str(exc)))
            return
        self.ctx.hook("volumes-written", info.obj)
        volumes.wait(
            info.key,
            placement.node,
            written,
            lambda: self.run(info, state, volumes_bound=True),
            lambda message: self._volumes_failed(info, state, message),
        )

    def _wait_for_conditions(self, info: QueuedPodInfo, state: CycleState) -> bool:
        """DynamicResources' PreBind wait (binder/binding_conditions.py): True when the claim's devices have
        binding conditions and the pod now waits for them, holding no bind thread, its share reserved."""
        conditions, claim = self.conditions, state.written.claim
        if (
            conditions is None
            or claim is None
            or not Features.from_gates(self.ctx.gates).device_binding_and_status
        ):
            return False
        if not has_binding_conditions(claim):
            return False
        self.ctx.events.emit(
            info.obj, EVENT_NORMAL, REASON_PENDING, pending_message(state.node), action="Scheduling"
        )
        self.ctx.hook("binding-conditions-pending", info.obj)
        conditions.wait(
            info.key,
            claim,
            lambda: self.run(info, state, volumes_bound=True, conditions_met=True),
            lambda message: self._conditions_failed(info, state, message),
        )
        return True

    def _conditions_failed(self, info: QueuedPodInfo, state: CycleState, message: str) -> None:
        """Unreserve after a failed or timed-out binding-conditions wait: upstream's Unreserve deletes the
        extended-resource claim (`unreserveExtendedResourceClaim`), so its allocation is gone and the retry
        allocates afresh; the volume choice and the share are released."""
        self._revert_volumes(state)
        with state.timer.time(DYNAMIC_RESOURCES, UNRESERVE):
            self.phases.unreserve(info, state, message, drop_linked=True)

    def _volumes_failed(self, info: QueuedPodInfo, state: CycleState, message: str) -> None:
        """Unreserve after a failed or timed-out volume PreBind: the volume choice and the share released."""
        self._revert_volumes(state)
        self.phases.unreserve(info, state, message)

    def _revert_volumes(self, state: CycleState) -> None:
        placement = state.placement
        if self.volumes is not None and placement is not None and placement.volumes is not None:
            with self.ctx.cond:
                self.volumes.revert(placement.volumes)

    def _pre_bind(self, info: QueuedPodInfo, state: CycleState) -> None:
        """The PreBind plugins, in the default profile's order (upstream runs VolumeBinding's before
        DynamicResources'); a failure raises, and Unreserve undoes what `state.written` records."""
        reserved = state.reserved
        if reserved is not None and reserved.body is not None and reserved.result is not None:
            with state.timer.time(DYNAMIC_RESOURCES, PRE_BIND):
                state.claim_name = self.phases.pre_bind(info, state)

    def _bind(self, info: QueuedPodInfo, state: CycleState) -> None:
        """The DefaultBinder: `pods/binding`, conditional on the pod as PreBind last wrote it."""
        latest = state.written.pod if state.written.pod is not None else info.obj
        self.ctx.writer.bind(latest, state.node, claims.unbound_naming(state.claim_name))

    def bound_ok(self, info: QueuedPodInfo, state: CycleState) -> None:
        ctx = self.ctx
        key, node = info.key, state.node
        with ctx.cond:
            flight = ctx.assume.in_flight(key)
            if flight is not None:
                self.snapshot.flight_done(flight)
            ctx.assume.finish_binding(key, info.uid, node)
            ctx.queue.done_bound(key)
        ctx.metrics.pods_bound.inc()
        created = parse_time((info.obj.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            ctx.metrics.bind_latency.observe(max((datetime.now(UTC) - created).total_seconds(), 0.0))
        ns, name = key
        log_decision(
            pod=info.name,
            uid=info.uid,
            result="bound",
            node=node,
            claim=state.claim_name,
            bind_ms=round((time.monotonic() - state.bind_started) * 1000, 1),
        )
        ctx.events.emit(
            info.obj, EVENT_NORMAL, REASON_SCHEDULED, f"Successfully assigned {ns}/{name} to {node}"
        )

    def resume(self, info: QueuedPodInfo, claim: Obj) -> None:
        """Crash recovery: the claim is allocated and reserved for the pod; finish steps 3-4 on its node."""
        ctx = self.ctx
        key, obj = info.key, info.obj
        node = claims.allocated_node(claim)
        assert node is not None
        with ctx.cond:
            ctx.assume.assume_pod(key, InFlight(obj, node, None, claim["metadata"].get("uid")))
            resolver = self.snapshot.resolver()
            self.snapshot.invalidate()  # the next snapshot counts this pod on its node
        node_obj = ctx.informers.nodes.get(("", node))
        node_model = parse(Node, node_obj) if node_obj is not None else None
        allocatable = node_model.status.allocatable if node_model is not None and node_model.status else None
        needs, _ = dra_resources_on_node(scalar_requests(info.pod), allocatable, resolver)
        outcome = synthesize_for_resources(info.pod, sorted(needs), resolver, ctx.gates)
        name = claim["metadata"]["name"]
        state = CycleState(
            placement=Placement(info.pod, PlacementResult.BOUND, node=node),
            written=Written(claim, claims.pod_claim_status_name(obj) == name),
            claim_name=name,
            bind_started=time.monotonic(),
        )
        written = state.written
        try:
            ctx.writer.ensure_finalizer(claim)
            latest = obj
            if outcome.mappings and not written.linked:
                patch = {"status": {"extendedResourceClaimStatus": outcome.status(name).to_api()}}
                latest = ctx.writer.patch_pod_status(obj, patch, claims.unbound_naming(name))
                written.linked = True
            ctx.hook("pod-status-patched", obj)
            if latest is not obj:
                written.pod = latest
            if self._wait_for_conditions(info, state):  # the conditions may still be pending
                ctx.metrics.recovered.inc()
                return
            ctx.writer.bind(latest, node, claims.unbound_naming(name))
            ctx.hook("bound", obj)
        except (ApiError, BindError) as exc:
            self.phases.unreserve(info, state, str(exc))
            return
        ctx.metrics.recovered.inc()
        self.bound_ok(info, state)
