"""The API writes of the bind sequence, each idempotent and conflict-aware (client-go's RetryOnConflict: on
409 `get` and try again with the fresh resourceVersion; transient failures retried a few times).

Upstream: `pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go` (`bindClaim`, `Unreserve`,
`deleteClaim`) and `pkg/scheduler/framework/plugins/defaultbinder/default_binder.go`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from binder.claims import binding_body, has_finalizer
from binder.metrics import BinderMetrics
from binder.names import DELETE_PROTECTION_FINALIZER, FENCE_ANNOTATION, FIELD_MANAGER
from kubeio.kube import PODS, RESOURCE_CLAIMS, STRATEGIC_MERGE_PATCH, ApiError, Kube, Obj, Resource

RETRIES = 5
_QUERY = {"fieldManager": FIELD_MANAGER}


class BindError(Exception):
    """A step of the sequence failed for good; the message is what the Event says."""


Guard = Callable[[], None]  # raises when this replica may not write any more (lost lease, killed)


class Writer:
    def __init__(self, kube: Kube, metrics: BinderMetrics, guard: Guard) -> None:
        self.kube = kube
        self.metrics = metrics
        self.guard = guard

    def _call(self, operation: str, fn: Callable[[], Obj], retries: int = RETRIES) -> Obj:
        """One write, retried on transient errors (not on conflicts: the caller re-reads first)."""
        delay = 0.05
        for attempt in range(retries):
            self.guard()
            try:
                return fn()
            except ApiError as exc:
                if exc.status == 409:
                    self.metrics.conflicts.labels(operation).inc()
                if not exc.transient or attempt == retries - 1:
                    raise
                self.metrics.retries.labels(operation).inc()
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def create_claim(self, body: Obj) -> Obj:
        """One POST, never retried: with generateName a lost answer may hide a created claim, and a retry
        would make a second one. The caller looks for leftovers before the next attempt."""
        ns = body["metadata"]["namespace"]
        try:
            created = self._call(
                "create-claim",
                lambda: self.kube.request("POST", RESOURCE_CLAIMS.path(ns), query=_QUERY, body=body),
                retries=1,
            )
        except ApiError:
            self.metrics.claim_creates.labels("failure").inc()
            raise
        self.metrics.claim_creates.labels("success").inc()
        return created

    def get_claim(self, namespace: str, name: str) -> Obj:
        return self._call("get-claim", lambda: self.kube.get(RESOURCE_CLAIMS, namespace, name))

    def allocate(self, claim: Obj, status: Obj, pod_uid: str) -> Obj:
        """Finalizer (if missing), then `status.allocation` + `reservedFor` via the status subresource."""
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        current = claim
        for attempt in range(RETRIES * 4):
            meta = current["metadata"]
            if meta.get("deletionTimestamp"):
                raise BindError(f"ResourceClaim {ns}/{name} is being deleted")
            allocation = (current.get("status") or {}).get("allocation")
            if allocation:
                reserved = (current.get("status") or {}).get("reservedFor") or []
                if _same_devices(allocation, status["allocation"]) and any(
                    r.get("uid") == pod_uid for r in reserved
                ):
                    return current  # our own write, whose answer was lost
                raise BindError(f"ResourceClaim {ns}/{name} got allocated elsewhere")
            try:
                if not has_finalizer(current):
                    meta["finalizers"] = [*(meta.get("finalizers") or []), DELETE_PROTECTION_FINALIZER]
                    current = self._call(
                        "add-finalizer",
                        partial(
                            self.kube.request,
                            "PUT",
                            RESOURCE_CLAIMS.path(ns, name),
                            query=_QUERY,
                            body=current,
                        ),
                    )
                body = {**current, "status": {**(current.get("status") or {}), **status}}
                return self._call(
                    "update-claim-status",
                    partial(
                        self.kube.request,
                        "PUT",
                        RESOURCE_CLAIMS.path(ns, name, "status"),
                        query=_QUERY,
                        body=body,
                    ),
                )
            except ApiError as exc:
                if exc.status != 409:
                    raise
                if attempt:
                    self.metrics.retries.labels("update-claim-status").inc()
                current = self.get_claim(ns, name)
        raise BindError(f"ResourceClaim {ns}/{name}: too many conflicts")

    def ensure_finalizer(self, claim: Obj) -> Obj:
        def add(current: Obj) -> Obj | None:
            if has_finalizer(current):
                return None
            finalizers = [*(current["metadata"].get("finalizers") or []), DELETE_PROTECTION_FINALIZER]
            return {**current, "metadata": {**current["metadata"], "finalizers": finalizers}}

        updated = self._update_claim("add-finalizer", claim, add)
        assert updated is not None  # a claim that is gone raises (gone_ok is False)
        return updated

    def fence_claim(self, claim: Obj, token: str) -> Obj | None:
        """Write `token` into the claim's FENCE_ANNOTATION (an update conditional on the resourceVersion;
        on 409 read and write again): its resourceVersion moves, so any write a deposed leader sent with an
        older one gets 409. The answer, or None when the claim is gone."""

        def fence(current: Obj) -> Obj:
            annotations = {**(current["metadata"].get("annotations") or {}), FENCE_ANNOTATION: token}
            return {**current, "metadata": {**current["metadata"], "annotations": annotations}}

        return self._update_claim("fence-claim", claim, fence, gone_ok=True)

    def _update_claim(
        self, operation: str, claim: Obj, change: Callable[[Obj], Obj | None], *, gone_ok: bool = False
    ) -> Obj | None:
        """PUT `change(current)` at the resourceVersion read (never mutating `current`); on 409 read the claim
        again and retry. `change` returning None: nothing to write, the current claim is the answer. With
        `gone_ok`, a claim that is gone is None instead of the ApiError."""
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        path = RESOURCE_CLAIMS.path(ns, name)
        current = claim
        for _ in range(RETRIES * 4):
            body = change(current)
            if body is None:
                return current
            try:
                return self._call(operation, partial(self.kube.request, "PUT", path, query=_QUERY, body=body))
            except ApiError as exc:
                if gone_ok and exc.not_found:
                    return None
                if exc.status != 409:
                    raise
            try:
                current = self.get_claim(ns, name)
            except ApiError as exc:
                if gone_ok and exc.not_found:
                    return None
                raise
        raise BindError(f"ResourceClaim {ns}/{name}: too many conflicts")

    def delete_claim(self, claim: Mapping[str, Any]) -> None:
        """Drop the finalizer (get, remove, update; again on conflict), then delete. Gone already is fine."""
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        uid = claim["metadata"].get("uid")
        current: Obj = dict(claim)
        for _ in range(RETRIES * 4):
            if not has_finalizer(current):
                break
            meta = dict(current["metadata"])
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != DELETE_PROTECTION_FINALIZER]
            body = {**current, "metadata": meta}
            try:
                current = self._call(
                    "remove-finalizer",
                    partial(
                        self.kube.request, "PUT", RESOURCE_CLAIMS.path(ns, name), query=_QUERY, body=body
                    ),
                )
            except ApiError as exc:
                if exc.not_found:
                    return
                if exc.status != 409:
                    raise
                try:
                    current = self.get_claim(ns, name)
                except ApiError as exc2:
                    if exc2.not_found:
                        return
                    raise
                if uid and current["metadata"].get("uid") != uid:
                    return  # a different claim of the same name: ours is gone
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {"uid": uid, "resourceVersion": current["metadata"].get("resourceVersion")}
        if any(preconditions.values()):
            # a deposed leader's stale delete gets 409 once anyone (the new leader's fence) wrote the claim
            options["preconditions"] = {k: v for k, v in preconditions.items() if v}
        try:
            self._call(
                "delete-claim",
                lambda: self.kube.request("DELETE", RESOURCE_CLAIMS.path(ns, name), body=options),
            )
        except ApiError as exc:
            if exc.not_found or exc.status == 409:  # gone, replaced, or written since: not ours to delete
                return
            raise

    def patch_pod_status(
        self, pod: Mapping[str, Any], patch: Obj, still_ours: Callable[[Obj], bool] | None = None
    ) -> Obj:
        """Strategic-merge patch of `pods/status`, conditional on the pod's resourceVersion: a deposed
        leader's stale patch gets 409 once anyone wrote the pod. On 409, with `still_ours`: read the pod and
        patch again, conditional on what was read, while `still_ours(current)` holds (BindError when it
        does not); without: the 409 is raised (the caller's write was best effort)."""
        meta = pod["metadata"]
        ns, name, uid = meta.get("namespace", "default"), meta["name"], meta.get("uid")
        path = PODS.path(ns, name, "status")
        rv = meta.get("resourceVersion")
        for _ in range(RETRIES * 4):
            body = {**patch, "metadata": {"resourceVersion": rv}} if rv else patch
            try:
                return self._call(
                    "patch-pod-status",
                    partial(
                        self.kube.request,
                        "PATCH",
                        path,
                        query=_QUERY,
                        body=body,
                        content_type=STRATEGIC_MERGE_PATCH,
                    ),
                )
            except ApiError as exc:
                if exc.status != 409 or still_ours is None:
                    raise
            current = self._call("get-pod", lambda: self.kube.get(PODS, ns, name))
            if current["metadata"].get("uid") != uid or not still_ours(current):
                raise BindError(f"pod {ns}/{name} changed under this binder; not patching its status")
            rv = current["metadata"].get("resourceVersion")
        raise BindError(f"pod {ns}/{name}: too many conflicts")

    def bind(
        self, pod: Mapping[str, Any], node: str, still_ours: Callable[[Obj], bool] | None = None
    ) -> None:
        """`pods/binding`, conditional on the pod's uid and resourceVersion (`pod` is the binder's latest
        view, e.g. the answer of its own status patch): a stale Binding gets 409 once anyone wrote the pod.
        On 409: bound to `node` already is our own earlier answer, lost; bound elsewhere is a BindError;
        still unbound, the Binding is sent again conditional on the pod as read, while `still_ours` holds."""
        meta = pod["metadata"]
        ns, name, uid = meta.get("namespace", "default"), meta["name"], meta.get("uid")
        rv = meta.get("resourceVersion")
        for _ in range(RETRIES * 4):
            body = binding_body(pod, node)
            if rv:
                body["metadata"]["resourceVersion"] = rv
            try:
                self._call(
                    "create-binding",
                    partial(self.kube.request, "POST", PODS.path(ns, name, "binding"), body=body),
                )
                return
            except ApiError as exc:
                if exc.status != 409:
                    raise
            current = self._call("get-pod", lambda: self.kube.get(PODS, ns, name))
            if current["metadata"].get("uid") != uid:
                raise BindError(f"pod {ns}/{name} was replaced") from None
            bound_to = (current.get("spec") or {}).get("nodeName")
            if bound_to == node:
                return  # our own Binding, whose answer was lost
            if bound_to or still_ours is None or not still_ours(current):
                raise BindError(f"pod {ns}/{name} is already bound elsewhere or changed") from None
            rv = current["metadata"].get("resourceVersion")
        raise BindError(f"pod {ns}/{name}: too many conflicts")

    def delete_pod(self, pod: Mapping[str, Any]) -> bool:
        """Delete a preemption victim, conditional on its uid (upstream's util.DeletePod): a pod of the same
        name made since is not touched. False when it is gone already or was replaced."""
        meta = pod["metadata"]
        ns, name = meta.get("namespace", "default"), meta["name"]
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if meta.get("uid"):
            options["preconditions"] = {"uid": meta["uid"]}
        try:
            self._call("delete-pod", lambda: self.kube.request("DELETE", PODS.path(ns, name), body=options))
        except ApiError as exc:
            if exc.not_found or exc.status == 409:
                return False
            raise
        return True

    def update(self, operation: str, resource: Resource, obj: Obj) -> Obj:
        """One PUT of `obj` at its resourceVersion (VolumeBinding's bindAPIUpdate): a conflict is not retried,
        as upstream retries the whole pod instead."""
        meta = obj["metadata"]
        path = resource.path(meta.get("namespace"), meta["name"])
        return self._call(operation, lambda: self.kube.request("PUT", path, query=_QUERY, body=obj))


def _same_devices(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    def devices(x: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        results = (x.get("devices") or {}).get("results") or []
        return sorted(
            (r.get("request"), r.get("driver"), r.get("pool"), r.get("device"), r.get("shareID"))
            for r in results
        )

    return devices(a) == devices(b)
