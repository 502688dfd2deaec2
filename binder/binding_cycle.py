"""The binding cycle (bind threads): PreBind, Bind, and the report; and crash recovery's short cycle.

Upstream: `pkg/scheduler/schedule_one.go` `bindingCycle`, run beside the next scheduling cycle the same way.
A failure after the claim exists goes to Unreserve (`phases.ClaimPhases.unreserve`).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from allocator.scheduling.placement import Placement
from allocator.scheduling.synthesis import dra_resources_on_node, scalar_requests, synthesize_for_resources
from allocator.scheduling.volumes import VOLUME_BINDING
from binder import claims
from binder.assume import InFlight
from binder.context import BinderContext, Stopped, log_decision
from binder.hints import Key, pod_uid
from binder.models import parse
from binder.names import EVENT_NORMAL, REASON_SCHEDULED
from binder.phases import ClaimPhases, Reserved, Written
from binder.scheduler_metrics import BIND, DEFAULT_BINDER, DYNAMIC_RESOURCES, PRE_BIND, UNRESERVE
from binder.snapshot import Snapshot
from binder.volume_binding import VolumeBinding, prebind_message
from binder.writes import BindError
from kubeio.kube import ApiError, Obj
from resourceapi.api.core_v1 import Node, Pod

log = logging.getLogger("dra_capacity.binder")


class BindingCycle:
    def __init__(
        self,
        ctx: BinderContext,
        snapshot: Snapshot,
        phases: ClaimPhases,
        volumes: VolumeBinding | None = None,
    ) -> None:
        self.ctx = ctx
        self.snapshot = snapshot
        self.phases = phases
        self.volumes = volumes

    def run(
        self, key: Key, pod_obj: Obj, placement: Placement, reserved: Reserved, volumes_bound: bool = False
    ) -> None:
        if placement.volumes is not None and self.volumes is not None and not volumes_bound:
            self._bind_volumes(key, pod_obj, placement, reserved)
            return
        started = time.monotonic()
        written = Written()
        timer = reserved.timer
        try:
            claim_name: str | None = None
            if reserved.body is not None and reserved.result is not None:
                with timer.time(DYNAMIC_RESOURCES, PRE_BIND):
                    claim_name = self.phases.pre_bind(key, pod_obj, placement, reserved, written)
            assert placement.node is not None
            with timer.time(DEFAULT_BINDER, BIND):
                latest = written.pod if written.pod is not None else pod_obj
                self.ctx.writer.bind(latest, placement.node, claims.unbound_naming(claim_name))
            self.ctx.hook("bound", pod_obj)
        except Stopped:
            return
        except (ApiError, BindError, ValueError) as exc:
            self._revert_volumes(placement)
            with timer.time(DYNAMIC_RESOURCES, UNRESERVE):
                self.phases.unreserve(key, pod_obj, written, str(exc))
            return
        except Exception as exc:
            log.exception("bind of %s/%s failed", *key)
            self._revert_volumes(placement)
            with timer.time(DYNAMIC_RESOURCES, UNRESERVE):
                self.phases.unreserve(key, pod_obj, written, f"{type(exc).__name__}: {exc}")
            return
        self.bound_ok(key, pod_obj, placement.node, claim_name, started)

    def _bind_volumes(self, key: Key, pod_obj: Obj, placement: Placement, reserved: Reserved) -> None:
        """VolumeBinding's PreBind: write the PVs and claims, then leave the wait for their binding to the
        poller (binder/volume_binding.py): this bind thread is free at once, the share stays reserved."""
        volumes, choice = self.volumes, placement.volumes
        assert volumes is not None and choice is not None and placement.node is not None
        try:
            with reserved.timer.time(VOLUME_BINDING, PRE_BIND):
                written = volumes.write(choice)
        except Stopped:
            return
        except (ApiError, BindError) as exc:
            self._volumes_failed(key, pod_obj, placement, prebind_message(str(exc)))
            return
        self.ctx.hook("volumes-written", pod_obj)
        volumes.wait(
            key,
            placement.node,
            written,
            lambda: self.run(key, pod_obj, placement, reserved, volumes_bound=True),
            lambda message: self._volumes_failed(key, pod_obj, placement, message),
        )

    def _volumes_failed(self, key: Key, pod_obj: Obj, placement: Placement, message: str) -> None:
        """Unreserve after a failed or timed-out volume PreBind: the volume choice and the share released."""
        self._revert_volumes(placement)
        self.phases.unreserve(key, pod_obj, Written(), message)

    def _revert_volumes(self, placement: Placement) -> None:
        if self.volumes is not None and placement.volumes is not None:
            with self.ctx.cond:
                self.volumes.revert(placement.volumes)

    def bound_ok(self, key: Key, pod_obj: Obj, node: str, claim_name: str | None, started: float) -> None:
        ctx = self.ctx
        with ctx.cond:
            flight = ctx.assume.inflight.get(key)
            if flight is not None:
                self.snapshot.flight_done(flight)
            ctx.assume.bound_ok(key, pod_uid(pod_obj), node)
            ctx.queue.done_bound(key)
        ctx.metrics.pods_bound.inc()
        created = _parse_time((pod_obj.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            ctx.metrics.bind_latency.observe(max((datetime.now(UTC) - created).total_seconds(), 0.0))
        ns, name = key
        log_decision(
            pod=f"{ns}/{name}",
            uid=pod_uid(pod_obj),
            result="bound",
            node=node,
            claim=claim_name,
            bind_ms=round((time.monotonic() - started) * 1000, 1),
        )
        ctx.events.emit(
            pod_obj, EVENT_NORMAL, REASON_SCHEDULED, f"Successfully assigned {ns}/{name} to {node}"
        )

    def resume(self, key: Key, obj: Obj, pod: Pod, claim: Obj) -> None:
        """Crash recovery: the claim is allocated and reserved for the pod; finish steps 3-4 on its node."""
        ctx = self.ctx
        node = claims.allocated_node(claim)
        assert node is not None
        with ctx.cond:
            ctx.assume.begin(key, InFlight(obj, node, None, claim["metadata"].get("uid")))
            resolver = self.snapshot.resolver()
            self.snapshot.invalidate()  # the next snapshot counts this pod on its node
        node_obj = ctx.informers.nodes.get(("", node))
        node_model = parse(Node, node_obj) if node_obj is not None else None
        allocatable = node_model.status.allocatable if node_model is not None and node_model.status else None
        needs, _ = dra_resources_on_node(scalar_requests(pod), allocatable, resolver)
        outcome = synthesize_for_resources(pod, sorted(needs), resolver, ctx.gates)
        started = time.monotonic()
        name = claim["metadata"]["name"]
        written = Written(claim, claims.pod_claim_status_name(obj) == name)
        try:
            ctx.writer.ensure_finalizer(claim)
            latest = obj
            if outcome.mappings and not written.linked:
                patch = {"status": {"extendedResourceClaimStatus": outcome.status(name).to_api()}}
                latest = ctx.writer.patch_pod_status(obj, patch, claims.unbound_naming(name))
                written.linked = True
            ctx.hook("pod-status-patched", obj)
            ctx.writer.bind(latest, node, claims.unbound_naming(name))
            ctx.hook("bound", obj)
        except (ApiError, BindError) as exc:
            self.phases.unreserve(key, obj, written, str(exc))
            return
        ctx.metrics.recovered.inc()
        self.bound_ok(key, obj, node, name, started)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
