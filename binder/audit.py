"""The routing audit: pods that should have come to this binder but kept the default scheduler (admitted
while /mutate-pods was down, or from a namespace not opted in) get a warning Event each, and a counter; so do
pods that name another scheduler (Volcano, JupyterHub's user-scheduler) for a resource this binder serves.

One allocator per device: kube-scheduler cannot allocate the devices this binder serves while the chart's
DeviceTaintRules taint them (resourceapi.routing.SERVED_TAINT_KEY), so such a pod waits. Where that is not
prevented (the rule deleted, DRADeviceTaintRules off, a claim of the pod's own that tolerates the taint under
another name), the audit detects an allocation it did not write on a device it serves: an Event on the pod
and the `dra_capacity_binder_foreign_allocations` gauge name the pod and the device.

Runs on the scheduling thread, under the controller's lock: every pod at start and after a routing change
(a DeviceClass or a Namespace), else the pods and claims added or changed since the last look.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from allocator.structured.ids import DeviceID
from binder.context import BinderContext, log_decision
from binder.hints import is_allocated, pod_uid
from binder.names import (
    EVENT_WARNING,
    REASON_FOREIGN_ALLOCATION,
    REASON_NOT_OPTED_IN,
    REASON_NOT_ROUTED,
    REASON_OTHER_SCHEDULER,
)
from binder.snapshot import Snapshot
from kubeio.informer import key_of
from kubeio.kube import Obj
from resourceapi import routing
from resourceapi.tolerations import tolerates

_SERVED = f"{routing.SERVED_TAINT_KEY}:{routing.SERVED_TAINT_EFFECT}"


def audited_kind(pod: Obj, own: str = "") -> bool:
    """A pod the audit looks at when added: not on a node, with the default scheduler or another one than
    this binder (`own`)."""
    spec = pod.get("spec") or {}
    return not spec.get("nodeName") and spec.get("schedulerName") != own


class _Taint:
    """The binder's own device taint, for `tolerates`."""

    key = routing.SERVED_TAINT_KEY
    value: str | None = None
    effect = routing.SERVED_TAINT_EFFECT


class _Toleration:
    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.key = raw.get("key")
        self.operator = raw.get("operator")
        self.value = raw.get("value")
        self.effect = raw.get("effect")


def tolerates_served(request: Mapping[str, Any] | None) -> bool:
    """Whether a claim request (or subrequest) tolerates the binder's device taint: the binder's own claims
    do (allocator/scheduling/synthesis.py), kube-scheduler's synthesized claims never do."""
    raw = (request or {}).get("tolerations") or []
    return any(isinstance(t, dict) and tolerates(_Toleration(t), _Taint()) for t in raw)


def _requests(claim: Obj) -> dict[str, Mapping[str, Any]]:
    """Each request by the name an allocation result gives it (`r`, or `r/s` for a subrequest)."""
    out: dict[str, Mapping[str, Any]] = {}
    for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        name = str(r.get("name") or "")
        if r.get("exactly") is not None:
            out[name] = r["exactly"]
        for sub in r.get("firstAvailable") or []:
            out[f"{name}/{sub.get('name')}"] = sub
    return out


def foreign_devices(claim: Obj, served: Callable[[DeviceID], bool]) -> list[str]:
    """The devices (`driver/pool/device`) of an allocated claim that `served` says this binder serves, where
    the request does not tolerate the binder's taint: allocated by another scheduler."""
    requests = _requests(claim)
    out: list[str] = []
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    for r in results or []:
        if r.get("adminAccess"):
            continue
        device = DeviceID(str(r.get("driver")), str(r.get("pool")), str(r.get("device")))
        if served(device) and not tolerates_served(requests.get(str(r.get("request")))):
            out.append(f"{device.driver}/{device.pool}/{device.device}")
    return out


def _holder(claim: Obj) -> tuple[str, str, str]:
    """(namespace, pod name, pod uid) the claim is reserved for, else its owner pod; ("", "", "") if none."""
    meta = claim.get("metadata") or {}
    ns = str(meta.get("namespace") or "default")
    for ref in (claim.get("status") or {}).get("reservedFor") or []:
        if ref.get("resource") == "pods":
            return ns, str(ref.get("name")), str(ref.get("uid") or "")
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Pod":
            return ns, str(ref.get("name")), str(ref.get("uid") or "")
    return ns, "", ""


