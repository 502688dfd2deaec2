"""The generic registry: create, update (PUT and PATCH), delete, with system metadata, optimistic
concurrency, finalizers and graceful deletion, as
`staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`
and `staging/src/k8s.io/apiserver/pkg/registry/rest/{create,update,delete}.go` do them.

Admission is passed in as two hooks so that the same path serves HTTP requests (with webhooks) and the
double's own controllers and seeds (without): `mutate` runs before the strategy prepares the object,
`validate` after native validation, right before the write.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from . import statuses, strategies
from .codec import clone
from .resources import BY_KEY, ResourceType
from .store import Obj, Store, name_of, namespace_of, rv_of

MutateHook = Callable[[Obj, Obj | None], Awaitable[Obj]]
ValidateHook = Callable[[Obj | None, Obj | None], Awaitable[None]]

# staging/src/k8s.io/apiserver/pkg/storage/names/generate.go
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_NAME_LENGTH = 63
RANDOM_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = MAX_NAME_LENGTH - RANDOM_LENGTH
GENERATE_NAME_ATTEMPTS = 8
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"


def generate_name(base: str) -> str:
    return base[:MAX_GENERATED_NAME_LENGTH] + "".join(
        random.choice(NAME_ALPHABET) for _ in range(RANDOM_LENGTH)
    )


@dataclass
class DeleteOptions:
    propagation_policy: str | None = None
    grace_period_seconds: int | None = None
    preconditions: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False

    @staticmethod
    def from_body(body: Any, query: dict[str, str]) -> DeleteOptions:
        opts = body if isinstance(body, dict) else {}
        grace = opts.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        return DeleteOptions(
            propagation_policy=opts.get("propagationPolicy") or query.get("propagationPolicy"),
            grace_period_seconds=int(grace) if grace is not None else None,
            preconditions=dict(opts.get("preconditions") or {}),
            dry_run=bool(opts.get("dryRun")) or "dryRun" in query,
        )


@dataclass
class DeleteResult:
    obj: Obj
    deleted: bool  # False: still present (finalizers or graceful deletion)


class Registry:
    """Writes with the semantics of the generic store; reads go straight to `Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # The clock of creationTimestamp and deletionTimestamp (a test may replace it).
        self.now = strategies.now_rfc3339

    # ------------------------------------------------------------------ helpers
    def check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        """The NamespaceLifecycle admission plugin
        (`plugin/pkg/admission/namespace/lifecycle/admission.go`)."""
        if not rt.namespaced:
            return
        ns = self.store.peek(BY_KEY["namespaces"], "", namespace)  # read-only
        if ns is None:
            raise statuses.namespace_not_found(namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp") and rt.key not in (
            "events",
            "events.events.k8s.io",
        ):
            raise statuses.forbidden(
                rt,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )

    @staticmethod
    def _strip_system_fields(obj: Obj) -> None:
        m = strategies.meta(obj)
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
            "generation",
        ):
            m.pop(k, None)

    # ------------------------------------------------------------------ create
    async def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Obj,
        *,
        mutate: MutateHook | None = None,
        validate: ValidateHook | None = None,
        dry_run: bool = False,
    ) -> Obj:
        obj = clone(body)
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        m = strategies.meta(obj)
        if rt.namespaced:
            m["namespace"] = namespace
        else:
            m.pop("namespace", None)
        if m.get("resourceVersion"):
            raise statuses.bad_request("resourceVersion should not be set on objects to be created")
        self.check_namespace(rt, namespace, str(m.get("name") or ""))
        if mutate is not None:
            obj = await mutate(obj, None)
            m = strategies.meta(obj)
        self._strip_system_fields(obj)
        strategies.prepare_for_create(rt, obj)
        m["uid"] = str(uuid.uuid4())
        m["creationTimestamp"] = self.now()
        generated = not m.get("name") and bool(m.get("generateName"))
        if generated:
            m["name"] = generate_name(str(m["generateName"]))
        errs = strategies.validate_create(rt, obj)
        if errs:
            raise statuses.invalid(rt, str(m.get("name") or ""), errs)
        if validate is not None:
            await validate(obj, None)
        if dry_run:
            return obj
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            try:
                return self.store.create(rt, obj, adopt=True)  # refused before it is stored, or ours
            except statuses.ApiError as e:
                if not generated or e.reason != "AlreadyExists" or attempt == GENERATE_NAME_ATTEMPTS - 1:
                    raise
                m["name"] = generate_name(str(m["generateName"]))
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ update
    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        compute: Callable[[Obj], Obj],
        *,
        subresource: str = "",
        mutate: MutateHook | None = None,
        validate: ValidateHook | None = None,
        dry_run: bool = False,
        retries: int = 10,
        compute_copies: bool = False,
    ) -> Obj:
        """GuaranteedUpdate: read, compute the new object from the current one, write if unchanged since.

        A body carrying metadata.resourceVersion is a precondition (stale: 409 Conflict); without one the
        write is retried on a concurrent change, as unconditional updates and patches are upstream.
        `compute` gets its own copy of the current object, or with `compute_copies` the stored object itself
        (read-only: a PUT body or a patch result is a new object anyway).
        """
        for _ in range(retries):
            old = self.store.peek(rt, namespace, name)  # READ-ONLY: the stored object
            if old is None:
                raise statuses.not_found(rt, name)
            new = compute(old if compute_copies else clone(old))
            new["apiVersion"], new["kind"] = rt.api_version, rt.kind
            nm = strategies.meta(new)
            if name_of(new) and name_of(new) != name:
                raise statuses.bad_request(
                    f"the name of the object ({name_of(new)}) does not match the name on the URL ({name})"
                )
            nm["name"] = name
            if rt.namespaced:
                if namespace_of(new) and namespace_of(new) != namespace:
                    raise statuses.bad_request(
                        "the namespace of the provided object does not match the namespace sent on the "
                        "request"
                    )
                nm["namespace"] = namespace
            precondition = nm.get("resourceVersion")
            if precondition and str(precondition) != str(strategies.meta(old).get("resourceVersion")):
                raise statuses.stale(rt, name)
            if mutate is not None:
                new = await mutate(new, old)
                nm = strategies.meta(new)
            om = strategies.meta(old)
            for k in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
                if k in om:
                    nm[k] = om[k]
                else:
                    nm.pop(k, None)
            nm.pop("selfLink", None)
            nm.pop("managedFields", None)
            if not nm.get("uid"):
                nm["uid"] = om.get("uid")
            if subresource == "status":
                strategies.prepare_for_status_update(rt, new, old)
            elif subresource == "":
                strategies.prepare_for_update(rt, new, old)
            # other subresources (pods/binding) write through the store as their REST handler computed
            nm = strategies.meta(new)
            nm["resourceVersion"] = om.get("resourceVersion")
            errs = strategies.validate_update(rt, new, old, subresource)
            if errs:
                raise statuses.invalid(rt, name, errs)
            if validate is not None:
                await validate(new, old)
            if dry_run:
                return new
            if new == old:
                return clone(old)  # a no-op update writes nothing and bumps no resourceVersion
            try:
                if (
                    nm.get("deletionTimestamp")
                    and not nm.get("finalizers")
                    and not self._graceful_pending(rt, new)
                ):
                    self.store.remove(rt, namespace, name, expect_rv=rv_of(old))
                    return new
                return self.store.replace(rt, new, rv_of(old), adopt=True)
            except statuses.ApiError as e:
                if e.reason != "Conflict" or precondition:
                    raise
        raise statuses.stale(rt, name)

    @staticmethod
    def _graceful_pending(rt: ResourceType, obj: Obj) -> bool:
        return rt.key == "pods" and int(strategies.meta(obj).get("deletionGracePeriodSeconds") or 0) > 0

    # ------------------------------------------------------------------ delete
    @staticmethod
    def check_preconditions(rt: ResourceType, obj: Obj, pre: dict[str, Any]) -> None:
        """`rest.BeforeDelete`: a Conflict on the *kind* (`schema.GroupResource{Group, Resource: Kind}`), as a
        real v1.37.2 answers (calibrated by tests/kubeapi/test_verbs.py)."""
        m = strategies.meta(obj)
        name = name_of(obj)
        details = (
            {"name": name, "group": rt.group, "kind": rt.kind}
            if rt.group
            else {"name": name, "kind": rt.kind}
        )
        prefix = f'Operation cannot be fulfilled on {rt.qualified_kind} "{name}"'
        if pre.get("uid") and pre["uid"] != m.get("uid"):
            raise statuses.ApiError(
                409,
                "Conflict",
                f"{prefix}: the UID in the precondition ({pre['uid']}) does not match the UID in record "
                f"({m.get('uid')}). The object might have been deleted and then recreated",
                details,
            )
        if pre.get("resourceVersion") and str(pre["resourceVersion"]) != str(m.get("resourceVersion")):
            raise statuses.ApiError(
                409,
                "Conflict",
                f"{prefix}: the ResourceVersion in the precondition ({pre['resourceVersion']}) does not "
                f"match the ResourceVersion in record ({m.get('resourceVersion')}). "
                "The object might have been modified",
                details,
            )

    def _pod_grace(self, obj: Obj, requested: int | None) -> int:
        """`podStrategy.CheckGracefulTermination`: unscheduled or terminal pods go at once."""
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(requested, 0)
        return int(spec.get("terminationGracePeriodSeconds", 30))

    def _keep_deleting(self, rt: ResourceType, new: Obj, old: Obj, dry_run: bool) -> DeleteResult | None:
        """Store `new`, the object kept while it is deleted (deletionTimestamp, finalizers); None on a
        conflict, which the caller retries from a fresh read."""
        if dry_run:
            return DeleteResult(new, False)
        if new == old:
            return DeleteResult(old, False)
        try:
            return DeleteResult(self.store.replace(rt, new, rv_of(old)), False)
        except statuses.ApiError as e:
            if e.reason != "Conflict":
                raise
            return None

    async def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        options: DeleteOptions,
        *,
        validate: ValidateHook | None = None,
    ) -> DeleteResult:
        for _ in range(10):
            old = self.store.get(rt, namespace, name)
            if old is None:
                raise statuses.not_found(rt, name)
            self.check_preconditions(rt, old, options.preconditions)
            if validate is not None:
                await validate(None, old)
            new = clone(old)
            m = strategies.meta(new)
            finalizers = list(m.get("finalizers") or [])
            policy = options.propagation_policy
            if policy not in (None, "Orphan", "Foreground", "Background"):
                raise statuses.bad_request(f"unsupported propagationPolicy: {policy!r}")
            if policy == "Orphan" and ORPHAN_FINALIZER not in finalizers:
                finalizers.append(ORPHAN_FINALIZER)
            if policy == "Foreground" and FOREGROUND_FINALIZER not in finalizers:
                finalizers.append(FOREGROUND_FINALIZER)
            grace = 0
            if rt.key == "pods":
                grace = self._pod_grace(old, options.grace_period_seconds)
                if m.get("deletionTimestamp") and int(m.get("deletionGracePeriodSeconds") or 0) <= grace:
                    grace = int(m.get("deletionGracePeriodSeconds") or 0) if grace else 0
            if rt.key == "namespaces":
                if not m.get("deletionTimestamp"):
                    m["deletionTimestamp"] = self.now()
                    m["deletionGracePeriodSeconds"] = 0
                    new.setdefault("status", {})["phase"] = "Terminating"
                kept = self._keep_deleting(rt, new, old, options.dry_run)
                if kept is None:
                    continue  # a conflict: read again
                return kept
            if finalizers or grace > 0:
                if not m.get("deletionTimestamp"):
                    m["deletionTimestamp"] = self.now()
                    if m.get("generation"):
                        m["generation"] = int(m["generation"]) + 1
                m["deletionGracePeriodSeconds"] = grace
                if finalizers:
                    m["finalizers"] = finalizers
                # Kept with deletionTimestamp until the finalizers are gone or the grace period is over.
                kept = self._keep_deleting(rt, new, old, options.dry_run)
                if kept is None:
                    continue  # a conflict: read again
                return kept
            if options.dry_run:
                return DeleteResult(old, True)
            try:
                expect = rv_of(old)
                if int(strategies.meta(old).get("deletionGracePeriodSeconds") or 0) > 0:
                    # Finishing a graceful deletion: BeforeDelete shortens the grace period on the stored
                    # object (a MODIFIED event with deletionGracePeriodSeconds 0), then it is removed.
                    final = clone(old)
                    strategies.meta(final)["deletionGracePeriodSeconds"] = 0
                    expect = rv_of(self.store.replace(rt, final, expect))
                return DeleteResult(self.store.remove(rt, namespace, name, expect_rv=expect), True)
            except statuses.ApiError as e:
                if e.reason != "Conflict":
                    raise
        raise statuses.stale(rt, name)
