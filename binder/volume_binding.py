"""VolumeBinding's Reserve, PreBind and Unreserve in the binder: the assumed PVs and claims, their writes, and
the bounded wait for the PV controller and provisioners, which holds no bind thread.

Upstream: pkg/scheduler/framework/plugins/volumebinding/binder.go v1.37.2 (`AssumePodVolumes`,
`BindPodVolumes` = `bindAPIUpdate` then `checkBindings` polled each second until `bindTimeoutSeconds`,
`RevertAssumedPodVolumes`) and passive_assume_cache.go (an assumed object stands until the informer shows a
strictly newer resourceVersion). Upstream's PreBind blocks its binding goroutine for up to 600 s; here the
wait is a list that one poller thread checks (binder/prebind_wait.py), and the pod's binding cycle resumes
on a bind thread when its claims are bound (docs/binder.md). The pod's share stays reserved while it waits; a
failure or the timeout reverts the assumed volumes and releases the share (`on_fail`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from allocator.scheduling import pvhelpers as h
from allocator.scheduling.volumes import BIND_TIMEOUT_SECONDS, VOLUME_BINDING, PodVolumes, Storage
from binder.context import BinderContext
from binder.hints import Key
from binder.prebind_wait import PreBindWait
from kubeio.informer import resource_version
from kubeio.kube import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES

log = logging.getLogger("dra_capacity.binder")
POLL_INTERVAL = 1.0  # checkBindings' period (wait.PollUntilContextTimeout(ctx, time.Second, ...))


class VolumeBindError(Exception):
    """checkBindings found a condition that needs the pod scheduled again; the message is upstream's."""


def _affinity_mismatch(pv: str, node: str) -> str:
    return f'pv "{pv}" node affinity doesn\'t match node "{node}": no matching NodeSelectorTerms'


def prebind_message(detail: str) -> str:
    """The framework's PreBind failure text for VolumeBinding."""
    return f'running PreBind plugin "{VOLUME_BINDING}": binding volumes: {detail}'


