"""The binder's pure functions on JSON (binder.claims), called directly: which leftover claim a pod
may resume (the single node an allocation is pinned to, the order among several leftovers, the claim name in
the pod's status), the PodScheduled=False condition's timestamp, and the bodies' edge cases. Bodies built from
a real placement are in test_bind_bodies.py."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from allocator.scheduling.placement import Placement, PlacementResult
from allocator.scheduling.synthesis import ExtendedOutcome
from binder.claims import (
    LeftoverAction,
    allocated_node,
    binding_body,
    claim_create_body,
    classify_leftovers,
    condition_is,
    extended_status_patch,
    has_finalizer,
    is_extended_claim_of,
    now_rfc3339,
    pod_claim_status_name,
    reserved_for,
    still_pending,
    unbound_naming,
    unschedulable_condition_patch,
)
from binder.names import CLAIM_ANNOTATION, DELETE_PROTECTION_FINALIZER
from resourceapi.api.core_v1 import Pod
from resourceapi.api.resource_v1 import ResourceClaim

UID = "0a1b2c3d-0000-4000-8000-000000000000"
NAME_IN_N1 = {"key": "metadata.name", "operator": "In", "values": ["n1"]}


def with_selector(selector: Any) -> dict[str, Any]:
    return {"status": {"allocation": {"nodeSelector": selector}}}


def with_term(term: dict[str, Any]) -> dict[str, Any]:
    return with_selector({"nodeSelectorTerms": [term]})


def claim(
    name: str,
    created: str,
    *,
    node: str | None = "n1",
    reserved: str | None = UID,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "creationTimestamp": created,
        "annotations": {CLAIM_ANNOTATION: "true"},
        "ownerReferences": [{"kind": "Pod", "name": "p", "uid": UID, "controller": True}],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:10:00Z"
    status: dict[str, Any] = {}
    if node is not None:
        status["allocation"] = {
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            }
        }
    if reserved is not None:
        status["reservedFor"] = [{"resource": "pods", "name": "p", "uid": reserved}]
    return {"metadata": meta, "status": status}


def names(claims: tuple[dict[str, Any], ...]) -> list[str]:
    return [c["metadata"]["name"] for c in claims]


def test_allocated_node_reads_the_single_metadata_name_field() -> None:
    assert allocated_node(with_term({"matchFields": [NAME_IN_N1]})) == "n1"


@pytest.mark.parametrize(
    ("case", "claim_obj"),
    [
        ("no status", {}),
        ("no allocation", {"status": {}}),
        ("no node selector", {"status": {"allocation": {}}}),
        ("no terms", with_selector({"nodeSelectorTerms": []})),
        (
            "two terms",
            with_selector(
                {"nodeSelectorTerms": [{"matchFields": [NAME_IN_N1]}, {"matchFields": [NAME_IN_N1]}]}
            ),
        ),
        (
            "a matchExpressions beside the field",
            with_term(
                {
                    "matchFields": [NAME_IN_N1],
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                }
            ),
        ),
        ("zero fields", with_term({"matchFields": []})),
        ("two fields", with_term({"matchFields": [NAME_IN_N1, NAME_IN_N1]})),
        ("another key", with_term({"matchFields": [{**NAME_IN_N1, "key": "metadata.namespace"}]})),
        ("NotIn", with_term({"matchFields": [{**NAME_IN_N1, "operator": "NotIn"}]})),
        ("several values", with_term({"matchFields": [{**NAME_IN_N1, "values": ["n1", "n2"]}]})),
        ("no values", with_term({"matchFields": [{**NAME_IN_N1, "values": []}]})),
    ],
)
def test_allocated_node_rejects_anything_but_one_node_by_name(case: str, claim_obj: dict[str, Any]) -> None:
    assert allocated_node(claim_obj) is None, case


def test_the_oldest_eligible_claim_is_kept_and_the_newer_deleted() -> None:
    older = claim("older", "2026-01-01T00:00:00Z")
    newer = claim("newer", "2026-01-01T00:05:00Z")
    out = classify_leftovers([newer, older], UID, lambda n: True)
    assert out.action is LeftoverAction.RESUME
    assert out.keep is not None and out.keep["metadata"]["name"] == "older"
    assert names(out.delete) == ["newer"]


@pytest.mark.parametrize(
    ("case", "earlier"),
    [
        ("being deleted", {"deleting": True}),
        ("not reserved for the pod", {"reserved": "another-uid"}),
        ("not allocated", {"node": None}),
        ("on a node that no longer fits", {"node": "gone"}),
    ],
)
def test_an_ineligible_claim_that_sorts_earlier_is_skipped_for_a_later_eligible_one(
    case: str, earlier: dict[str, Any]
) -> None:
    first = claim("first", "2026-01-01T00:00:00Z", **earlier)
    second = claim("second", "2026-01-01T00:05:00Z")
    out = classify_leftovers([first, second], UID, lambda n: n == "n1")
    assert out.action is LeftoverAction.RESUME, case
    assert out.keep is not None and out.keep["metadata"]["name"] == "second"
    assert names(out.delete) == ["first"]


def test_without_a_node_check_any_pinned_node_is_resumed() -> None:
    out = classify_leftovers([claim("only", "2026-01-01T00:00:00Z", node="n9")], UID)
    assert out.action is LeftoverAction.RESUME and out.delete == ()


def test_no_eligible_claim_deletes_every_leftover_in_the_order_found() -> None:
    found = [claim("b", "2026-01-01T00:05:00Z", node=None), claim("a", "2026-01-01T00:00:00Z", deleting=True)]
    out = classify_leftovers(found, UID, lambda n: True)
    assert out.action is LeftoverAction.DELETE and out.keep is None
    assert names(out.delete) == ["b", "a"]


def test_a_leftover_needs_the_annotation_and_a_controller_reference_to_the_pod() -> None:
    good = claim("c", "2026-01-01T00:00:00Z")
    assert is_extended_claim_of(good, UID)
    assert not is_extended_claim_of(good, "other-uid")
    no_annotation = {**good, "metadata": {**good["metadata"], "annotations": {CLAIM_ANNOTATION: "false"}}}
    assert not is_extended_claim_of(no_annotation, UID)
    for ref in (
        {"kind": "Pod", "uid": UID, "controller": False},
        {"kind": "Pod", "uid": UID},
        {"kind": "ReplicaSet", "uid": UID, "controller": True},
    ):
        assert not is_extended_claim_of(
            {**good, "metadata": {**good["metadata"], "ownerReferences": [ref]}}, UID
        )
    assert not is_extended_claim_of({}, UID)


def test_reserved_for_needs_an_allocation_and_a_pods_entry_with_the_uid() -> None:
    assert reserved_for(claim("c", "t"), UID)
    assert not reserved_for(claim("c", "t", node=None), UID)
    assert not reserved_for(claim("c", "t", reserved="other"), UID)
    wrong_resource = claim("c", "t")
    wrong_resource["status"]["reservedFor"][0]["resource"] = "deployments"
    assert not reserved_for(wrong_resource, UID)
    assert not reserved_for({}, UID)


def test_has_finalizer_reads_the_delete_protection_finalizer() -> None:
    assert has_finalizer({"metadata": {"finalizers": ["x", DELETE_PROTECTION_FINALIZER]}})
    assert not has_finalizer({"metadata": {"finalizers": ["x"]}})
    assert not has_finalizer({"metadata": {}})
    assert not has_finalizer({})


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        (
            {"status": {"extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-x"}}},
            "p-extended-resources-x",
        ),
        ({"status": {"extendedResourceClaimStatus": {"resourceClaimName": ""}}}, None),
        ({"status": {"extendedResourceClaimStatus": {"resourceClaimName": 5}}}, None),
        ({"status": {"extendedResourceClaimStatus": {}}}, None),
        ({"status": {"extendedResourceClaimStatus": None}}, None),
        ({"status": {}}, None),
        ({"status": None}, None),
        ({}, None),
    ],
)
def test_pod_claim_status_name_is_the_recorded_claim_name_or_none(
    pod: dict[str, Any], want: str | None
) -> None:
    assert pod_claim_status_name(pod) == want


RFC3339_SECONDS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def test_now_is_utc_rfc3339_to_the_second() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = now_rfc3339()
    after = datetime.now(UTC)
    assert RFC3339_SECONDS.fullmatch(stamp), stamp
    parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= parsed <= after + timedelta(seconds=1)


def test_unschedulable_condition_carries_a_last_transition_time_in_rfc3339() -> None:
    [cond] = unschedulable_condition_patch("no fit", reason="SchedulerError")["status"]["conditions"]
    assert set(cond) == {"type", "status", "reason", "message", "lastTransitionTime"}
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "PodScheduled",
        "False",
        "SchedulerError",
        "no fit",
    )
    assert RFC3339_SECONDS.fullmatch(cond["lastTransitionTime"])


def test_condition_is_reads_only_the_pod_scheduled_condition() -> None:
    pod = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "Unschedulable", "message": "m"},
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"},
            ]
        }
    }
    assert condition_is(pod, "Unschedulable", "m")
    assert not condition_is(pod, "Other", "m")
    pod["status"]["conditions"][1]["status"] = "True"
    assert not condition_is(pod, "Unschedulable", "m")
    assert not condition_is(
        {"status": {"conditions": [pod["status"]["conditions"][0]]}}, "Unschedulable", "m"
    )
    assert not condition_is({}, "Unschedulable", "m")


def test_now_is_utc_whatever_the_local_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        stamp = now_rfc3339()
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    parsed = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(parsed - datetime.now(UTC)) < timedelta(seconds=5)


def test_claim_create_body_clears_what_the_api_server_sets_and_block_owner_deletion() -> None:
    claim_obj = ResourceClaim.model_validate(
        {
            "metadata": {
                "name": "x",
                "generateName": "p-extended-resources-",
                "uid": "u",
                "resourceVersion": "7",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": "p",
                        "uid": "pu",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    },
                    {"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "qu"},
                ],
            },
            "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "pu"}]},
        }
    )
    body = claim_create_body(claim_obj)
    assert body["metadata"] == {
        "generateName": "p-extended-resources-",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pu", "controller": True},
            {"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "qu"},
        ],
        "finalizers": [DELETE_PROTECTION_FINALIZER],
    }
    assert "status" not in body


def test_a_pod_status_patch_without_request_mappings_is_refused() -> None:
    pod = Pod.model_validate({"metadata": {"name": "web-0", "namespace": "default", "uid": UID}, "spec": {}})
    placement = Placement(pod, PlacementResult.BOUND, node="n1", extended=ExtendedOutcome())
    with pytest.raises(ValueError) as err:
        extended_status_patch(placement, "web-0-extended-resources-abcde")
    assert str(err.value) == "nil or empty request mappings, no update of pod web-0"


def test_a_binding_of_a_pod_without_namespace_is_in_default() -> None:
    body = binding_body({"metadata": {"name": "p", "uid": UID}}, "n1")
    assert body["metadata"] == {"name": "p", "namespace": "default", "uid": UID}


def _read_back(node: str | None = None, deleting: bool = False, names: str | None = None) -> dict[str, Any]:
    """A pod as a read after a 409 returns it: bound to `node`, being deleted, its status naming a claim."""
    pod: dict[str, Any] = {"metadata": {"name": "web-0", "namespace": "default"}, "spec": {}, "status": {}}
    if node:
        pod["spec"]["nodeName"] = node
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if names is not None:
        pod["status"]["extendedResourceClaimStatus"] = {"resourceClaimName": names}
    return pod


def test_a_pod_read_back_is_still_pending_until_bound_or_deleted() -> None:
    assert still_pending(_read_back())
    assert still_pending({"metadata": None, "spec": None})
    assert not still_pending(_read_back(node="n1"))
    assert not still_pending(_read_back(deleting=True))


@pytest.mark.parametrize(
    ("pod", "claim", "ours"),
    [
        (_read_back(names="web-0-extended-resources-abcde"), "web-0-extended-resources-abcde", True),
        (_read_back(), "web-0-extended-resources-abcde", True),
        (_read_back(names=""), "web-0-extended-resources-abcde", True),
        (_read_back(names="another-claim"), "web-0-extended-resources-abcde", False),
        (_read_back(), None, True),
        (_read_back(names="another-claim"), None, False),
        (
            _read_back(node="n1", names="web-0-extended-resources-abcde"),
            "web-0-extended-resources-abcde",
            False,
        ),
        (_read_back(deleting=True), "web-0-extended-resources-abcde", False),
        ({"metadata": None, "spec": None, "status": None}, None, True),
    ],
    ids=[
        "names-it",
        "names-nothing",
        "names-empty",
        "names-another",
        "none-nothing",
        "none-another",
        "bound",
        "deleting",
        "empty-parts",
    ],
)
def test_a_pod_read_back_is_ours_to_write_while_unbound_and_naming_our_claim_or_none(
    pod: dict[str, Any], claim: str | None, ours: bool
) -> None:
    assert unbound_naming(claim)(pod) is ours
