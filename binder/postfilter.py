"""DefaultPreemption in the binder: the PostFilter that evicts lower-priority pods for an unschedulable one,
and the nominations that hold the freed shares for it while its victims terminate.

Upstream v1.37.2: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go (`PostFilter`,
`PodEligibleToPreemptOthers`), pkg/scheduler/framework/preemption/preemption.go (`Preempt`) and executor.go
(`prepareCandidate`, `PreemptPod`), and the nominator's use in pkg/scheduler/framework/runtime/framework.go
(`addGENominatedPods`: pods nominated to a node with a priority at least the placed pod's count there). The
victims are chosen by the pure procedure of allocator/scheduling/preemption.py, the one `simulate` runs, on
the snapshot's placer; the writes' bodies are binder/preemption.py's. The caller holds the controller's lock,
except for `flush`, which runs the API writes without it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from allocator.scheduling.placement import Placement, PlacementResult, Placer
from allocator.scheduling.preemption import (
    Candidate,
    DryRunMemo,
    candidate_offset,
    find_candidates,
    freed_claims,
    ineligible_reason,
    pick_one_node,
    placer_fit,
    pod_priority,
    postfilter_message,
)
from binder import claims
from binder.context import BinderContext, log_decision
from binder.hints import TERMINAL, Key, is_allocated, pending_for, pod_uid
from binder.models import ParseCache, parse, parse_all
from binder.names import EVENT_NORMAL
from binder.preemption import (
    CONDITION_DISRUPTION_TARGET,
    EVENT_ACTION_PREEMPTING,
    EVENT_REASON_PREEMPTED,
    REASON_PREEMPTION_BY_SCHEDULER,
    disruption_target_patch,
    nominated_node_patch,
    preempted_event_message,
)
from binder.writes import BindError
from kubeio.kube import ApiError, Obj
from resourceapi.api.core_v1 import Pod
from resourceapi.api.policy_v1 import PodDisruptionBudget
from resourceapi.api.resource_v1 import ResourceClaim

log = logging.getLogger("dra_capacity.binder")

NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."


@dataclass(frozen=True)
class Nomination:
    """A pod nominated to `node` by its preemption: its uid and priority, and the victims and their claims it
    waits for (empty when the nomination was read from the pod's status, e.g. after a restart)."""

    node: str
    uid: str
    priority: int
    victims: frozenset[str] = field(default=frozenset())  # uids
    claims: frozenset[str] = field(default=frozenset())  # uids of the claims the victims' eviction frees


class Preemption:
    def __init__(self, ctx: BinderContext) -> None:
        self.ctx = ctx
        self.nominated: dict[Key, Nomination] = {}  # upstream's nominator
        self._lowest: tuple[object, int | None] = (None, None)  # (snapshot version, lowest assigned priority)
        # the uids of the claims the placer counts (binder/snapshot.py), which may lag the informers: a
        # victim's claim is released for a nomination only once the placer no longer counts it
        self.counted: Callable[[], frozenset[str]] | None = None
        self._pods: ParseCache[Pod] = ParseCache(Pod)  # the potential victims
        self._claims: ParseCache[ResourceClaim] = ParseCache(ResourceClaim)
        self.memo = DryRunMemo()  # the dry run's results per node, across attempts
        self._writes: list[Callable[[], None]] = []  # the API writes decided under the lock (`flush`)
        self.draw: Callable[[int], int] = random.randrange  # the dry run's offset (GetOffsetAndNumCandidates)

    # --- the nominations ------------------------------------------------------------------------------------

    def nominated_node(self, key: Key, obj: Obj) -> str | None:
        """The pod's nominated node: this binder's nomination, or `status.nominatedNodeName` (a nomination
        made before a restart or by the previous leader), which is adopted."""
        nom = self.nominated.get(key)
        if nom is not None and nom.uid == pod_uid(obj):
            return nom.node
        node = (obj.get("status") or {}).get("nominatedNodeName")
        if isinstance(node, str) and node:
            self.nominated[key] = Nomination(node, pod_uid(obj), _priority(obj))
            return node
        return None

    def forget(self, key: Key) -> None:
        """The pod was placed (or is gone): its nomination no longer holds anything."""
        self.nominated.pop(key, None)

    def _live(self) -> list[tuple[Key, Nomination, Pod]]:
        """The nominations of pods still pending for this binder (the others are dropped: bound, deleted,
        replaced)."""
        out = []
        for key, nom in list(self.nominated.items()):
            obj = self.ctx.informers.pods.get(key)
            pod = parse(Pod, obj) if obj is not None and pod_uid(obj) == nom.uid else None
            if obj is None or pod is None or not pending_for(obj, self.ctx.scheduler_name):
                del self.nominated[key]
                continue
            out.append((key, nom, pod))
        return out

    @contextmanager
    def holding(self, placer: Placer, key: Key, pod: Pod) -> Iterator[None]:
        """addNominatedPods: while the block places `pod`, every other pod nominated to a node with a priority
        at least `pod`'s counts there (its trial placement's devices and node resources), undone after. A
        nominated pod whose victims' claims are not all released yet holds nothing: those shares are still
        counted as the victims', and a share freed for another nominated pod is not its to take."""
        priority = pod_priority(pod)
        held: list[tuple[Pod, str, Placement]] = []
        live = [(o, nom, npod) for o, nom, npod in self._live() if o != key and nom.priority >= priority]
        unreleased = self._unreleased() if any(nom.claims for _, nom, _ in live) else frozenset()
        try:
            for _, nom, npod in live:
                if nom.claims & unreleased:
                    continue  # its victims' shares are still counted as theirs: it must not take another's
                trial = placer.place_on(npod, [], nom.node)
                if trial.result is not PlacementResult.BOUND:
                    continue
                for claim, result in zip(_claims_of(trial, nom.uid), trial.allocation, strict=True):
                    placer.count_allocation(claim, result)
                placer.pod_added(npod, nom.node)
                held.append((npod, nom.node, trial))
            yield
        finally:
            for npod, node, trial in reversed(held):
                placer.pod_removed(npod, node)
                for result in trial.allocation:
                    placer.release_allocation(result)

    def _unreleased(self) -> frozenset[str]:
        """The uids of the claims the placer counts (`counted`), else of the claims allocated as the binder
        sees them (the assume cache over the informer)."""
        if self.counted is not None:
            return self.counted()
        objs = self.ctx.assume.claims(self.ctx.informers.claims.items()).values()
        return frozenset(str((o.get("metadata") or {}).get("uid")) for o in objs if is_allocated(o))

    # --- the PostFilter -------------------------------------------------------------------------------------

    def post_filter(self, key: Key, obj: Obj, pod: Pod, placer: Placer, version: object = None) -> str:
        """DefaultPreemption's PostFilter for an unschedulable pod (inside `holding`): evict the victims on
        the chosen node and nominate it; the message to add to the FitError ("" when the pod was nominated, as
        upstream's successful PostFilter adds none)."""
        self.ctx.metrics.preemption_attempts.inc()  # every PostFilter run, as upstream's deferred Inc
        never = ineligible_reason(pod)
        if never is not None:
            return f"preemption: {never}"
        nominated = self.nominated_node(key, obj)
        if nominated is not None and self._waiting_for_victims(key, nominated, pod):
            return f"preemption: {NOT_ELIGIBLE_TERMINATING}"
        names = placer.node_names
        priority = pod_priority(pod)
        lowest = self._lowest_priority(version)
        by_node = (
            self._lower_priority_pods(priority, self._promised(key, priority))
            if lowest is not None and lowest < priority
            else {}
        )
        lower = [n for n in names if by_node.get(n)]
        chosen: Candidate | None = None
        allocated: list[ResourceClaim] = []
        if lower:
            allocated = self._allocated_claims()
            potential = placer.preemption_nodes(pod)
            offset = candidate_offset(len(potential), self.draw)
            with placer_fit(placer, pod, [], allocated) as fit:
                pdbs = self._pdbs()
                memo = None
                if fit.monotone:  # results of nodes unchanged since an earlier attempt are reused
                    budgets = tuple((b.metadata.uid, b.metadata.resource_version) for b in pdbs)
                    self.memo.begin((placer.shape_key(pod), priority, budgets), fit.node_key)
                    memo = self.memo
                candidates = find_candidates(pod, potential, by_node, pdbs, fit, offset, fit.monotone, memo)
            chosen = pick_one_node(candidates)
        if chosen is None:
            if nominated is not None:
                self._clear(key, obj)
            return postfilter_message(pod, len(names), len(names) - len(lower))
        freed = frozenset(c.metadata.uid or "" for c in freed_claims(chosen.victims, allocated)) - {""}
        self._preempt(key, obj, pod, chosen, freed)
        return ""

    def _waiting_for_victims(self, key: Key, node: str, pod: Pod) -> bool:
        """PodEligibleToPreemptOthers' terminating-pod check: a lower-priority pod on the nominated node being
        deleted by a preemption; and, for shares, a claim this nomination's eviction frees that is still
        allocated (the victim is gone, but the resourceclaim controller drops the reservation first and the
        allocation after) or still reserved for a victim."""
        priority = pod_priority(pod)
        for obj in self.ctx.informers.pods.items():
            if (obj.get("spec") or {}).get("nodeName") != node or _priority(obj) >= priority:
                continue
            if _terminating_by_preemption(obj):
                return True
        nom = self.nominated.get(key)
        if nom is None or not (nom.victims or nom.claims):
            return False
        if nom.claims & self._unreleased():
            return True  # still counted: unreserved first, deallocated or deleted after
        for claim in self.ctx.assume.claims(self.ctx.informers.claims.items()).values():
            if not is_allocated(claim):
                continue
            if (claim.get("metadata") or {}).get("uid") in nom.claims:
                return True  # still allocated: unreserved first, deallocated or deleted after
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if any(r.get("uid") in nom.victims for r in reserved):
                return True
        return False

    def _lowest_priority(self, version: object) -> int | None:
        """The lowest priority of an assigned pod (None: no pod is assigned), read once per snapshot
        `version` (None: read now): a pod at or below it has no victim anywhere, without a scan of every
        pod for each unschedulable attempt."""
        if version is not None and self._lowest[0] == version:
            return self._lowest[1]
        lowest: int | None = None
        for obj in self.ctx.informers.pods.items():
            if self.ctx.assume.node_of(obj):
                p = _priority(obj)
                lowest = p if lowest is None or p < lowest else lowest
        self._lowest = (version, lowest)
        return lowest

    def _promised(self, key: Key, priority: int) -> frozenset[str]:
        """The victims (uids) other pods of at least `priority` are nominated for: what their eviction frees
        is theirs. Upstream counts such a nominated pod on its node in the dry run (SelectVictimsOnNode's
        RunFilterPluginsWithNominatedPods); here a nominated pod whose victim's claim still holds the share
        holds nothing (`holding`), so its victims are not evicted again for another pod instead."""
        out: set[str] = set()
        for other, nom in self.nominated.items():
            if other != key and nom.priority >= priority:
                out |= nom.victims
        return frozenset(out)

    def _lower_priority_pods(
        self, priority: int, promised: frozenset[str] = frozenset()
    ) -> dict[str, list[Pod]]:
        """The potential victims by node: pods below `priority` that hold a node as the snapshot counts them
        (the assume cache's node for a pod this binder bound or is binding, whose Binding the informer has not
        shown yet), not finished (the others are never removed by SelectVictimsOnNode), and not `promised`."""
        out: dict[str, list[Pod]] = {}
        for obj in self.ctx.informers.pods.items():
            node = self.ctx.assume.node_of(obj)
            if not node or _priority(obj) >= priority or (obj.get("status") or {}).get("phase") in TERMINAL:
                continue
            if promised and pod_uid(obj) in promised:
                continue
            pod = self._pods.parse(obj)
            if pod is not None:
                pod.spec.node_name = node  # the same for one resourceVersion: the assume cache's or its own
                out.setdefault(node, []).append(pod)
        self._pods.end_pass()
        return out

    def _allocated_claims(self) -> list[ResourceClaim]:
        """The allocated claims as the binder sees them (the assume cache over the informer)."""
        objs = self.ctx.assume.claims(self.ctx.informers.claims.items()).values()
        out = [c for c in (self._claims.parse(o) for o in objs if is_allocated(o)) if c is not None]
        self._claims.end_pass()
        return out

    def _pdbs(self) -> list[PodDisruptionBudget]:
        informer = self.ctx.informers.pdbs
        return parse_all(PodDisruptionBudget, informer.items()) if informer is not None else []

    # --- the writes (executor.go) ---------------------------------------------------------------------------

    def _preempt(self, key: Key, obj: Obj, pod: Pod, chosen: Candidate, freed: frozenset[str]) -> None:
        """The decision, under the lock: the pod is nominated to the node (holding what its victims free),
        lower-priority pods nominated there lose their nomination; the API writes are queued for `flush`."""
        ctx = self.ctx
        ctx.metrics.preemption_victims.observe(len(chosen.victims))
        victims = frozenset(v.metadata.uid or "" for v in chosen.victims)
        nomination = Nomination(chosen.node, pod_uid(obj), pod_priority(pod), victims, freed)
        self.nominated[key] = nomination
        log_decision(
            pod=f"{key[0]}/{key[1]}",
            uid=pod_uid(obj),
            result="preempting",
            node=chosen.node,
            victims=[f"{v.namespace}/{v.name}" for v in chosen.victims],
        )
        demoted: list[tuple[Key, Obj]] = []
        for other, nom in list(self.nominated.items()):
            if other != key and nom.node == chosen.node and nom.priority < pod_priority(pod):
                other_obj = ctx.informers.pods.get(other)
                del self.nominated[other]
                if other_obj is not None:
                    demoted.append((other, other_obj))
        self._writes.append(lambda: self._write_preemption(key, obj, chosen, nomination, demoted))

    def flush(self) -> None:
        """Run the API writes the PostFilter decided, outside the controller's lock (upstream's executor
        runs them apart from the scheduling cycle): the nominations they write are already in force, so
        informers and binding cycles go on meanwhile. Called by the scheduling thread after each attempt."""
        while self._writes:
            self._writes.pop(0)()

    def _write_preemption(
        self, key: Key, obj: Obj, chosen: Candidate, nomination: Nomination, demoted: list[tuple[Key, Obj]]
    ) -> None:
        """Nominate the node, then each victim: DisruptionTarget, delete (uid precondition), `Preempted`
        Event; then clear the demoted pods' nominations. A failed write is logged; the pod is retried as any
        unschedulable pod is."""
        ctx = self.ctx
        try:
            if (obj.get("status") or {}).get("nominatedNodeName") != chosen.node:
                ctx.writer.patch_pod_status(obj, nominated_node_patch(chosen.node), claims.still_pending)
            for victim in chosen.victims:
                self._evict(obj, victim, chosen.node)
        except (ApiError, BindError) as exc:
            log.warning("preemption for %s/%s on %s not completed: %s", *key, chosen.node, exc)
            with ctx.cond:  # not waiting for victims that may never go: the next attempt may preempt again
                if self.nominated.get(key) == nomination:
                    self.nominated[key] = Nomination(nomination.node, nomination.uid, nomination.priority)
        for other, other_obj in demoted:
            self._write_clear(other, other_obj)

    def _evict(self, preemptor: Obj, victim: Pod, node: str) -> None:
        """PreemptPod: DisruptionTarget=True on the victim, its deletion, the Event naming the preemptor. A
        victim already being deleted gets nothing more; one already gone is skipped."""
        ctx = self.ctx
        vkey = (victim.namespace, victim.name)
        with ctx.cond:
            current = ctx.informers.pods.get(vkey)
        if current is None or pod_uid(current) != (victim.metadata.uid or ""):
            return
        if (current.get("metadata") or {}).get("deletionTimestamp"):
            return
        try:  # upstream's PatchPodStatus: a strategic merge patch, not conditional on the resourceVersion
            patch = disruption_target_patch(ctx.scheduler_name, victim.metadata.generation)
            ctx.writer.patch_pod_status(_unconditional(current), patch)
        except ApiError as exc:
            if exc.not_found:
                return
            raise
        if not ctx.writer.delete_pod(current):
            return
        ctx.events.emit(
            current,
            EVENT_NORMAL,
            EVENT_REASON_PREEMPTED,
            preempted_event_message(preemptor, node),
            action=EVENT_ACTION_PREEMPTING,
            related=preemptor,
        )

    def _clear(self, key: Key, obj: Obj) -> None:
        """The pod's nomination is gone (preemption found no node for it, or a more important pod took the
        node): forgotten now, and `status.nominatedNodeName` cleared by `flush`."""
        self.nominated.pop(key, None)
        self._writes.append(lambda: self._write_clear(key, obj))

    def _write_clear(self, key: Key, obj: Obj) -> None:
        """Clear `status.nominatedNodeName` (best effort)."""
        if not (obj.get("status") or {}).get("nominatedNodeName"):
            return
        try:
            self.ctx.writer.patch_pod_status(obj, nominated_node_patch(""), claims.still_pending)
        except (ApiError, BindError) as exc:
            log.debug("nominatedNodeName not cleared for %s/%s: %s", *key, exc)


def _claims_of(trial: Placement, uid: str) -> list[ResourceClaim]:
    """The claims of a trial placement, in the order of its allocation results (the synthesized one named
    for the hold: the core counts results, the name only keeps the claim apart)."""
    out = list(trial.user_claims)
    if trial.claim is not None:
        claim = trial.claim.model_copy()
        claim.metadata = claim.metadata.model_copy(update={"name": f"nominated-{uid[:40]}"})
        out.append(claim)
    return out


def _unconditional(obj: Obj) -> Obj:
    """The pod's identity without its resourceVersion: a write that does not wait for the latest copy."""
    return {"metadata": {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}}


def _priority(obj: Obj) -> int:
    priority = (obj.get("spec") or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def _terminating_by_preemption(obj: Obj) -> bool:
    """preemption.PodTerminatingByPreemption: being deleted, with DisruptionTarget=True by the scheduler."""
    if not (obj.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == CONDITION_DISRUPTION_TARGET:
            return bool(c.get("status") == "True" and c.get("reason") == REASON_PREEMPTION_BY_SCHEDULER)
    return False
