"""The assume cache, without a server: our writes stay visible until the informer catches up, and their
echoes are recognized."""

from __future__ import annotations

from typing import Any

from binder.assume import AssumeCache, ClaimSeen, InFlight
from binder.names import CLAIM_ANNOTATION


def pod(node: str | None = None, uid: str = "pu1", phase: str = "Pending") -> Any:
    spec: dict[str, Any] = {"schedulerName": "dra-capacity"}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": uid},
        "spec": spec,
        "status": {"phase": phase},
    }


def claim(
    rv: str, uid: str = "cu1", owner: str | None = "pu1", allocated: bool = False, name: str = "c"
) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv}
    if owner is not None:
        meta["annotations"] = {CLAIM_ANNOTATION: "true"}
        meta["ownerReferences"] = [{"kind": "Pod", "uid": owner, "controller": True}]
    status = {"allocation": {"devices": {"results": []}}} if allocated else {}
    return {"metadata": meta, "status": status}


KEY = ("ns", "p")
CLAIM_KEY = ("ns", "c")


def test_written_claim_is_newer_than_the_informer_until_it_catches_up() -> None:
    cache = AssumeCache()
    cache.assume(claim("5", allocated=True))
    assert cache.claim(CLAIM_KEY, claim("4"))["metadata"]["resourceVersion"] == "5"
    assert cache.claims([claim("4")])[CLAIM_KEY]["metadata"]["resourceVersion"] == "5"
    # an older answer never replaces a newer one
    cache.assume(claim("3"))
    assert cache.assumed_claims[CLAIM_KEY]["metadata"]["resourceVersion"] == "5"
    seen = cache.claim_event(claim("4"), claim("5", allocated=True))
    assert seen.assumed is not None and seen.assumed["metadata"]["resourceVersion"] == "5"
    assert CLAIM_KEY not in cache.assumed_claims  # caught up
    assert cache.claim(CLAIM_KEY, claim("6"))["metadata"]["resourceVersion"] == "6"


def test_older_event_keeps_the_assumed_copy() -> None:
    cache = AssumeCache()
    cache.assume(claim("5"))
    cache.claim_event(None, claim("4"))
    assert CLAIM_KEY in cache.assumed_claims


def test_deleted_claim_is_hidden_until_its_delete_event() -> None:
    cache = AssumeCache()
    cache.claim_event(None, claim("4"))
    assert cache.owned == {"pu1": {CLAIM_KEY}}
    cache.assume_deleted(claim("4"))
    assert cache.claim(CLAIM_KEY, claim("4")) is None
    assert cache.claims([claim("4")]) == {}
    assert cache.owned_claims("pu1", lambda key: claim("4")) == []
    cache.claim_event(claim("4"), None)
    assert cache.deleted_claims == {}
    assert cache.owned == {}


def test_a_newer_claim_of_the_same_name_stays_owned_when_the_old_one_goes() -> None:
    cache = AssumeCache()
    cache.claim_event(None, claim("4", uid="old"))
    cache.assume(claim("9", uid="new"))
    cache.claim_event(claim("4", uid="old"), None)
    assert cache.owned == {"pu1": {CLAIM_KEY}}
    assert cache.assumed_claims[CLAIM_KEY]["metadata"]["uid"] == "new"


def test_claim_of_a_bind_in_flight() -> None:
    cache = AssumeCache()
    cache.assume_pod(KEY, InFlight(pod(), "n1", None))
    assert cache.claim_event(None, claim("2")).in_flight
    assert not cache.claim_event(None, claim("2", owner="other")).in_flight
    assert not cache.claim_event(None, claim("2", owner=None)).in_flight