class RoutingAudit:
    def __init__(self, ctx: BinderContext, snapshot: Snapshot | None = None) -> None:
        self.ctx = ctx
        self.snapshot = snapshot
        self.enabled = ctx.options.audit_routing
        self._routed: frozenset[str] | None = None
        self._audited: set[str] = set()
        self.everything = True  # look at every pod (at start, on a routing change, on becoming leader)
        self.batch: list[Obj] = []
        self.claims: list[Obj] = []  # allocated claims to check for a foreign allocation
        self._foreign: dict[
            tuple[str, str], list[tuple[str, str, str, str]]
        ] = {}  # claim key -> gauge labels

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

    def claim_event(self, old: Obj | None, new: Obj | None) -> None:
        """A claim changed: check it once allocated; a deleted or deallocated claim's gauge goes away."""
        if not self.enabled:
            return
        obj = new if new is not None else old
        assert obj is not None
        if new is None or not is_allocated(new):
            self._forget(key_of(obj))
        elif old is None or not is_allocated(old) or old.get("status") != new.get("status"):
            self.claims.append(new)

    def standby(self) -> None:
        """A standby reports nothing; once leader it looks at every pod."""
        self.batch.clear()
        self.claims.clear()
        self.everything = True

    def run_pending(self) -> None:
        if self.everything:
            self.everything, self.batch = False, []
            self.run(self.ctx.informers.pods.items())
            self.claims = []
            self.check_claims([c for c in self.ctx.informers.claims.items() if is_allocated(c)])
        else:
            if self.batch:
                batch, self.batch = self.batch, []
                self.run(batch)
            if self.claims:
                claims, self.claims = self.claims, []
                self.check_claims(claims)

    def _backing(self) -> str:
        if self.ctx.options.route_whole_devices:
            return "backed by a DeviceClass this binder allocates: --route-whole-device-classes"
        return "backed by a DeviceClass with capacity requests"

    def _consequence(self) -> str:
        return (
            f"The default scheduler cannot allocate those devices (they carry the device taint {_SERVED}, "
            "which only this binder's claims tolerate), so the pod stays Pending"
        )

    def _routed_names(self) -> frozenset[str]:
        if self._routed is None:
            self._routed = routing.routed_resource_names(
                self.ctx.informers.classes.items(), self.ctx.options.route_whole_devices
            )
        return self._routed

    def run(self, pods: list[Obj]) -> None:
        if not self.enabled:
            return
        ctx = self.ctx
        routed = self._routed_names()
        every = ctx.options.routing_all_namespaces
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
            decision = routing.decide(pod, routed, labels, ctx.scheduler_name, every)
            if decision.verdict is routing.Verdict.OWN_SCHEDULER:
                self._other_scheduler(pod, uid, ns, decision)
                continue
            if decision.verdict is routing.Verdict.NOT_OPTED_IN:
                self._not_opted_in(pod, uid, ns, routed, labels)
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

    def _not_opted_in(
        self, pod: Obj, uid: str, ns: str, routed: frozenset[str], ns_labels: Mapping[str, str]
    ) -> None:
        """A pod of a namespace not opted in that asks for a resource this binder serves, with the default
        scheduler: it waits (the devices are tainted); the Event says why and what to change."""
        spec = pod.get("spec") or {}
        if spec.get("schedulerName") not in (None, "", routing.DEFAULT_SCHEDULER):
            return
        resources = routing.requested_resources(pod, routed)
        if not resources:
            return
        ctx = self.ctx
        self._audited.add(uid)
        ctx.metrics.not_opted_in.inc()
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        label = routing.ROUTING_LABEL
        if pod_labels.get(label) == routing.ROUTING_DISABLED:
            why = f"the pod is labelled {label}={routing.ROUTING_DISABLED}"
            fix = f"remove that label (or set it to {routing.ROUTING_ENABLED})"
        elif ns_labels.get(label) == routing.ROUTING_DISABLED:
            why = f"namespace {ns!r} is labelled {label}={routing.ROUTING_DISABLED}"
            fix = f"remove that label from the namespace, or label the pod {label}={routing.ROUTING_ENABLED},"
        else:
            why = (
                f"namespace {ns!r} is not labelled {label}={routing.ROUTING_ENABLED} "
                "(--pod-routing-namespaces=labelled)"
            )
            fix = "label the namespace (or the pod) so,"
        message = (
            f"pod requests {', '.join(resources)} ({self._backing()}) but is not routed to "
            f"{ctx.scheduler_name!r}: {why}. {self._consequence()}; {fix} and recreate the pod."
        )
        log_decision(
            pod=f"{ns}/{pod['metadata'].get('name')}", uid=uid, result="not-opted-in", message=message
        )
        ctx.events.emit(pod, EVENT_WARNING, REASON_NOT_OPTED_IN, message)

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

    # --- one allocator per device ---------------------------------------------------------------------------

    def _served(self) -> Callable[[DeviceID], bool]:
        """Whether a device is one this binder serves: a class of a routed resource name selects it."""
        if self.snapshot is None:
            return lambda device: False
        cluster = self.snapshot.cluster()
        resolver = self.snapshot.resolver()
        classes = sorted(
            {r.name for r in (resolver.resolve(n) for n in self._routed_names()) if r is not None}
        )

        def served(device: DeviceID) -> bool:
            record = cluster.device_record(device)
            return record is not None and any(cluster.selects(c, record) for c in classes)

        return served

    def check_claims(self, claims: list[Obj]) -> None:
        """Report each allocated claim that holds a device this binder serves without tolerating its taint."""
        if not self.enabled or not claims:
            return
        served = self._served()
        ctx = self.ctx
        for claim in claims:
            key = key_of(claim)
            if key in self._foreign:
                continue
            devices = foreign_devices(claim, served)
            if not devices:
                continue
            ns, pod_name, uid = _holder(claim)
            claim_name = str((claim.get("metadata") or {}).get("name"))
            labels = [(ns, pod_name, claim_name, d) for d in devices]
            for label in labels:
                ctx.metrics.foreign_allocations.labels(*label).set(1)
            self._foreign[key] = labels
            message = (
                f"claim {ns}/{claim_name} holds {', '.join(devices)}, which {ctx.scheduler_name!r} serves, "
                "but was allocated by another scheduler: two allocators now share those devices (one "
                f"allocator per device needs the DeviceTaintRule {_SERVED} on them and DRADeviceTaintRules "
                "on). Delete the pod to free the devices; route it to the binder to place it."
            )
            log_decision(pod=f"{ns}/{pod_name}", uid=uid, result="foreign-allocation", message=message)
            if pod_name:
                pod = {"metadata": {"namespace": ns, "name": pod_name, "uid": uid}}
                ctx.events.emit(pod, EVENT_WARNING, REASON_FOREIGN_ALLOCATION, message)

    def _forget(self, key: tuple[str, str]) -> None:
        for label in self._foreign.pop(key, []):
            self.ctx.metrics.foreign_allocations.remove(*label)
