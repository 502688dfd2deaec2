"""The takeover fence: a new leader moves the resourceVersion of every claim a deposed leader may still write.

A lease check before a write is no fence: a leader frozen between its check and its write (SIGSTOP, a long
GC pause, a partition) sends that write after the lease has passed on. Every binder write that could
conflict is conditional (a resourceVersion or uid precondition: `writes.py`), so a stale write fails once
the new leader has written the same object. What per-object preconditions cannot see is an allocation
decided on a stale snapshot: the deposed leader's `status.allocation` write on a claim it created, which the
new leader has not touched, would land and double-book shares the new leader has since given away.

So, on taking the lease and before placing anything, the new leader writes a fencing token
(`dra-capacity.io/fenced-by`) into every extended-resource claim controlled by a pod still pending for this
binder: the only claims a deposed leader has writes in flight for (it writes nothing for a pod once its
Binding landed). Each answer goes into the assume cache, so the new leader's view of those claims is at
least as new as its own write, and any write sent before it (with an older resourceVersion) gets 409. A
claim the deposed leader creates after the fence stays unallocated (its next write checks the lease and
stops) and is deleted as a leftover, as any unallocated leftover is. Test:
tests/binder/test_fencing.py.
"""

from __future__ import annotations

import logging
import time

from binder.context import BinderContext
from binder.hints import controller_pod_uid, pending_for, pod_uid
from binder.snapshot import Snapshot
from kubeio.informer import key_of
from kubeio.kube import ApiError, Obj

log = logging.getLogger("dra_capacity.binder")


def in_progress_claims(ctx: BinderContext) -> list[Obj]:
    """Extended-resource claims controlled by a pod pending for this binder (caller holds the lock)."""
    pending = {pod_uid(p) for p in ctx.informers.pods.items() if pending_for(p, ctx.scheduler_name)}
    out = []
    for claim in ctx.informers.claims.items():
        owner = controller_pod_uid(claim)
        if owner is not None and owner in pending:
            out.append(ctx.assume.claim(key_of(claim), claim) or claim)
    return out


def fence(ctx: BinderContext, snapshot: Snapshot) -> int:
    """Write the fencing token into every in-progress claim; how many were written. Raises `Stopped` when
    this replica loses the lease meanwhile."""
    with ctx.cond:
        claims = in_progress_claims(ctx)
    token = f"{ctx.options.instance or 'binder'}/{time.time_ns()}"
    written = 0
    for claim in claims:
        try:
            answer = ctx.writer.fence_claim(claim, token)
        except ApiError as exc:
            log.warning("claim %s/%s not fenced: %s", *key_of(claim), exc)
            continue
        if answer is None:
            continue
        written += 1
        with ctx.cond:
            ctx.assume.assume(answer)
            snapshot.claim_changed(key_of(answer))
    if written:
        log.info("fenced %d in-progress claims on taking the lease", written)
    return written