def test_own_binding_is_recognized_before_and_after_its_answer() -> None:
    cache = AssumeCache()
    cache.assume_pod(KEY, InFlight(pod(), "n1", None))
    assert cache.node_of(pod()) == "n1"  # counts on its node from Reserve on
    assert cache.pod_event(KEY, pod(), pod("n1")) == (True, True)  # echo before the answer
    cache.finish_binding(KEY, "pu1", "n1")
    assert cache.inflight == {}
    assert cache.node_of(pod()) == "n1"
    assert cache.is_bound(KEY, pod())
    assert not cache.is_bound(KEY, pod(uid="pu2"))  # a new pod of that name
    assert cache.pod_event(KEY, pod(), pod("n1")) == (False, True)
    assert cache.bound == {}  # the echo settles it


def test_someone_elses_binding_is_not_ours() -> None:
    cache = AssumeCache()
    cache.finish_binding(KEY, "pu1", "n1")
    assert cache.pod_event(KEY, pod(), pod("n2")) == (False, False)
    assert cache.pod_event(KEY, pod(uid="pu2"), pod("n1", uid="pu2")) == (False, False)


def test_gone_pod_forgets_its_binding() -> None:
    cache = AssumeCache()
    cache.finish_binding(KEY, "pu1", "n1")
    assert cache.pod_event(KEY, pod(), None) == (False, False)
    assert cache.bound == {}
    assert cache.node_of(pod()) is None


def test_allocated_claim_names_the_in_flight_one_and_unseen_ones_count() -> None:
    from resourceapi.api.resource_v1 import ResourceClaim

    model = ResourceClaim.model_validate(
        {"metadata": {"name": "pending-x", "namespace": "ns"}, "spec": {"devices": {"requests": []}}}
    )
    cache = AssumeCache()
    cache.assume_pod(KEY, InFlight(pod(), "n1", model))
    assert cache.unseen_inflight_claims(set()) == [model]
    allocated = claim("7", uid="cu9", allocated=True)
    cache.assume_allocated(KEY, allocated)
    assert model.metadata.uid == "cu9" and model.metadata.name == "c"
    assert cache.unseen_inflight_claims({"cu9"}) == []
    assert cache.unseen_inflight_claims(set()) == [model]
    cache.forget_pod(KEY)
    assert cache.unseen_inflight_claims(set()) == []


def test_a_new_cache_assumes_nothing() -> None:
    cache = AssumeCache()
    assert (cache.inflight, cache.bound, cache.assumed_claims) == ({}, {}, {})
    assert (cache.deleted_claims, cache.owned, cache.uncertain) == ({}, {}, set())
    cache.mark_uncertain("pu1")  # a pod whose claim create got no clear answer
    assert "pu1" in cache.uncertain


def test_informer_copy_newer_than_our_write_wins_before_its_event() -> None:
    # The informer's store is updated before its handler runs: a newer version there (someone else's write
    # after ours) is what the binder sees, even while our older answer is still held.
    cache = AssumeCache()
    cache.assume(claim("5", allocated=True))
    newer = claim("6")
    assert cache.claims([newer]) == {CLAIM_KEY: newer}
    assert cache.claim(CLAIM_KEY, newer) is newer
    ours = cache.claim(CLAIM_KEY, None)  # not in the store yet
    assert ours is not None and ours["metadata"]["resourceVersion"] == "5"


def test_our_write_is_seen_beside_other_claims_of_the_informer() -> None:
    cache = AssumeCache()
    written = claim("5", allocated=True)
    cache.assume(written)
    other = claim("9", uid="cu2", name="d")
    assert cache.claims([claim("4"), other]) == {CLAIM_KEY: written, ("ns", "d"): other}


def test_a_claim_we_wrote_belongs_to_its_pod_before_the_informer_shows_it() -> None:
    cache = AssumeCache()
    written = claim("5")
    cache.assume(written)
    assert cache.owned == {"pu1": {CLAIM_KEY}}
    assert cache.owned_claims("pu1", lambda key: None) == [written]
    cache.assume(claim("6", uid="cu2", owner=None, name="d"))
    assert cache.owned == {"pu1": {CLAIM_KEY}}  # a claim no pod controls is no pod's