class VolumeBinding:
    def __init__(
        self,
        ctx: BinderContext,
        submit: Callable[[Callable[[], None]], Any],
        timeout: float = BIND_TIMEOUT_SECONDS,
    ) -> None:
        self.ctx = ctx
        self.informers = informers = ctx.informers
        self.assumed_pvs: dict[str, h.Obj] = {}
        self.assumed_pvcs: dict[Key, h.Obj] = {}
        self.waiter: PreBindWait[tuple[str, PodVolumes]] = PreBindWait(
            ctx,
            submit,
            lambda key, item: self.check(key, *item),
            VolumeBindError,
            prebind_message,
            "context deadline exceeded",
            timeout,
            POLL_INTERVAL,
            "binder-volume-wait",
        )
        self.start, self.stop, self.pending = self.waiter.start, self.waiter.stop, self.waiter.pending
        for inf in (informers.pvcs, informers.pvs):
            inf.handlers.append(lambda kind, old, new: self.waiter.wake())

    # --- the assume cache (the caller holds ctx.cond) ---------------------------------------------------

    def storage(self) -> Storage:
        """The informers' objects with the assumed ones in place, unless the informer has a newer one."""
        inf = self.informers
        pvs: dict[str, h.Obj] = {h.name_of(o): o for o in inf.pvs.items()}
        pvcs: dict[Key, h.Obj] = {(h.namespace_of(o), h.name_of(o)): o for o in inf.pvcs.items()}
        for name, obj in list(self.assumed_pvs.items()):
            if name in pvs and resource_version(pvs[name]) > resource_version(obj):
                del self.assumed_pvs[name]
            else:
                pvs[name] = obj
        for key, obj in list(self.assumed_pvcs.items()):
            if key in pvcs and resource_version(pvcs[key]) > resource_version(obj):
                del self.assumed_pvcs[key]
            else:
                pvcs[key] = obj
        return Storage(
            pvcs=pvcs,
            pvs=pvs,
            classes={h.name_of(o): o for o in inf.storage_classes.items()},
            csinodes={h.name_of(o): o for o in inf.csinodes.items()},
            csidrivers={h.name_of(o): o for o in inf.csidrivers.items()},
            capacities=list(inf.capacities.items()),
        )

    def assume(self, choice: PodVolumes) -> None:
        """Reserve: AssumePodVolumes (the choice already carries the assumed objects)."""
        for b in choice.bindings:
            self.assumed_pvs[b.pv_name] = b.pv
        for p in choice.provisions:
            self.assumed_pvcs[p.claim_key] = p.pvc

    def revert(self, choice: PodVolumes | None) -> None:
        """Unreserve: RevertAssumedPodVolumes (the informers' objects count again)."""
        if choice is None:
            return
        for b in choice.bindings:
            self.assumed_pvs.pop(b.pv_name, None)
        for p in choice.provisions:
            self.assumed_pvcs.pop(p.claim_key, None)

    # --- PreBind ------------------------------------------------------------------------------------------

    def write(self, choice: PodVolumes) -> PodVolumes:
        """bindAPIUpdate: each PV with its claimRef, then each claim with its selected node; the objects as
        the API server answered. Raises ApiError (the caller reverts and retries the pod)."""
        writer = self.ctx.writer
        bindings = []
        for b in choice.bindings:
            pv = writer.update("update-pv", PERSISTENT_VOLUMES, dict(b.pv))
            bindings.append(type(b)(pv, b.pvc))
        provisions = []
        for p in choice.provisions:
            pvc = writer.update("update-pvc", PERSISTENT_VOLUME_CLAIMS, dict(p.pvc))
            provisions.append(type(p)(pvc, p.capacity))
        written = PodVolumes(choice.node, tuple(bindings), tuple(provisions))
        with self.ctx.cond:
            self.assume(written)
        return written

    def check(self, key: Key, node_name: str, written: PodVolumes) -> bool:
        """checkBindings, on the informers' objects: True once every claim is fully bound; VolumeBindError
        when the PV controller or a provisioner undid the choice."""
        inf = self.informers
        node_obj = self.ctx.informers.nodes.get(("", node_name))
        if node_obj is None:
            raise VolumeBindError(f'failed to get node "{node_name}": node "{node_name}" not found')
        labels = (node_obj.get("metadata") or {}).get("labels") or {}
        if self.ctx.informers.pods.get(key) is None:
            raise VolumeBindError(f'pod does not exist any more: pods "{key[1]}" not found')
        for b in written.bindings:
            pv = inf.pvs.get(("", b.pv_name))
            pvc = inf.pvcs.get(b.claim_key)
            if pv is None or pvc is None:
                missing = (
                    f'persistentvolume "{b.pv_name}"'
                    if pv is None
                    else f'persistentvolumeclaim "{b.claim_key[1]}"'
                )
                raise VolumeBindError(f"failed to check binding: {missing} not found")
            if resource_version(b.pv) > resource_version(pv):
                return False  # the informer has not shown our write yet
            if not h.check_node_affinity(pv, labels):
                raise VolumeBindError(_affinity_mismatch(b.pv_name, node_name))
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if not ref or not ref.get("uid"):
                raise VolumeBindError(f'ClaimRef got reset for pv "{b.pv_name}"')
            if not h.is_fully_bound(pvc):
                return False
        for p in written.provisions:
            pvc = inf.pvcs.get(p.claim_key)
            if pvc is None:
                raise VolumeBindError(
                    f'failed to check provisioning pvc: persistentvolumeclaim "{p.claim_key[1]}" not found'
                )
            if resource_version(p.pvc) > resource_version(pvc):
                return False
            annotations = (pvc.get("metadata") or {}).get("annotations") or {}
            if annotations.get(h.ANN_SELECTED_NODE) != node_name:
                raise VolumeBindError(f'provisioning failed for PVC "{p.claim_key[1]}"')
            volume = (pvc.get("spec") or {}).get("volumeName")
            if volume:
                pv = inf.pvs.get(("", volume))
                if pv is None:
                    return False  # not yet seen: the PV may be on its way
                if not h.check_node_affinity(pv, labels):
                    raise VolumeBindError(_affinity_mismatch(volume, node_name))
            if not h.is_fully_bound(pvc):
                return False
        return True

    def wait(
        self,
        key: Key,
        node_name: str,
        written: PodVolumes,
        done: Callable[[], None],
        fail: Callable[[str], None],
    ) -> None:
        """Hand the pod to the poller: `done` or `fail(message)` run on a bind thread, once."""
        self.waiter.wait(key, (node_name, written), done, fail)
