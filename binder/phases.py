"""The DRA plugin's phases for the extended-resource claim: Reserve, PreBind and Unreserve.

Upstream: `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`. Reserve counts the
placement in memory (the snapshot and the assume cache) before anything is written; PreBind makes the claim
real (create with the finalizer, `status.allocation` + `reservedFor`, then the pod's
`status.extendedResourceClaimStatus`); Unreserve deletes the claim (finalizer first) and forgets the
placement, so the pod is retried from a fresh snapshot.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from allocator.scheduling.placement import Placer
from allocator.structured.features import Features
from binder import claims, hints
from binder.assume import InFlight
from binder.attempt import CycleState, QueuedPodInfo, Reserved
from binder.context import BinderContext, Stopped, log_decision
from binder.names import EVENT_WARNING, REASON_FAILED_SCHEDULING
from binder.snapshot import Snapshot
from binder.writes import BindError
from kubeio.informer import key_of
from kubeio.kube import ApiError, Obj

FORGOTTEN = "assumed-pod-forgotten"
log = logging.getLogger("dra_capacity.binder")


def now_rfc3339() -> str:
    """metav1.Time's wire form (seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ClaimPhases:
    def __init__(self, ctx: BinderContext, snapshot: Snapshot) -> None:
        self.ctx = ctx
        self.snapshot = snapshot

    def reserve(self, info: QueuedPodInfo, state: CycleState, placer: Placer) -> None:
        """Count a bound placement from now on (caller holds the lock); `state.reserved` says what to write.
        The create body is taken before the commit names the claim and sets its status; the committed claim
        itself (the placer keeps no reference to it) is the in-flight allocation."""
        placement = state.placement
        assert placement is not None and placement.node is not None
        body = None
        if placement.claim is not None and placement.allocation:
            body = claims.claim_create_body(placement.claim)
        placer.commit(placement, "pending-" + info.uid[:40])  # counted before it is written
        claim = placement.claim if body is not None else None
        self.ctx.assume.assume_pod(info.key, InFlight(info.obj, placement.node, claim))
        result = placement.allocation[-1] if placement.claim is not None else None
        state.reserved = Reserved(body, result)

    def pre_bind(self, info: QueuedPodInfo, state: CycleState) -> str:
        """Create and allocate the claim, then link it in the pod's status; its name."""
        ctx = self.ctx
        reserved, written, pod_obj = state.reserved, state.written, info.obj
        assert reserved is not None and reserved.body is not None and reserved.result is not None
        assert state.placement is not None
        try:
            created = ctx.writer.create_claim(reserved.body)
        except ApiError as exc:
            if exc.transient:
                with ctx.cond:
                    ctx.assume.mark_uncertain(info.uid)
            raise
        written.claim = created
        with ctx.cond:
            ctx.assume.assume(created)
        ctx.hook("claim-created", pod_obj)
        status = claims.allocation_status(reserved.result, pod_obj)
        if Features.from_gates(ctx.gates).device_binding_and_status:
            # bindClaim stamps the allocation when binding conditions are served (isClaimTimeout reads it)
            status["allocation"].setdefault("allocationTimestamp", now_rfc3339())
        allocated = ctx.writer.allocate(created, status, info.uid)
        written.claim = allocated
        with ctx.cond:
            ctx.assume.assume_allocated(info.key, allocated)
        ctx.hook("claim-allocated", pod_obj)
        name = str(allocated["metadata"]["name"])
        written.pod = ctx.writer.patch_pod_status(
            pod_obj, claims.extended_status_patch(state.placement, name), claims.unbound_naming(name)
        )
        written.linked = True
        ctx.hook("pod-status-patched", pod_obj)
        return name

    def unreserve(
        self, info: QueuedPodInfo, state: CycleState, message: str, drop_linked: bool = False
    ) -> None:
        """Delete the claim (finalizer first), report, and retry from a fresh snapshot.

        Once the pod's status names the claim (`linked`: only the Binding failed) the claim is kept: the retry
        finds it allocated and reserved for the pod and completes the Binding (crash recovery), and the pod
        status never has to name a second claim. `drop_linked` deletes it anyway (a failed binding-conditions
        wait: the claim holds devices that will not become ready, and upstream's Unreserve deletes it)."""
        ctx = self.ctx
        key, written = info.key, state.written
        if written.claim is not None and (drop_linked or not written.linked):
            try:
                self.delete_claim(written.claim, "failed-bind")
            except Stopped:
                return
            except (ApiError, BindError) as exc:
                log.warning(
                    "claim %s/%s not deleted after a failed bind: %s",
                    key[0],
                    written.claim["metadata"]["name"],
                    exc,
                )
        with ctx.cond:
            ctx.assume.forget_pod(key)
            self.snapshot.invalidate()
            ctx.errors += 1
            ctx.queue.done_error(key, time.monotonic())
            # upstream's handleBindingCycleError: forgetting an assumed pod is an AssignedPod/Delete event
            # (its share was counted), so a pod rejected while it was held is tried again
            ctx.changes[FORGOTTEN] += 1
            ctx.queue.move_all_to_active_or_backoff(
                hints.ClusterEvent(hints.ASSIGNED_POD, hints.DELETE, FORGOTTEN), info.obj, None
            )
            ctx.cond.notify_all()
        ctx.metrics.attempts.labels("error").inc()
        log_decision(pod=info.name, uid=info.uid, result="error", message=message)
        ctx.events.emit(info.obj, EVENT_WARNING, REASON_FAILED_SCHEDULING, f"binding rejected: {message}")

    def delete_claim(self, claim: Obj, why: str) -> None:
        ctx = self.ctx
        ctx.writer.delete_claim(claim)
        ctx.metrics.claims_deleted.labels(why).inc()
        with ctx.cond:
            ctx.assume.assume_deleted(claim)
            self.snapshot.claim_changed(key_of(claim))  # hidden now: its allocation no longer counts