def test_owned_claims_are_the_informers_copies_or_our_newer_writes() -> None:
    cache = AssumeCache()
    store = {CLAIM_KEY: claim("4")}
    cache.claim_event(None, store[CLAIM_KEY])
    assert cache.owned_claims("pu1", store.get) == [store[CLAIM_KEY]]
    written = claim("5", allocated=True)
    cache.assume(written)
    assert cache.owned_claims("pu1", store.get) == [written]
    assert cache.owned_claims("pu2", store.get) == []  # a pod that owns none


def test_a_written_claim_someone_else_deletes_is_gone_at_its_delete_event() -> None:
    cache = AssumeCache()
    cache.assume_pod(KEY, InFlight(pod(), "n1", None))
    written = claim("5", allocated=True)
    cache.assume(written)
    seen = cache.claim_event(written, None)
    # The event reports the write it drops. A deleted claim is never "in flight", even when its pod's bind is
    # under way: the controller then takes its allocation out of the snapshot.
    assert seen == ClaimSeen(written, False)
    assert cache.assumed_claims == {}
    assert cache.claim(CLAIM_KEY, None) is None
    assert cache.owned == {}


def test_our_delete_forgets_our_write_of_that_claim() -> None:
    cache = AssumeCache()
    written = claim("5", allocated=True)
    cache.assume(written)
    cache.assume_deleted(written)
    assert cache.assumed_claims == {}
    assert cache.claim_event(written, None).assumed is None


def test_unreserve_is_idempotent_and_safe_without_reserve() -> None:
    # Upstream's ReservePlugin.Unreserve: idempotent, and may be called even if Reserve did not succeed.
    cache = AssumeCache()
    cache.forget_pod(KEY)
    cache.assume_pod(KEY, InFlight(pod(), "n1", None))
    cache.forget_pod(KEY)
    cache.forget_pod(KEY)
    assert cache.inflight == {}
    assert cache.node_of(pod()) is None


def test_the_node_of_an_assigned_pod_is_its_spec_node() -> None:
    cache = AssumeCache()
    assert cache.node_of(pod("n2")) == "n2"
    cache.finish_binding(KEY, "pu1", "n1")
    assert cache.node_of(pod("n2")) == "n2"  # the pod's own spec over what we remember


def test_a_bound_pod_that_finishes_on_its_node_is_forgotten() -> None:
    cache = AssumeCache()
    cache.assume_pod(KEY, InFlight(pod(), "n1", None))
    assert cache.pod_event(KEY, pod(), pod("n1")) == (True, True)  # the echo came before the answer
    cache.finish_binding(KEY, "pu1", "n1")
    assert cache.bound == {KEY: ("pu1", "n1")}
    assert cache.pod_event(KEY, pod("n1"), pod("n1", phase="Succeeded")) == (False, False)
    assert cache.bound == {}
    assert not cache.is_bound(KEY, pod())


def test_a_pod_that_finished_on_a_node_we_did_not_pick_is_forgotten() -> None:
    cache = AssumeCache()
    cache.finish_binding(KEY, "pu1", "n1")
    assert cache.pod_event(KEY, pod(), pod("n2", phase="Failed")) == (False, False)
    assert cache.bound == {}


def test_a_pod_we_never_bound_can_go() -> None:
    cache = AssumeCache()
    assert cache.pod_event(KEY, pod("n1"), None) == (False, False)
    assert cache.pod_event(KEY, pod("n1"), pod("n1", phase="Succeeded")) == (False, False)
    assert cache.bound == {}


def test_a_later_update_of_a_pod_on_its_node_is_not_our_bindings_echo() -> None:
    cache = AssumeCache()
    cache.assume_pod(KEY, InFlight(pod(), "n1", None))
    cache.pod_event(KEY, pod(), pod("n1"))  # the echo, before the answer
    cache.finish_binding(KEY, "pu1", "n1")
    relabeled = pod("n1")
    relabeled["metadata"]["labels"] = {"a": "1"}
    assert cache.pod_event(KEY, pod("n1"), relabeled) == (False, False)
    assert cache.pod_event(KEY, pod(), pod()) == (False, False)  # still pending: no Binding to echo
    assert cache.bound == {KEY: ("pu1", "n1")}
