"""The parts of kube-controller-manager (and the kubelet) our components rely on, emulated inside the TEST
DOUBLE so that deletions complete as in a cluster:

* garbage collector (`pkg/controller/garbagecollector/garbagecollector.go`): a dependent whose owners are all
  gone is deleted (background); an absent owner is dropped from a dependent that still has others; the
  `orphan` finalizer strips the owner's references from its dependents; `foregroundDeletion` deletes the
  dependents first and then releases the owner;
* resourceclaim controller (`pkg/controller/resourceclaim/controller.go` syncClaim): `reservedFor` entries of
  pods that are gone, replaced (other uid) or done are removed; a claim left unreserved loses its allocation
  when it carries `resource.kubernetes.io/delete-protection`, then that finalizer; an unreserved claim owned
  by a pod that is done or replaced is deleted;
* namespace controller (`pkg/controller/namespace/deletion/namespaced_resources_deleter.go`): a terminating
  namespace's contents are deleted, then its `kubernetes` finalizer is removed;
* kubelet: a bound pod's graceful deletion is finished (a delete with grace period 0) at once, unless
  `Controllers.kubelet_finishes_deletion` is False.

They write through the registry (not over HTTP), so faults and admission webhooks do not apply to them; a
pause of the double holds them too.
Each runs after every committed change, until nothing is left to do; `KubeAPIServer.wait_idle()` waits for
that.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import TYPE_CHECKING, Any

from . import statuses
from .registry import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, DeleteOptions
from .resources import BY_KEY, TYPES, ResourceType
from .store import Event, Obj, name_of, namespace_of

if TYPE_CHECKING:
    from .double import KubeAPIServer

log = logging.getLogger("kubeapi.controllers")
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
NAMESPACE_FINALIZER = "kubernetes"


def _meta(obj: Obj) -> dict[str, Any]:
    return obj.get("metadata") or {}


def pod_done(pod: Obj) -> bool:
    """`isPodDone`: terminal phase, or deleted before it was ever scheduled."""
    phase = (pod.get("status") or {}).get("phase")
    deleted_unscheduled = bool(_meta(pod).get("deletionTimestamp")) and not (pod.get("spec") or {}).get(
        "nodeName"
    )
    return phase in ("Succeeded", "Failed") or deleted_unscheduled


class Controllers:
    def __init__(self, double: KubeAPIServer) -> None:
        self.double = double
        self.kubelet_finishes_deletion = True
        self.enabled = True
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._requested = 0
        self._done = 0
        self._cond: asyncio.Condition | None = None
        self._wake: asyncio.Event | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._cond = asyncio.Condition()
        self._wake = asyncio.Event()
        self.double.store.listeners.append(self._on_event)
        self._task = loop.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _on_event(self, _ev: Event) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.kick)

    def kick(self) -> None:
        self._requested += 1
        assert self._wake is not None
        self._wake.set()

    async def wait_idle(self) -> None:
        assert self._cond is not None
        self.kick()
        target = self._requested
        async with self._cond:
            await self._cond.wait_for(lambda: self._done >= target)

    async def _run(self) -> None:
        assert self._wake is not None and self._cond is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            target = self._requested
            await self.double.api.running.wait()
            if self.enabled:
                for _ in range(50):
                    try:
                        if not await self.sync_once():
                            break
                    except (
                        Exception
                    ):  # a controller error is retried on the next change, as upstream requeues
                        log.exception("kubeapi double: controller sync failed")
                        break
            async with self._cond:
                self._done = max(self._done, target)
                self._cond.notify_all()

    # ------------------------------------------------------------------ one pass of every controller
    async def sync_once(self) -> bool:
        changed = False
        changed |= await self._kubelet()
        changed |= await self._namespaces()
        changed |= await self._claims()
        changed |= await self._garbage_collector()
        return changed

    @property
    def _registry(self) -> Any:
        return self.double.api.registry

    def _all(self) -> list[tuple[ResourceType, Obj]]:
        out: list[tuple[ResourceType, Obj]] = []
        for rt in TYPES:
            if rt.storage:  # a second view of another type's objects
                continue
            out.extend((rt, o) for o in self.double.store.snapshot(rt))
        return out

    async def _delete(self, rt: ResourceType, obj: Obj, **options: Any) -> bool:
        try:
            pre = {"uid": _meta(obj).get("uid")}
            await self._registry.delete(
                rt, namespace_of(obj), name_of(obj), DeleteOptions(preconditions=pre, **options)
            )
        except statuses.ApiError as e:
            if e.code not in (404, 409):
                raise
            return e.code == 409
        return True

    async def _update(self, rt: ResourceType, obj: Obj, change: Any, subresource: str = "") -> bool:
        rv = _meta(obj).get("resourceVersion")

        def compute(current: Obj) -> Obj:
            new = copy.deepcopy(current)
            change(new)
            new["metadata"]["resourceVersion"] = rv
            return new

        try:
            await self._registry.update(rt, namespace_of(obj), name_of(obj), compute, subresource=subresource)
        except statuses.ApiError as e:
            if e.code not in (404, 409):
                raise
        return True

    # ------------------------------------------------------------------ kubelet
    async def _kubelet(self) -> bool:
        if not self.kubelet_finishes_deletion:
            return False
        changed = False
        pods = self.double.store.snapshot(BY_KEY["pods"])
        for pod in pods:
            m = _meta(pod)
            if m.get("deletionTimestamp") and int(m.get("deletionGracePeriodSeconds") or 0) > 0:
                changed |= await self._delete(BY_KEY["pods"], pod, grace_period_seconds=0)
        return changed

    # ------------------------------------------------------------------ namespace controller
    async def _namespaces(self) -> bool:
        changed = False
        ns_rt = BY_KEY["namespaces"]
        namespaces = self.double.store.snapshot(ns_rt)
        for ns in namespaces:
            if not _meta(ns).get("deletionTimestamp"):
                continue
            name = name_of(ns)
            remaining = 0
            for rt in TYPES:
                if not rt.namespaced or rt.storage:
                    continue
                items = self.double.store.snapshot(rt, name)
                for obj in items:
                    remaining += 1
                    if not _meta(obj).get("deletionTimestamp"):
                        changed |= await self._delete(rt, obj, grace_period_seconds=0)
            if remaining == 0 and NAMESPACE_FINALIZER in ((ns.get("spec") or {}).get("finalizers") or []):
                finalizers = [f for f in ns["spec"]["finalizers"] if f != NAMESPACE_FINALIZER]
                try:
                    await self.double.api.finalize_namespace(name, finalizers)
                except statuses.ApiError as e:
                    if e.code not in (404, 409):
                        raise
                changed = True
        return changed

    # ------------------------------------------------------------------ resourceclaim controller
    async def _claims(self) -> bool:
        changed = False
        claim_rt, pod_rt = BY_KEY["resourceclaims.resource.k8s.io"], BY_KEY["pods"]
        claims = self.double.store.snapshot(claim_rt)
        for claim in claims:
            ns = namespace_of(claim)
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            valid = []
            for ref in reserved:
                if ref.get("apiGroup", "") == "" and ref.get("resource") == "pods":
                    pod = self.double.store.get(pod_rt, ns, str(ref.get("name")))
                    if pod is None or _meta(pod).get("uid") != ref.get("uid") or pod_done(pod):
                        continue
                valid.append(ref)
            has_fin = CLAIM_FINALIZER in (_meta(claim).get("finalizers") or [])
            deleting = bool(_meta(claim).get("deletionTimestamp"))
            if len(valid) < len(reserved):

                def set_status(new: Obj, valid: list[Any] = valid, has_fin: bool = has_fin) -> None:
                    st = new.setdefault("status", {})
                    if valid:
                        st["reservedFor"] = copy.deepcopy(valid)  # entries of the stored (read-only) claim
                    else:
                        st.pop("reservedFor", None)
                        if has_fin:  # allocated by the scheduler: deallocate by clearing the allocation
                            st.pop("allocation", None)

                await self._update(claim_rt, claim, set_status, "status")
                fresh = self.double.store.get(claim_rt, ns, name_of(claim))
                if fresh is not None and has_fin and (fresh.get("status") or {}).get("allocation") is None:
                    await self._update(claim_rt, fresh, lambda new: _drop_finalizer(new, CLAIM_FINALIZER))
                changed = True
            elif has_fin and deleting and not valid:
                if status.get("allocation") is not None:
                    await self._update(
                        claim_rt, claim, lambda new: new["status"].pop("allocation", None), "status"
                    )
                fresh = self.double.store.get(claim_rt, ns, name_of(claim))
                if fresh is not None:
                    await self._update(claim_rt, fresh, lambda new: _drop_finalizer(new, CLAIM_FINALIZER))
                changed = True
            if not valid and not _meta(claim).get("deletionTimestamp"):
                owner = next(
                    (
                        r
                        for r in _meta(claim).get("ownerReferences") or []
                        if r.get("controller") and r.get("kind") == "Pod" and r.get("apiVersion") == "v1"
                    ),
                    None,
                )
                if owner is not None:
                    pod = self.double.store.get(pod_rt, ns, str(owner.get("name")))
                    if pod is not None and (_meta(pod).get("uid") != owner.get("uid") or pod_done(pod)):
                        changed |= await self._delete(claim_rt, claim)
        return changed

    # ------------------------------------------------------------------ garbage collector
    async def _garbage_collector(self) -> bool:
        changed = False
        everything = self._all()
        uids: dict[str, tuple[ResourceType, Obj]] = {
            str(_meta(o).get("uid")): (rt, o) for rt, o in everything
        }

        def owner_present(dep_rt: ResourceType, dep: Obj, ref: dict[str, Any]) -> bool:
            found = uids.get(str(ref.get("uid")))
            if found is None:
                return False
            owner_rt, owner = found
            return (
                not owner_rt.namespaced or not dep_rt.namespaced or namespace_of(owner) == namespace_of(dep)
            )

        def dependents(owner: Obj) -> list[tuple[ResourceType, Obj]]:
            uid = _meta(owner).get("uid")
            return [
                (rt, o)
                for rt, o in everything
                if any(r.get("uid") == uid for r in _meta(o).get("ownerReferences") or [])
            ]

        for rt, obj in everything:
            m = _meta(obj)
            fins = m.get("finalizers") or []
            if m.get("deletionTimestamp") and ORPHAN_FINALIZER in fins:
                uid = m.get("uid")
                for drt, dep in dependents(obj):
                    await self._update(drt, dep, lambda new, uid=uid: _drop_owner(new, str(uid)))
                await self._update(rt, obj, lambda new: _drop_finalizer(new, ORPHAN_FINALIZER))
                changed = True
                continue
            if m.get("deletionTimestamp") and FOREGROUND_FINALIZER in fins:
                deps = dependents(obj)
                for drt, dep in deps:
                    if not _meta(dep).get("deletionTimestamp"):
                        changed |= await self._delete(drt, dep, propagation_policy="Foreground")
                blocking = [
                    d
                    for _drt, d in deps
                    if any(
                        r.get("uid") == m.get("uid") and r.get("blockOwnerDeletion")
                        for r in _meta(d).get("ownerReferences") or []
                    )
                ]
                if not blocking:
                    await self._update(rt, obj, lambda new: _drop_finalizer(new, FOREGROUND_FINALIZER))
                    changed = True
                continue
            refs = m.get("ownerReferences") or []
            if not refs or m.get("deletionTimestamp"):
                continue
            present = [r for r in refs if owner_present(rt, obj, r)]
            if not present:
                changed |= await self._delete(rt, obj)
            elif len(present) < len(refs):
                keep = [r.get("uid") for r in present]
                await self._update(rt, obj, lambda new, keep=keep: _keep_owners(new, keep))
                changed = True
        return changed


def _drop_owner(obj: Obj, uid: str) -> None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
    if refs:
        obj["metadata"]["ownerReferences"] = refs
    else:
        obj["metadata"].pop("ownerReferences", None)


def _keep_owners(obj: Obj, keep: list[Any]) -> None:
    obj["metadata"]["ownerReferences"] = [
        r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") in keep
    ]


def _drop_finalizer(obj: Obj, finalizer: str) -> None:
    fins = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
    if fins:
        obj["metadata"]["finalizers"] = fins
    else:
        obj["metadata"].pop("finalizers", None)
