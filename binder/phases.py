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
from dataclasses import dataclass, field

from allocator.scheduling.placement import Placement, Placer
from binder import claims
from binder.assume import InFlight
from binder.context import BinderContext, Stopped, log_decision
from binder.hints import Key, pod_uid
from binder.names import EVENT_WARNING, REASON_FAILED_SCHEDULING
from binder.scheduler_metrics import PluginTimer
from binder.snapshot import Snapshot
from binder.writes import BindError
from kubeio.informer import key_of
from kubeio.kube import ApiError, Obj
from resourceapi.api.resource_v1 import AllocationResult

log = logging.getLogger("dra_capacity.binder")


@dataclass
class Written:
    """How far PreBind got, for Unreserve: the claim it created (the latest answer), and whether the pod's
    status names it."""

    claim: Obj | None = None
    linked: bool = False
    pod: Obj | None = None  # the pod as the status patch answered (the Binding is conditional on it)


@dataclass(frozen=True)
class Reserved:
    """What Reserve hands to the binding cycle: the claim to create and its allocation (None without one)."""

    body: Obj | None
    result: AllocationResult | None
    timer: PluginTimer = field(default_factory=lambda: PluginTimer(None, False))  # this attempt's sampling


class ClaimPhases:
    def __init__(self, ctx: BinderContext, snapshot: Snapshot) -> None:
        self.ctx = ctx
        self.snapshot = snapshot

    def reserve(
        self, key: Key, pod_obj: Obj, placer: Placer, placement: Placement, timer: PluginTimer | None = None
    ) -> Reserved:
        """Count a bound placement from now on (caller holds the lock). The create body is taken before the
        commit names the claim and sets its status; the committed claim itself (the placer keeps no
        reference to it) is the in-flight allocation."""
        assert placement.node is not None
        body = None
        if placement.claim is not None and placement.allocation:
            body = claims.claim_create_body(placement.claim)
        placer.commit(placement, "pending-" + pod_uid(pod_obj)[:40])  # counted before it is written
        claim = placement.claim if body is not None else None
        self.ctx.assume.begin(key, InFlight(pod_obj, placement.node, claim))
        result = placement.allocation[-1] if placement.claim is not None else None
        return Reserved(body, result, timer or PluginTimer(None, False))

    def pre_bind(
        self, key: Key, pod_obj: Obj, placement: Placement, reserved: Reserved, written: Written
    ) -> str:
        """Create and allocate the claim, then link it in the pod's status; its name."""
        ctx = self.ctx
        assert reserved.body is not None and reserved.result is not None
        try:
            created = ctx.writer.create_claim(reserved.body)
        except ApiError as exc:
            if exc.transient:
                with ctx.cond:
                    ctx.assume.uncertain.add(pod_uid(pod_obj))
            raise
        written.claim = created
        with ctx.cond:
            ctx.assume.claim_written(created)
        ctx.hook("claim-created", pod_obj)
        allocated = ctx.writer.allocate(
            created, claims.allocation_status(reserved.result, pod_obj), pod_uid(pod_obj)
        )
        written.claim = allocated
        with ctx.cond:
            ctx.assume.claim_allocated(key, allocated)
        ctx.hook("claim-allocated", pod_obj)
        name = str(allocated["metadata"]["name"])
        written.pod = ctx.writer.patch_pod_status(
            pod_obj, claims.extended_status_patch(placement, name), claims.unbound_naming(name)
        )
        written.linked = True
        ctx.hook("pod-status-patched", pod_obj)
        return name

    def unreserve(self, key: Key, pod_obj: Obj, written: Written, message: str) -> None:
        """Delete the claim (finalizer first), report, and retry from a fresh snapshot.

        Once the pod's status names the claim (`linked`: only the Binding failed) the claim is kept: the retry
        finds it allocated and reserved for the pod and completes the Binding (crash recovery), and the pod
        status never has to name a second claim."""
        ctx = self.ctx
        if written.claim is not None and not written.linked:
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
            ctx.assume.failed(key)
            self.snapshot.invalidate()
            ctx.errors += 1
            ctx.queue.done_error(key, time.monotonic())
            ctx.cond.notify_all()
        ctx.metrics.attempts.labels("error").inc()
        log_decision(pod=f"{key[0]}/{key[1]}", uid=pod_uid(pod_obj), result="error", message=message)
        ctx.events.emit(pod_obj, EVENT_WARNING, REASON_FAILED_SCHEDULING, f"binding rejected: {message}")

    def delete_claim(self, claim: Obj, why: str) -> None:
        ctx = self.ctx
        ctx.writer.delete_claim(claim)
        ctx.metrics.claims_deleted.labels(why).inc()
        with ctx.cond:
            ctx.assume.claim_deleted(claim)
            self.snapshot.claim_changed(key_of(claim))  # hidden now: its allocation no longer counts
