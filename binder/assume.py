"""The assume cache: what this binder wrote or is writing, until the informers show it. Pure; no locking.

Upstream: `pkg/scheduler/util/assumecache` (claims the scheduler wrote are kept, newer than the informer's
copy, until the informer catches up) and the scheduler cache's assumed pods (a pod counts on its node from
Reserve on). So a pod is never placed twice, and a claim is never counted twice or not at all:

* in flight: placements committed in memory whose writes are under way (`InFlight`);
* bound: pods whose Binding was answered, until the informer's handler sees it (its echo is ours);
* assumed claims: the objects our writes returned, newer than the informer's until it catches up;
* deleted claims: uids we deleted, hidden from the informer's copy until its delete event;
* owned: the extended-resource claims of each pod (by the informer, and the ones we wrote);
* uncertain: pods whose claim create got no clear answer (a claim may exist the informer has not shown).

Writes go through the methods named for upstream's (`Assume`, `Restore`, `AssumePod`, `FinishBinding`,
`ForgetPod`); the collections are read-only views outside this module. The caller holds one lock around
every call (the controller's condition).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from binder.hints import TERMINAL, Key, controller_pod_uid, node_name, pod_uid
from kubeio.informer import key_of, resource_version
from resourceapi.api.resource_v1 import ResourceClaim

Obj = dict[str, Any]


@dataclass
class InFlight:
    """A placement committed in memory whose writes are under way."""

    pod: Obj
    node: str
    claim: ResourceClaim | None  # with status.allocation; its name once created
    claim_uid: str | None = None


@dataclass(frozen=True)
class ClaimSeen:
    """What the assume cache knew of a claim when its event came."""

    assumed: Obj | None  # our last write of it (before this event caught up with it)
    in_flight: bool  # it belongs to a bind under way (its allocation is counted already)


class AssumeCache:
    def __init__(self) -> None:
        self._inflight: dict[Key, InFlight] = {}
        self._bound: dict[Key, tuple[str, str]] = {}  # pod key -> (uid, node)
        self._assumed_claims: dict[Key, Obj] = {}
        self._deleted_claims: dict[str, Key] = {}  # uid -> key
        self._owned: dict[str, set[Key]] = {}  # pod uid -> its extended-resource claims
        self._uncertain: set[str] = set()

    # --- read-only views ------------------------------------------------------------------------------------

    @property
    def inflight(self) -> Mapping[Key, InFlight]:
        return MappingProxyType(self._inflight)

    @property
    def bound(self) -> Mapping[Key, tuple[str, str]]:
        return MappingProxyType(self._bound)

    @property
    def assumed_claims(self) -> Mapping[Key, Obj]:
        return MappingProxyType(self._assumed_claims)

    @property
    def deleted_claims(self) -> Mapping[str, Key]:
        return MappingProxyType(self._deleted_claims)

    @property
    def owned(self) -> Mapping[str, Set[Key]]:
        return MappingProxyType(self._owned)

    @property
    def uncertain(self) -> Set[str]:
        return frozenset(self._uncertain)

    # --- pods (the scheduler cache: AssumePod, FinishBinding, ForgetPod) ------------------------------------

    def assume_pod(self, key: Key, flight: InFlight) -> None:
        """Reserve (AssumePod): the placement counts from now on."""
        self._inflight[key] = flight

    def in_flight(self, key: Key) -> InFlight | None:
        """The placement of pod `key` whose writes are under way, if any."""
        return self._inflight.get(key)

    def finish_binding(self, key: Key, uid: str, node: str) -> None:
        """The Binding was answered (FinishBinding). Kept until the informer's handler sees it (the store may
        show it already: handlers run after the store is updated), so the echo is not taken for someone
        else's bind."""
        self._inflight.pop(key, None)
        self._bound[key] = (uid, node)

    def forget_pod(self, key: Key) -> None:
        """Unreserve (ForgetPod): the placement no longer counts. Idempotent."""
        self._inflight.pop(key, None)

    def mark_uncertain(self, uid: str) -> None:
        """Pod `uid`'s claim create got no clear answer: a claim may exist that the informer has not shown."""
        self._uncertain.add(uid)

    def is_uncertain(self, uid: str) -> bool:
        return uid in self._uncertain

    def settle_uncertain(self, uid: str) -> None:
        """A fresh list of pod `uid`'s namespace was assumed: its claims are known again."""
        self._uncertain.discard(uid)

    # --- objects (the assume cache: Assume, Restore) --------------------------------------------------------

    def assume(self, obj: Obj) -> None:
        """A claim write answered (Assume): keep the answer until the informer shows that version or a newer
        one.

        Recorded even when the informer's store already holds this version: its handler may not have run
        yet, and must recognize the event as our own write."""
        key = key_of(obj)
        if resource_version(obj) > resource_version(self._assumed_claims.get(key)):
            self._assumed_claims[key] = obj
        owner = controller_pod_uid(obj)
        if owner is not None:
            self._owned.setdefault(owner, set()).add(key)

    def restore(self, key: Key) -> None:
        """Drop our copy of claim `key` (Restore): the informer's is the one seen from now on."""
        self._assumed_claims.pop(key, None)

    def assume_allocated(self, key: Key, allocated: Obj) -> None:
        """The in-flight claim of pod `key` is created and allocated: it has a name and a uid now."""
        self.assume(allocated)
        flight = self._inflight.get(key)
        if flight is not None:
            flight.claim_uid = allocated["metadata"].get("uid")
            if flight.claim is not None:
                flight.claim.metadata.uid = flight.claim_uid
                flight.claim.metadata.name = allocated["metadata"]["name"]

    def assume_deleted(self, claim: Obj) -> None:
        """Our delete of `claim` was answered: hide it until the informer's delete event."""
        uid = str(claim["metadata"].get("uid") or "")
        if uid:
            self._deleted_claims[uid] = key_of(claim)
        self.restore(key_of(claim))

    # --- informer events ------------------------------------------------------------------------------------

    def pod_event(self, key: Key, old: Obj | None, new: Obj | None) -> tuple[bool, bool]:
        """(was in flight, is the echo of our own Binding) for a pod event; forgets what the event settles."""
        in_flight = key in self._inflight
        on_node = node_name(new)
        gone = new is None or (bool(on_node) and (new.get("status") or {}).get("phase") in TERMINAL)
        own = False
        bound = self._bound.get(key)
        if gone:
            self._bound.pop(key, None)
        elif on_node and not node_name(old):
            assert new is not None
            flight = self._inflight.get(key)
            if bound is not None and bound == (pod_uid(new), on_node):
                self._bound.pop(key, None)  # our own Binding, echoed
                own = True
            elif flight is not None and (pod_uid(flight.pod), flight.node) == (pod_uid(new), on_node):
                own = True  # our own Binding, echoed before its answer reached us
        return in_flight, own

    def claim_event(self, old: Obj | None, new: Obj | None) -> ClaimSeen:
        """Account a claim event: ownership, and the assumed copy it catches up with (dropped)."""
        obj = new if new is not None else old
        assert obj is not None
        key = key_of(obj)
        uid = str(obj["metadata"].get("uid") or "")
        owner = controller_pod_uid(obj)
        assumed = self._assumed_claims.get(key)
        if owner is not None:
            owned = self._owned.setdefault(owner, set())
            if new is None and (assumed is None or assumed["metadata"].get("uid") == uid):
                owned.discard(key)  # (a newer claim of that name we wrote stays the pod's)
                if not owned:
                    self._owned.pop(owner, None)
            elif new is not None:
                owned.add(key)
        if new is None:
            self._deleted_claims.pop(uid, None)
            if assumed is not None and assumed["metadata"].get("uid") == uid:
                self._assumed_claims.pop(key, None)
            return ClaimSeen(assumed, False)
        if assumed is not None and resource_version(new) >= resource_version(assumed):
            self._assumed_claims.pop(key, None)
        in_flight = owner is not None and any(pod_uid(f.pod) == owner for f in self._inflight.values())
        return ClaimSeen(assumed, in_flight)

    # --- views ----------------------------------------------------------------------------------------------

    def claim(self, key: Key, informer_obj: Obj | None) -> Obj | None:
        """One claim as the binder sees it: the newer of the informer's copy and our write's; None once we
        deleted it."""
        obj = informer_obj
        assumed = self._assumed_claims.get(key)
        if assumed is not None and resource_version(assumed) > resource_version(obj):
            obj = assumed
        if obj is not None and obj["metadata"].get("uid") in self._deleted_claims:
            return None
        return obj

    def claims(self, informer_objs: Iterable[Obj]) -> dict[Key, Obj]:
        """Every claim as the binder sees it (see `claim`)."""
        out = {key_of(c): c for c in informer_objs}
        for key, obj in self._assumed_claims.items():
            if resource_version(obj) > resource_version(out.get(key)):
                out[key] = obj
        if self._deleted_claims:
            gone = set(self._deleted_claims)
            out = {k: c for k, c in out.items() if c["metadata"].get("uid") not in gone}
        return out

    def owned_claims(self, uid: str, informer_get: Callable[[Key], Obj | None]) -> list[Obj]:
        """The extended-resource claims of pod `uid` (the informer's and the ones we wrote)."""
        out = []
        for key in self._owned.get(uid, ()):
            obj = self.claim(key, informer_get(key))
            if obj is not None:
                out.append(obj)
        return out

    def node_of(self, pod: Mapping[str, Any]) -> str | None:
        """The node the pod holds: its spec's, or the one we bound it to or are binding it to."""
        name = node_name(pod)
        if name:
            return name
        key = key_of(pod)
        uid = pod_uid(pod)
        bound = self._bound.get(key)
        if bound is not None and bound[0] == uid:
            return bound[1]
        flight = self._inflight.get(key)
        if flight is not None and pod_uid(flight.pod) == uid:
            return flight.node
        return None

    def unseen_inflight_claims(self, counted_uids: set[str]) -> list[ResourceClaim]:
        """The in-flight claims that are not among `counted_uids` (the allocated claims already counted)."""
        return [
            f.claim
            for f in self._inflight.values()
            if f.claim is not None and not (f.claim_uid and f.claim_uid in counted_uids)
        ]

    def is_bound(self, key: Key, pod: Mapping[str, Any]) -> bool:
        bound = self._bound.get(key)
        return bound is not None and bound[0] == pod_uid(pod)
