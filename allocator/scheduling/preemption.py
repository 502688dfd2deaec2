"""Preemption as kube-scheduler's DefaultPreemption PostFilter: which pods to evict, on which node.

Follows upstream v1.37.2 pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go
(`PodEligibleToPreemptOthers`, `SelectVictimsOnNode`) and pkg/scheduler/framework/preemption/preemption.go
(`pickOneNodeForPreemption`), with `FilterVictimsWithPDBViolation` (preemption/util.go) and
`MoreImportantPod` (pkg/scheduler/util/utils.go). The fit check is a callable, so the procedure is pure: the
placer-backed one (`placer_fit`) counts what the victims' claims free, shares included, and a pod whose claims
need several shares fits only when all of them are free (the allocator is all-or-nothing per pod).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from allocator.scheduling.labelselectors import selector_is_empty, selector_matches
from allocator.scheduling.placement import Placement, Placer
from resourceapi.api.core_v1 import Pod
from resourceapi.api.policy_v1 import PodDisruptionBudget
from resourceapi.api.resource_v1 import ResourceClaim

__all__ = [
    "NOT_ELIGIBLE_NEVER",
    "Candidate",
    "DryRunMemo",
    "FitsWithout",
    "candidate_offset",
    "find_candidates",
    "freed_claims",
    "ineligible_reason",
    "more_important",
    "num_candidates",
    "pick_one_node",
    "placer_fit",
    "pod_priority",
    "preemption_shown",
    "select_victims_on_node",
    "split_by_pdb_violation",
]

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
_MAX_INT32 = 2**31 - 1

FitsWithout = Callable[[Sequence[Pod]], bool]
"""Whether the preemptor fits on one node once these pods (and the claims only they hold) are gone."""


@dataclass(frozen=True)
class Candidate:
    """A node where preemption makes the pod fit: the victims, most important first, and how many of them
    evicting would violate a PodDisruptionBudget (extenderv1.Victims)."""

    node: str
    victims: tuple[Pod, ...]
    pdb_violations: int = 0
    reprieved: tuple[Pod, ...] = field(default=())  # lower-priority pods that could stay


def pod_priority(pod: Pod) -> int:
    """`spec.priority`, 0 when unset (corev1helpers.PodPriority)."""
    priority = (pod.spec.model_extra or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def _start_time(pod: Pod) -> datetime | None:
    """`status.startTime`; None stands for upstream's "now" (a pod not started yet is the latest)."""
    raw = (pod.status.model_extra or {}).get("startTime") if pod.status is not None else None
    if isinstance(raw, datetime):
        return raw
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def _before(a: datetime | None, b: datetime | None) -> bool:
    if a is None:
        return False
    return b is None or a < b


def more_important(a: Pod, b: Pod) -> bool:
    """MoreImportantPod: the higher priority; then the earlier start time."""
    pa, pb = pod_priority(a), pod_priority(b)
    if pa != pb:
        return pa > pb
    return _before(_start_time(a), _start_time(b))


def _importance_key(pod: Pod) -> tuple[int, float]:
    start = _start_time(pod)
    return (-pod_priority(pod), float("inf") if start is None else start.timestamp())


def _by_importance(pods: Sequence[Pod]) -> list[Pod]:
    """Most important first (a stable sort, as sort.Slice over MoreImportantPod gives for tie-free input)."""
    return sorted(pods, key=_importance_key)


def ineligible_reason(pod: Pod) -> str | None:
    """PodEligibleToPreemptOthers: `preemptionPolicy: Never` pods never preempt (None: eligible)."""
    if (pod.spec.model_extra or {}).get("preemptionPolicy") == "Never":
        return NOT_ELIGIBLE_NEVER
    return None


def split_by_pdb_violation(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[tuple[Pod, int]], list[Pod]]:
    """FilterVictimsWithPDBViolation: (violating pods with their count, non-violating pods), each in the
    given order. Each matching budget not yet counting the pod as disrupted loses one allowed disruption;
    a pod is violating once one of them goes below zero. A nil or empty selector matches nothing."""
    allowed = [b.status.disruptions_allowed for b in pdbs]

    def violating(pod: Pod) -> bool:
        labels = pod.metadata.labels or {}
        if not labels:
            return False
        for i, pdb in enumerate(pdbs):
            if (pdb.metadata.namespace or "default") != pod.namespace:
                continue
            selector = pdb.spec.selector
            if selector is None or selector_is_empty(selector) or not selector_matches(selector, labels):
                continue
            if pod.name in pdb.status.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                return True
        return False

    bad: list[tuple[Pod, int]] = []
    good: list[Pod] = []
    for pod in pods:
        if violating(pod):
            bad.append((pod, 1))
        else:
            good.append(pod)
    return bad, good


