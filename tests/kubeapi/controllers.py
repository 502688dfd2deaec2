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
that. Like upstream's controllers (informer handlers feeding work queues) they look only at what a change can
concern: the changed object, the claims that name a changed pod, the dependents of a deleted owner and the
owners of a changed dependent, found through indexes kept from the store's events. A full pass over the
store after every write made each write cost O(objects).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import threading
from typing import TYPE_CHECKING, Any

from . import statuses
from .registry import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, DeleteOptions
from .resources import BY_KEY, TYPES, ResourceType
from .store import DELETED, Event, Obj, call_soon, name_of, namespace_of

if TYPE_CHECKING:
    from .double import KubeAPIServer

log = logging.getLogger("kubeapi.controllers")
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"
NAMESPACE_FINALIZER = "kubernetes"
PODS = "pods"
CLAIMS = "resourceclaims.resource.k8s.io"
NAMESPACES = "namespaces"
Ref = tuple[str, str, str]  # (type key, namespace, name)
PodKey = tuple[str, str]  # (namespace, name)


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
        # Work and indexes, fed by the store's events (any thread, under the store's lock) and read by the
        # controllers' task; `_lock` guards them and is never held across a store call.
        self._lock = threading.Lock()
        self._dirty_pods: set[PodKey] = set()  # kubelet: pods to look at
        self._dirty_claims: set[PodKey] = set()  # resourceclaim controller: (namespace, claim name)
        self._dirty_objects: set[Ref] = set()  # garbage collector
        self._terminating: set[str] = set()  # namespaces being deleted
        self._by_uid: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}  # owner uid -> objects naming it in ownerReferences
        self._claims_of_pod: dict[PodKey, set[str]] = {}  # pod -> claims naming it (reservedFor, owner)
        self._pods_of_claim: dict[PodKey, set[str]] = {}  # claim -> the pod names indexed for it

    # ------------------------------------------------------------------ lifecycle
    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._cond = asyncio.Condition()
        self._wake = asyncio.Event()
        store = self.double.store
        with store.lock:  # index what is stored already, atomically with subscribing to what comes next
            store.listeners.append(self._on_event)
            for rt in TYPES:
                if not rt.storage:
                    for obj in store.snapshot(rt):
                        self._index(rt, "ADDED", obj, None)
        self._task = loop.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _on_event(self, ev: Event) -> None:
        self._index(ev.rt, ev.type, ev.obj, ev.prev)
        if self._loop is not None:
            call_soon(self._loop, self.kick)

    def _index(self, rt: ResourceType, kind: str, obj: Obj, prev: Obj | None) -> None:
        """Record what a change concerns (the informer handlers of upstream's controllers)."""
        ns, name = namespace_of(obj), name_of(obj)
        m = _meta(obj)
        uid = str(m.get("uid") or "")
        ref: Ref = (rt.key, ns, name)
        gone = kind == DELETED
        owners = {str(r.get("uid")) for r in _owner_refs(obj) + _owner_refs(prev)}
        with self._lock:
            if gone:
                if self._by_uid.get(uid) == ref:
                    del self._by_uid[uid]
                for owner in owners:
                    deps = self._dependents.get(owner)
                    if deps is not None:
                        deps.discard(ref)
                        if not deps:
                            del self._dependents[owner]
            else:
                if uid:
                    self._by_uid[uid] = ref
                for owner in owners:
                    self._dependents.setdefault(owner, set()).add(ref)
            self._dirty_objects.add(ref)
            # a dependent changed or went: an owner in foreground deletion may be released
            for owner in owners:
                found = self._by_uid.get(owner)
                if found is not None:
                    self._dirty_objects.add(found)
            if gone or m.get("deletionTimestamp"):
                self._dirty_objects.update(self._dependents.get(uid, ()))
            if rt.key == PODS:
                if not gone:
                    self._dirty_pods.add((ns, name))
                self._dirty_claims.update((ns, c) for c in self._claims_of_pod.get((ns, name), ()))
            elif rt.key == CLAIMS:
                ckey = (ns, name)
                for pod_name in self._pods_of_claim.pop(ckey, set()):
                    claims = self._claims_of_pod.get((ns, pod_name))
                    if claims is not None:
                        claims.discard(name)
                        if not claims:
                            del self._claims_of_pod[(ns, pod_name)]
                if not gone:
                    pods = _claim_pod_names(obj)
                    if pods:
                        self._pods_of_claim[ckey] = pods
                        for pod_name in pods:
                            self._claims_of_pod.setdefault((ns, pod_name), set()).add(name)
                    self._dirty_claims.add(ckey)
            elif rt.key == NAMESPACES:
                if gone:
                    self._terminating.discard(name)
                elif m.get("deletionTimestamp"):
                    self._terminating.add(name)

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
        """Work off what the changes since the last pass concern; True when that produced more work."""
        with self._lock:
            pods, self._dirty_pods = self._dirty_pods, set()
            claims, self._dirty_claims = self._dirty_claims, set()
            objects, self._dirty_objects = self._dirty_objects, set()
            terminating = sorted(self._terminating)
        try:
            await self._kubelet(pods)
            await self._namespaces(terminating)
            await self._claims(claims)
            await self._garbage_collector(objects)
        except BaseException:
            with self._lock:  # not lost: retried with the next change
                self._dirty_pods |= pods
                self._dirty_claims |= claims
                self._dirty_objects |= objects
            raise
        with self._lock:
            return bool(self._dirty_pods or self._dirty_claims or self._dirty_objects)

    @property
    def _registry(self) -> Any:
        return self.double.api.registry

    def _peek(self, key: str, namespace: str, name: str) -> Obj | None:
        """The stored object, READ-ONLY (changes go through the registry, which works on a copy)."""
        return self.double.store.peek(BY_KEY[key], namespace, name)

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
            new = current  # the registry's own copy
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
    async def _kubelet(self, pods: set[PodKey]) -> None:
        if not self.kubelet_finishes_deletion:
            with self._lock:  # looked at once the kubelet emulation is back
                self._dirty_pods |= pods
            return
        for ns, name in sorted(pods):
            pod = self._peek(PODS, ns, name)
            if pod is None:
                continue
            m = _meta(pod)
            if m.get("deletionTimestamp") and int(m.get("deletionGracePeriodSeconds") or 0) > 0:
                await self._delete(BY_KEY[PODS], pod, grace_period_seconds=0)

    # ------------------------------------------------------------------ namespace controller
    async def _namespaces(self, terminating: list[str]) -> None:
        for name in terminating:
            ns = self._peek(NAMESPACES, "", name)
            if ns is None or not _meta(ns).get("deletionTimestamp"):
                continue
            remaining = 0
            for rt in TYPES:
                if not rt.namespaced or rt.storage:
                    continue
                items = self.double.store.snapshot(rt, name)
                for obj in items:
                    remaining += 1
                    if not _meta(obj).get("deletionTimestamp"):
                        await self._delete(rt, obj, grace_period_seconds=0)
            if remaining == 0 and NAMESPACE_FINALIZER in ((ns.get("spec") or {}).get("finalizers") or []):
                finalizers = [f for f in ns["spec"]["finalizers"] if f != NAMESPACE_FINALIZER]
                try:
                    await self.double.api.finalize_namespace(name, finalizers)
                except statuses.ApiError as e:
                    if e.code not in (404, 409):
                        raise

    # ------------------------------------------------------------------ resourceclaim controller
    async def _claims(self, keys: set[PodKey]) -> None:
        claim_rt = BY_KEY[CLAIMS]
        for ns, claim_name in sorted(keys):
            claim = self._peek(CLAIMS, ns, claim_name)
            if claim is None:
                continue
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            valid = []
            for ref in reserved:
                if ref.get("apiGroup", "") == "" and ref.get("resource") == "pods":
                    pod = self._peek(PODS, ns, str(ref.get("name")))
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
                fresh = self._peek(CLAIMS, ns, claim_name)
                if fresh is not None and has_fin and (fresh.get("status") or {}).get("allocation") is None:
                    await self._update(claim_rt, fresh, lambda new: _drop_finalizer(new, CLAIM_FINALIZER))
            elif has_fin and deleting and not valid:
                if status.get("allocation") is not None:
                    await self._update(
                        claim_rt, claim, lambda new: new["status"].pop("allocation", None), "status"
                    )
                fresh = self._peek(CLAIMS, ns, claim_name)
                if fresh is not None:
                    await self._update(claim_rt, fresh, lambda new: _drop_finalizer(new, CLAIM_FINALIZER))
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
                    pod = self._peek(PODS, ns, str(owner.get("name")))
                    if pod is not None and (_meta(pod).get("uid") != owner.get("uid") or pod_done(pod)):
                        await self._delete(claim_rt, claim)

    # ------------------------------------------------------------------ garbage collector
    def _lookup(self, uid: str) -> tuple[ResourceType, Obj] | None:
        with self._lock:
            ref = self._by_uid.get(uid)
        if ref is None:
            return None
        obj = self._peek(*ref)
        if obj is None or str(_meta(obj).get("uid")) != uid:
            return None
        return BY_KEY[ref[0]], obj

    def _dependents_of(self, owner: Obj) -> list[tuple[ResourceType, Obj]]:
        uid = _meta(owner).get("uid")
        with self._lock:
            refs = sorted(self._dependents.get(str(uid), ()))
        out = []
        for ref in refs:
            obj = self._peek(*ref)
            if obj is not None and any(r.get("uid") == uid for r in _meta(obj).get("ownerReferences") or []):
                out.append((BY_KEY[ref[0]], obj))
        return out

    async def _garbage_collector(self, refs: set[Ref]) -> None:
        def owner_present(dep_rt: ResourceType, dep: Obj, ref: dict[str, Any]) -> bool:
            found = self._lookup(str(ref.get("uid")))
            if found is None:
                return False
            owner_rt, owner = found
            return (
                not owner_rt.namespaced or not dep_rt.namespaced or namespace_of(owner) == namespace_of(dep)
            )

        for key, ns, name in sorted(refs):
            rt = BY_KEY[key]
            obj = self._peek(key, ns, name)
            if obj is None:
                continue
            m = _meta(obj)
            fins = m.get("finalizers") or []
            if m.get("deletionTimestamp") and ORPHAN_FINALIZER in fins:
                uid = m.get("uid")
                for drt, dep in self._dependents_of(obj):
                    await self._update(drt, dep, lambda new, uid=uid: _drop_owner(new, str(uid)))
                await self._update(rt, obj, lambda new: _drop_finalizer(new, ORPHAN_FINALIZER))
                continue
            if m.get("deletionTimestamp") and FOREGROUND_FINALIZER in fins:
                deps = self._dependents_of(obj)
                for drt, dep in deps:
                    if not _meta(dep).get("deletionTimestamp"):
                        await self._delete(drt, dep, propagation_policy="Foreground")
                blocking = [
                    d
                    for _drt, d in self._dependents_of(obj)
                    if any(
                        r.get("uid") == m.get("uid") and r.get("blockOwnerDeletion")
                        for r in _meta(d).get("ownerReferences") or []
                    )
                ]
                if not blocking:
                    await self._update(rt, obj, lambda new: _drop_finalizer(new, FOREGROUND_FINALIZER))
                continue
            owners = m.get("ownerReferences") or []
            if not owners or m.get("deletionTimestamp"):
                continue
            present = [r for r in owners if owner_present(rt, obj, r)]
            if not present:
                await self._delete(rt, obj)
            elif len(present) < len(owners):
                keep = [r.get("uid") for r in present]
                await self._update(rt, obj, lambda new, keep=keep: _keep_owners(new, keep))


def _owner_refs(obj: Obj | None) -> list[dict[str, Any]]:
    if obj is None:
        return []
    return [r for r in _meta(obj).get("ownerReferences") or [] if isinstance(r, dict) and r.get("uid")]


def _claim_pod_names(claim: Obj) -> set[str]:
    """The pods a claim's controller looks at: its reservedFor pods and its controlling pod."""
    names = {
        str(r.get("name"))
        for r in (claim.get("status") or {}).get("reservedFor") or []
        if isinstance(r, dict) and r.get("resource") == "pods" and r.get("apiGroup", "") == ""
    }
    names.update(str(r.get("name")) for r in _owner_refs(claim) if r.get("kind") == "Pod")
    return names


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
