"""The routing audit: pods that should have come to this binder but kept the default scheduler (admitted
while /mutate-pods was down) get a warning Event each, and a counter; so do pods that name another scheduler
(Volcano, JupyterHub's user-scheduler) for a resource this binder serves.

Runs on the scheduling thread, under the controller's lock: every pod at start and after a routing change
(a DeviceClass or a Namespace), else the pods added since the last look.
"""

from __future__ import annotations

from binder.context import BinderContext, log_decision
from binder.hints import pod_uid
from binder.names import EVENT_WARNING, REASON_NOT_ROUTED, REASON_OTHER_SCHEDULER
from kubeio.kube import Obj
from resourceapi import routing


def audited_kind(pod: Obj, own: str = "") -> bool:
    """A pod the audit looks at when added: not on a node, with the default scheduler or another one than
    this binder (`own`)."""
    spec = pod.get("spec") or {}
    return not spec.get("nodeName") and spec.get("schedulerName") != own


class RoutingAudit:
    def __init__(self, ctx: BinderContext) -> None:
        self.ctx = ctx
        self.enabled = ctx.options.audit_routing
        self._routed: frozenset[str] | None = None
        self._audited: set[str] = set()
        self.everything = True  # look at every pod (at start, on a routing change, on becoming leader)
        self.batch: list[Obj] = []

    def invalidate(self) -> None:
        """The routed resource names may have changed: look at every pod again."""
        self._routed = None
        self.everything = True

    def added(self, pod: Obj) -> bool:
        """A pod was added: look at it next time (True if it is of interest)."""
        if self.enabled and audited_kind(pod, self.ctx.scheduler_name):
            self.batch.append(pod)
            return True
        return False

    def standby(self) -> None:
        """A standby reports nothing; once leader it looks at every pod."""
        self.batch.clear()
        self.everything = True

    def run_pending(self) -> None:
        if self.everything:
            self.everything, self.batch = False, []
            self.run(self.ctx.informers.pods.items())
        elif self.batch:
            batch, self.batch = self.batch, []
            self.run(batch)

    def _backing(self) -> str:
        if self.ctx.options.route_whole_devices:
            return "backed by a DeviceClass this binder allocates: --route-whole-device-classes"
        return "backed by a DeviceClass with capacity requests"

    def _consequence(self) -> str:
        if self.ctx.options.route_whole_devices:
            return "Two allocators now share those devices"
        return "The default scheduler allocates whole devices without the capacity requests"

    def run(self, pods: list[Obj]) -> None:
        if not self.enabled:
            return
        ctx = self.ctx
        if self._routed is None:
            self._routed = routing.routed_resource_names(
                ctx.informers.classes.items(), ctx.options.route_whole_devices
            )
        for pod in pods:
            uid = pod_uid(pod)
            spec = pod.get("spec") or {}
            if (
                uid in self._audited
                or spec.get("nodeName")
                or spec.get("schedulerName") == ctx.scheduler_name
                or (pod.get("metadata") or {}).get("deletionTimestamp")
            ):
                continue
            ns = (pod.get("metadata") or {}).get("namespace") or "default"
            ns_obj = ctx.informers.namespaces.get(("", ns))
            labels = ((ns_obj or {}).get("metadata") or {}).get("labels") or {}
            decision = routing.decide(pod, self._routed, labels, ctx.scheduler_name)
            if decision.verdict is routing.Verdict.OWN_SCHEDULER:
                self._other_scheduler(pod, uid, ns, decision)
                continue
            if not decision.routed:
                continue
            self._audited.add(uid)
            ctx.metrics.not_routed.inc()
            message = (
                f"pod requests {', '.join(decision.resources)} ({self._backing()}) but was admitted with the "
                f"default scheduler, not {ctx.scheduler_name!r}: the /mutate-pods webhook did not route it "
                f"(was it unavailable?). {self._consequence()}; recreate the pod to route it."
            )
            log_decision(
                pod=f"{ns}/{pod['metadata'].get('name')}", uid=uid, result="not-routed", message=message
            )
            ctx.events.emit(pod, EVENT_WARNING, REASON_NOT_ROUTED, message)

    def _other_scheduler(self, pod: Obj, uid: str, ns: str, decision: routing.Decision) -> None:
        """A pod that names another scheduler for a resource this binder serves: reported once."""
        ctx = self.ctx
        self._audited.add(uid)
        ctx.metrics.other_scheduler.inc()
        message = (
            f"pod requests {', '.join(decision.resources)} ({self._backing()}) but names scheduler "
            f"{decision.scheduler!r}, not {ctx.scheduler_name!r}: that scheduler serves it without the "
            "class's capacity requests, or not at all where it lacks KEP-5004 (DRAExtendedResource)."
        )
        log_decision(
            pod=f"{ns}/{pod['metadata'].get('name')}", uid=uid, result="other-scheduler", message=message
        )
        ctx.events.emit(pod, EVENT_WARNING, REASON_OTHER_SCHEDULER, message)