def select_victims_on_node(
    preemptor: Pod,
    node: str,
    pods_on_node: Sequence[Pod],
    pdbs: Sequence[PodDisruptionBudget],
    fits_without: FitsWithout,
    monotone: bool = False,
) -> Candidate | None:
    """SelectVictimsOnNode: remove every lower-priority pod; if the preemptor then fits, reprieve them one
    by one, most important first, PDB-violating ones before the others, keeping each whose return still
    lets the preemptor fit. None: the node is no candidate.

    `monotone`: the fit check never turns false when pods leave (resources, ports and DRA allocation only;
    not the inter-pod or volume filters). Then a run of reprieves is checked at once: if the preemptor fits
    with the whole run back, each greedy step before would have fitted too; else a bisection finds the first
    pod the greedy loop would fail on. The same victims, with about log2(pods) checks per victim."""
    priority = pod_priority(preemptor)
    potential = [p for p in pods_on_node if pod_priority(p) < priority]
    if not potential or not fits_without(potential):
        return None
    potential = _by_importance(potential)
    violating, non_violating = split_by_pdb_violation(potential, pdbs)
    order = [p for p, _ in violating] + non_violating
    counts = [c for _, c in violating] + [0] * len(non_violating)
    kept: list[Pod] = []  # reprieved so far
    victims: list[Pod] = []
    violations = 0

    def fits_back(back: Sequence[Pod]) -> bool:
        """Whether the preemptor fits with the reprieved pods and `back` on the node again."""
        present = {id(p) for p in kept} | {id(p) for p in back}
        return fits_without([p for p in potential if id(p) not in present])

    i = 0
    while i < len(order):
        if not monotone:
            if fits_back(order[i : i + 1]):
                kept.append(order[i])
                i += 1
                continue
            fail = i
        elif fits_back(order[i:]):
            kept.extend(order[i:])
            break
        else:
            ok, bad = i, len(order)  # order[i:ok] fits back; order[i:bad] does not
            while bad - ok > 1:
                mid = (ok + bad) // 2
                if fits_back(order[i:mid]):
                    ok = mid
                else:
                    bad = mid
            kept.extend(order[i:ok])
            fail = ok
        victims.append(order[fail])
        violations += counts[fail]
        i = fail + 1
    if violating and non_violating:
        victims = _by_importance(victims)
    return Candidate(node, tuple(victims), violations, tuple(kept))


def _earliest_start_of_highest(victims: Sequence[Pod]) -> datetime | None:
    """GetEarliestPodStartTime: the earliest start time among the highest-priority victims."""
    top = max(pod_priority(p) for p in victims)
    starts = [_start_time(p) for p in victims if pod_priority(p) == top]
    known = [s for s in starts if s is not None]
    return min(known) if known else None


