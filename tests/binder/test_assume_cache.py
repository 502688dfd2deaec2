"""The assume cache, without a server: our writes stay visible until the informer catches up, and their
echoes are recognized."""

from __future__ import annotations

from typing import Any

from allocator.binder.assume import AssumeCache, InFlight
from allocator.binder.names import CLAIM_ANNOTATION


def pod(node: str | None = None, uid: str = "pu1", phase: str = "Pending") -> Any:
    spec: dict[str, Any] = {"schedulerName": "dra-capacity"}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": uid},
        "spec": spec,
        "status": {"phase": phase},
    }


def claim(rv: str, uid: str = "cu1", owner: str | None = "pu1", allocated: bool = False) -> Any:
    meta: dict[str, Any] = {"name": "c", "namespace": "ns", "uid": uid, "resourceVersion": rv}
    if owner is not None:
        meta["annotations"] = {CLAIM_ANNOTATION: "true"}
        meta["ownerReferences"] = [{"kind": "Pod", "uid": owner, "controller": True}]
    status = {"allocation": {"devices": {"results": []}}} if allocated else {}
    return {"metadata": meta, "status": status}


KEY = ("ns", "p")
CLAIM_KEY = ("ns", "c")


def test_written_claim_is_newer_than_the_informer_until_it_catches_up() -> None:
    cache = AssumeCache()
    cache.claim_written(claim("5", allocated=True))
    assert cache.claim(CLAIM_KEY, claim("4"))["metadata"]["resourceVersion"] == "5"
    assert cache.claims([claim("4")])[CLAIM_KEY]["metadata"]["resourceVersion"] == "5"
    # an older answer never replaces a newer one
    cache.claim_written(claim("3"))
    assert cache.assumed_claims[CLAIM_KEY]["metadata"]["resourceVersion"] == "5"
    seen = cache.claim_event(claim("4"), claim("5", allocated=True))
    assert seen.assumed is not None and seen.assumed["metadata"]["resourceVersion"] == "5"
    assert CLAIM_KEY not in cache.assumed_claims  # caught up
    assert cache.claim(CLAIM_KEY, claim("6"))["metadata"]["resourceVersion"] == "6"


def test_older_event_keeps_the_assumed_copy() -> None:
    cache = AssumeCache()
    cache.claim_written(claim("5"))
    cache.claim_event(None, claim("4"))
    assert CLAIM_KEY in cache.assumed_claims


def test_deleted_claim_is_hidden_until_its_delete_event() -> None:
    cache = AssumeCache()
    cache.claim_event(None, claim("4"))
    assert cache.owned == {"pu1": {CLAIM_KEY}}
    cache.claim_deleted(claim("4"))
    assert cache.claim(CLAIM_KEY, claim("4")) is None
    assert cache.claims([claim("4")]) == {}
    assert cache.owned_claims("pu1", lambda key: claim("4")) == []
    cache.claim_event(claim("4"), None)
    assert cache.deleted_claims == {}
    assert cache.owned == {}


def test_a_newer_claim_of_the_same_name_stays_owned_when_the_old_one_goes() -> None:
    cache = AssumeCache()
    cache.claim_event(None, claim("4", uid="old"))
    cache.claim_written(claim("9", uid="new"))
    cache.claim_event(claim("4", uid="old"), None)
    assert cache.owned == {"pu1": {CLAIM_KEY}}
    assert cache.assumed_claims[CLAIM_KEY]["metadata"]["uid"] == "new"


def test_claim_of_a_bind_in_flight() -> None:
    cache = AssumeCache()
    cache.begin(KEY, InFlight(pod(), "n1", None))
    assert cache.claim_event(None, claim("2")).in_flight
    assert not cache.claim_event(None, claim("2", owner="other")).in_flight
    assert not cache.claim_event(None, claim("2", owner=None)).in_flight


def test_own_binding_is_recognized_before_and_after_its_answer() -> None:
    cache = AssumeCache()
    cache.begin(KEY, InFlight(pod(), "n1", None))
    assert cache.node_of(pod()) == "n1"  # counts on its node from Reserve on
    assert cache.pod_event(KEY, pod(), pod("n1")) == (True, True)  # echo before the answer
    cache.bound_ok(KEY, "pu1", "n1")
    assert cache.inflight == {}
    assert cache.node_of(pod()) == "n1"
    assert cache.is_bound(KEY, pod())
    assert not cache.is_bound(KEY, pod(uid="pu2"))  # a new pod of that name
    assert cache.pod_event(KEY, pod(), pod("n1")) == (False, True)
    assert cache.bound == {}  # the echo settles it


def test_someone_elses_binding_is_not_ours() -> None:
    cache = AssumeCache()
    cache.bound_ok(KEY, "pu1", "n1")
    assert cache.pod_event(KEY, pod(), pod("n2")) == (False, False)
    assert cache.pod_event(KEY, pod(uid="pu2"), pod("n1", uid="pu2")) == (False, False)


def test_gone_pod_forgets_its_binding() -> None:
    cache = AssumeCache()
    cache.bound_ok(KEY, "pu1", "n1")
    assert cache.pod_event(KEY, pod(), None) == (False, False)
    assert cache.bound == {}
    assert cache.node_of(pod()) is None


def test_allocated_claim_names_the_in_flight_one_and_unseen_ones_count() -> None:
    from resourceapi.resource_v1 import ResourceClaim

    model = ResourceClaim.model_validate(
        {"metadata": {"name": "pending-x", "namespace": "ns"}, "spec": {"devices": {"requests": []}}}
    )
    cache = AssumeCache()
    cache.begin(KEY, InFlight(pod(), "n1", model))
    assert cache.unseen_inflight_claims(set()) == [model]
    allocated = claim("7", uid="cu9", allocated=True)
    cache.claim_allocated(KEY, allocated)
    assert model.metadata.uid == "cu9" and model.metadata.name == "c"
    assert cache.unseen_inflight_claims({"cu9"}) == []
    assert cache.unseen_inflight_claims(set()) == [model]
    cache.failed(KEY)
    assert cache.unseen_inflight_claims(set()) == []