def pick_one_node(candidates: Sequence[Candidate]) -> Candidate | None:
    """pickOneNodeForPreemption, criteria in upstream's order: fewest PDB violations; lowest highest victim
    priority; smallest sum of priorities (each shifted by 2^31); fewest victims; latest earliest start time
    of the highest-priority victims. Remaining ties: the first candidate (upstream: map order, at random)."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]

    def latest_start(c: Candidate) -> float:
        start = _earliest_start_of_highest(c.victims)
        return float("inf") if start is None else start.timestamp()  # no start time: "now", the latest

    scores: list[Callable[[Candidate], float]] = [
        lambda c: -c.pdb_violations,
        lambda c: -pod_priority(c.victims[0]),
        lambda c: -sum(pod_priority(p) + _MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        latest_start,
    ]
    remaining = list(candidates)
    for score in scores:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


MIN_CANDIDATE_NODES_PERCENTAGE = 10  # DefaultPreemptionArgs' defaults (pkg/scheduler/apis/config/v1)
MIN_CANDIDATE_NODES_ABSOLUTE = 100


def num_candidates(num_nodes: int) -> int:
    """calculateNumCandidates: the candidates DryRunPreemption looks for among `num_nodes` potential nodes,
    10% of them but at least 100, and at most all of them."""
    n = num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(n, MIN_CANDIDATE_NODES_ABSOLUTE), num_nodes)


def candidate_offset(num_nodes: int, draw: Callable[[int], int]) -> int:
    """GetOffsetAndNumCandidates' offset, `draw(num_nodes)` (upstream: rand.Int31n), drawn only when the
    dry run may stop before its last node; else 0 (every node is evaluated; the candidates keep the nodes'
    order, which breaks pickOneNodeForPreemption's remaining ties)."""
    return draw(num_nodes) if num_candidates(num_nodes) < num_nodes else 0


def find_candidates(
    preemptor: Pod,
    nodes: Sequence[str],
    pods_by_node: Mapping[str, Sequence[Pod]],
    pdbs: Sequence[PodDisruptionBudget],
    fits_without_on: Callable[[str], FitsWithout],
    offset: int = 0,
    monotone: bool = False,
    memo: DryRunMemo | None = None,
) -> list[Candidate]:
    """DryRunPreemption over the potential `nodes`, from `offset` on (wrapping round): each node's victims,
    for the nodes where preemption helps, until `num_candidates` are found and one of them violates no
    PodDisruptionBudget. With fewer than 100 potential nodes every one is evaluated, and `offset` only
    changes the candidates' order (upstream's: random, from GetOffsetAndNumCandidates). `monotone`: as
    `select_victims_on_node`'s; `memo`: the results of nodes unchanged since an earlier run, reused."""
    out: list[Candidate] = []
    wanted = num_candidates(len(nodes))
    non_violating = 0
    for i in range(len(nodes)):
        node = nodes[(offset + i) % len(nodes)]
        pods = pods_by_node.get(node, ())
        if not pods:
            continue  # "No preemption victims found for incoming pod"
        fits = fits_without_on(node)
        if memo is not None:
            run = partial(select_victims_on_node, preemptor, node, pods, pdbs, fits, monotone)
            c = memo.select(node, pods, run)
        else:
            c = select_victims_on_node(preemptor, node, pods, pdbs, fits, monotone)
        if c is None:
            continue
        out.append(c)
        non_violating += c.pdb_violations == 0
        if non_violating and len(out) >= wanted:
            break  # DryRunPreemption's cancel
    return out


def freed_claims(removed: Sequence[Pod], claims: Sequence[ResourceClaim]) -> list[ResourceClaim]:
    """The allocated claims that no pod would hold once `removed` are gone: every pod in `reservedFor` is
    among them (a claim shared with a pod that stays keeps its devices; one reserved for nobody too)."""
    gone = {(p.namespace, p.name) for p in removed}
    out = []
    for c in claims:
        if c.status is None or c.status.allocation is None or not c.status.reserved_for:
            continue
        ns = c.metadata.namespace or "default"
        if all(r.resource == "pods" and (ns, r.name) in gone for r in c.status.reserved_for):
            out.append(c)
    return out


class _Trial:
    """The placer's state with some pods (and the claims only they hold) taken out, changed one pod at a
    time: SelectVictimsOnNode's remove-all-then-reprieve steps each move one pod, so each costs one change
    and one filter run rather than taking every removed pod out and back. `close` restores the placer."""

    def __init__(self, placer: Placer, fits_on: Callable[[str], bool], claims: Sequence[ResourceClaim]):
        self.placer = placer
        self.fits_on = fits_on
        self.node = ""
        self.out: dict[tuple[str, str], Pod] = {}  # the pods taken out, by namespace and name
        # the claims a pod's removal may free (allocated, reserved for pods only), each with its consumers;
        # `left[i]`: how many of claim i's consumers are not taken out (0: its devices are free)
        self.claims: list[ResourceClaim] = []
        self.left: list[int] = []
        self.of_pod: dict[tuple[str, str], list[int]] = {}
        for c in claims:
            if c.status is None or c.status.allocation is None or not c.status.reserved_for:
                continue
            if any(r.resource != "pods" for r in c.status.reserved_for):
                continue  # a consumer that is no pod is never removed: the claim is never freed
            ns = c.metadata.namespace or "default"
            consumers = {(ns, r.name) for r in c.status.reserved_for}
            for key in consumers:
                self.of_pod.setdefault(key, []).append(len(self.claims))
            self.claims.append(c)
            self.left.append(len(consumers))

    def fits(self, node: str, removed: Sequence[Pod]) -> bool:
        """Whether the preemptor fits on `node` with `removed` taken out (the previous call's pods, on
        another node, are put back first)."""
        if node != self.node:
            self.close()
            self.node = node
        want = {(p.namespace, p.name): p for p in removed}
        for key in [k for k in self.out if k not in want]:
            self._put_back(key)
        for key, pod in want.items():
            if key not in self.out:
                self._take_out(key, pod)
        return self.fits_on(node)

    def close(self) -> None:
        """Every pod taken out is back, with its claims."""
        for key in list(self.out):
            self._put_back(key)

    def _take_out(self, key: tuple[str, str], pod: Pod) -> None:
        self.out[key] = pod
        self.placer.pod_removed(pod, pod.spec.node_name or "")
        for i in self.of_pod.get(key, ()):
            self.left[i] -= 1
            if self.left[i] == 0:
                status = self.claims[i].status
                assert status is not None and status.allocation is not None
                self.placer.release_allocation(status.allocation)

    def _put_back(self, key: tuple[str, str]) -> None:
        pod = self.out.pop(key)
        for i in self.of_pod.get(key, ()):
            if self.left[i] == 0:
                claim = self.claims[i]
                assert claim.status is not None and claim.status.allocation is not None
                self.placer.count_allocation(claim, claim.status.allocation)
            self.left[i] += 1
        self.placer.pod_added(pod, pod.spec.node_name or "")


class DryRunMemo:
    """select_victims_on_node's result per node, kept across PostFilter runs and reused while nothing it
    reads changed: the preemptor's shape and priority and the budgets (`begin`'s `base`), and per node what
    `key_of` says (PlacerFit.node_key: the placer's version of the node, its lower-priority pods and their
    claims). Only for a monotone fit: the inter-pod and volume filters read other nodes' pods."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self.hits = self.misses = 0
        self._base: Hashable = None
        self._entries: dict[tuple[Hashable, str], tuple[Hashable, Candidate | None]] = {}
        self.key_of: Callable[[str, Sequence[Pod]], Hashable] = lambda node, pods: None

    def begin(self, base: Hashable, key_of: Callable[[str, Sequence[Pod]], Hashable]) -> None:
        self._base, self.key_of = base, key_of
        if len(self._entries) > self.limit:
            self._entries.clear()

    def select(self, node: str, pods: Sequence[Pod], run: Callable[[], Candidate | None]) -> Candidate | None:
        """The node's result: the kept one if its key is unchanged, else `run()`'s, kept under the key
        read after it (the run's own changes undone)."""
        entry = self._entries.get((self._base, node))
        if entry is not None and entry[0] == self.key_of(node, pods):
            self.hits += 1
            return entry[1]
        self.misses += 1
        result = run()
        self._entries[(self._base, node)] = (self.key_of(node, pods), result)
        return result


class PlacerFit:
    """The placer-backed fit check, per node (`fit(node)(removed)`), over one `_Trial`; `monotone` when
    no inter-pod or volume filter applies to the preemptor (select_victims_on_node's)."""

    def __init__(self, trial: _Trial, monotone: bool) -> None:
        self.trial = trial
        self.monotone = monotone

    def __call__(self, node: str) -> FitsWithout:
        trial = self.trial
        return lambda removed: trial.fits(node, removed)

    def node_key(self, node: str, pods: Sequence[Pod]) -> Hashable:
        """What the node's dry run reads besides the preemptor and the budgets (DryRunMemo's key): the
        placer's version of the node with every trial change undone, and each pod with its claims, by uid
        and resourceVersion."""
        trial = self.trial
        trial.close()
        out = []
        for p in pods:
            claims = tuple(
                (trial.claims[i].metadata.uid, trial.claims[i].metadata.resource_version)
                for i in trial.of_pod.get((p.namespace, p.name), ())
            )
            out.append((p.metadata.uid, p.metadata.resource_version, p.spec.node_name, claims))
        return (trial.placer.serial, trial.placer.node_version(node), tuple(out))


@contextmanager
def placer_fit(
    placer: Placer, preemptor: Pod, preemptor_claims: Sequence[ResourceClaim], claims: Sequence[ResourceClaim]
) -> Iterator[PlacerFit]:
    """The fit check on the placer's own state: the preemptor's filters and DRA allocation on one node with
    the pods removed; `claims`: the allocated claims the victims may hold. The placer is restored on exit
    (and between nodes); the checks of one node share its changes, one pod at a time."""
    trial = _Trial(placer, placer.fit_check(preemptor, preemptor_claims), claims)
    try:
        yield PlacerFit(trial, placer.pod_independent(preemptor))
    finally:
        trial.close()


def evict(placer: Placer, victims: Sequence[Pod], claims: Sequence[ResourceClaim]) -> list[ResourceClaim]:
    """Take the victims and the claims only they hold out of the placer for good; returns those claims."""
    freed = freed_claims(victims, claims)
    for pod in victims:
        placer.pod_removed(pod, pod.spec.node_name or "")
    for c in freed:
        assert c.status is not None and c.status.allocation is not None
        placer.release_allocation(c.status.allocation)
    return freed


def place_after(placer: Placer, pod: Pod, claims: Sequence[ResourceClaim], node: str) -> Placement:
    """The preemptor's placement on its nominated node once the victims are gone (upstream's next cycle
    tries the nominated node first)."""
    return placer.place_on(pod, claims, node)


NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def postfilter_message(preemptor: Pod, num_nodes: int, no_victims: int) -> str:
    """What a failed PostFilter adds to the FitError (schedule_one.go appends `Diagnosis.PostFilterMsg`):
    the ineligibility, or `preemption: 0/N nodes are available: ...` over the nodes without lower-priority
    pods (`no_victims`) and those where evicting them all does not help."""
    never = ineligible_reason(preemptor)
    if never is not None:
        return f"preemption: {never}"  # DefaultPreemption.PostFilter prefixes the evaluator's message
    parts = []
    if no_victims:
        parts.append(f"{no_victims} {NO_VICTIMS}")
    if num_nodes - no_victims:
        parts.append(f"{num_nodes - no_victims} {NOT_HELPFUL}")
    return f"preemption: 0/{num_nodes} nodes are available: " + ", ".join(sorted(parts)) + "."


def preemption_shown(pod: Pod) -> bool:
    """Whether a failed preemption's message is added to the reason: pods given a priority, a priority
    class or a preemption policy (upstream adds it to every pod's; here the others' reasons stay short)."""
    extra = pod.spec.model_extra or {}
    return pod_priority(pod) != 0 or bool(extra.get("priorityClassName")) or "preemptionPolicy" in extra


def why_lines(preemptor: Pod, chosen: Candidate, candidates: Sequence[Candidate]) -> list[str]:
    """For --explain: the chosen node's victims and why them, and the candidates it was picked from."""
    priority = pod_priority(preemptor)
    lines = [
        f"preemption: node {chosen.node}: evicting "
        + ", ".join(f"{p.namespace}/{p.name} (priority {pod_priority(p)})" for p in chosen.victims)
        + f": lower priority than {priority}, and the pod does not fit while any of them stays"
    ]
    if chosen.reprieved:
        lines.append(
            "preemption: kept "
            + ", ".join(f"{p.namespace}/{p.name} (priority {pod_priority(p)})" for p in chosen.reprieved)
            + ": the pod fits with them"
        )
    if chosen.pdb_violations:
        lines.append(f"preemption: {chosen.pdb_violations} of the victims violate a PodDisruptionBudget")
    if len(candidates) > 1:
        lines.append(
            "preemption: candidates (fewest PDB violations, then lowest highest priority, lowest sum of "
            "priorities, fewest victims, latest start): "
            + "; ".join(
                f"{c.node}: {len(c.victims)} victims, highest priority {pod_priority(c.victims[0])}, "
                f"{c.pdb_violations} PDB violations"
                for c in candidates
            )
        )
    return lines
