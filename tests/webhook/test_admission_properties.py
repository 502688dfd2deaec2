"""Properties: whatever a DeviceClass object holds, /validate and /mutate answer without an internal error;
whatever JSON an AdmissionReview request holds (with a uid), they answer without raising."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.deviceclasses import ANNOTATION, review_request

from resourceapi.gates import FeatureGates
from webhook.deviceclass.admission import DeviceClassAdmission

JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
QUANTITY_LIKE = st.sampled_from(["1", "0", "-1", "5Gi", "500m", "x", "", "1e3", "1.5"]) | JSON
NAME_LIKE = st.sampled_from(["gpu", "a.com/b", "shares", "Bad_Name", "", "x" * 70, "a/b/c"]) | st.text(
    max_size=10
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return strategy | JSON


SELECTOR = maybe(
    st.fixed_dictionaries(
        {
            "cel": maybe(
                st.fixed_dictionaries({"expression": st.sampled_from(["true", "1", "noSuchVar", ""]) | JSON})
            )
        }
    )
)
CONFIG = maybe(
    st.fixed_dictionaries(
        {"opaque": maybe(st.fixed_dictionaries({"driver": maybe(NAME_LIKE), "parameters": JSON}))}
    )
)
CAPACITY = maybe(
    st.fixed_dictionaries({"requests": maybe(st.dictionaries(NAME_LIKE, QUANTITY_LIKE, max_size=3))})
)
SPEC = maybe(
    st.fixed_dictionaries(
        {},
        optional={
            "selectors": maybe(st.lists(SELECTOR, max_size=3)),
            "config": maybe(st.lists(CONFIG, max_size=3)),
            "extendedResourceName": maybe(NAME_LIKE),
            "extendedResourceCapacityRequests": CAPACITY,
        },
    )
)
METADATA = maybe(
    st.fixed_dictionaries(
        {},
        optional={
            "name": maybe(NAME_LIKE),
            "generateName": maybe(NAME_LIKE),
            "namespace": JSON,
            "labels": JSON,
            "annotations": maybe(
                st.fixed_dictionaries(
                    {ANNOTATION: maybe(st.sampled_from(['{"requests": {"s": "1"}}', "{", "null"]))}
                )
            ),
        },
    )
)
OBJECT = st.fixed_dictionaries({"metadata": METADATA, "spec": SPEC})
GATES = st.sampled_from(
    [
        FeatureGates.defaults(),
        FeatureGates.defaults().with_overrides(DRAConsumableCapacity=False, DRAExtendedResource=False),
        FeatureGates.defaults().with_overrides(DRAExtendedResourceCapacity=False),
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=OBJECT, old=st.none() | OBJECT, gates=GATES)
def test_any_object_gets_an_answer_never_an_internal_error(
    obj: dict[str, Any], old: dict[str, Any] | None, gates: FeatureGates
) -> None:
    admission = DeviceClassAdmission(gates)
    request = review_request(obj, old)
    for outcome in (admission.mutate(request), admission.validate(request)):
        assert outcome.handled
        assert "InternalError" not in outcome.cause_types
        response = outcome.response
        assert isinstance(response["allowed"], bool)
        assert response["allowed"] or response["status"]["code"] == 422
        assert all(len(w) <= 120 for w in response.get("warnings", []))


MEMBERS = (
    "kind",
    "resource",
    "subResource",
    "operation",
    "name",
    "namespace",
    "object",
    "oldObject",
    "dryRun",
    "userInfo",
    "options",
)
GVK_MEMBERS = ("group", "version", "kind", "resource")


def aimed_request(
    uid: str,
    operation: str,
    obj: dict[str, Any],
    old: dict[str, Any],
    overrides: dict[str, Any],
    gvk_overrides: dict[str, Any],
    drop: list[str],
) -> dict[str, Any]:
    """A DeviceClass review, then some members replaced by arbitrary JSON (or removed): reaches both the
    handled path and every odd type."""
    request = {**review_request(obj, old if operation == "UPDATE" else None, operation=operation), "uid": uid}
    for key in ("kind", "resource"):
        request[key] = {**request[key], **gvk_overrides}
    request.update(overrides)
    for key in drop:
        request.pop(key, None)
    return request


REQUEST = st.builds(
    aimed_request,
    uid=st.text(min_size=1, max_size=8),
    operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]),
    obj=OBJECT,
    old=OBJECT,
    overrides=st.dictionaries(st.sampled_from(MEMBERS), JSON, max_size=2),
    gvk_overrides=st.dictionaries(st.sampled_from(GVK_MEMBERS), JSON, max_size=1),
    drop=st.lists(st.sampled_from(MEMBERS), max_size=2),
) | st.builds(
    lambda uid, rest: {**rest, "uid": uid},
    st.text(min_size=1, max_size=8),
    st.dictionaries(st.sampled_from(MEMBERS) | st.text(max_size=6), JSON, max_size=6),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=REQUEST, gates=GATES)
def test_any_json_request_gets_a_well_formed_answer(request: dict[str, Any], gates: FeatureGates) -> None:
    admission = DeviceClassAdmission(gates)
    for outcome in (admission.mutate(request), admission.validate(request)):
        response = outcome.response
        assert response["uid"] == request["uid"]
        assert isinstance(response["allowed"], bool)
        assert "InternalError" not in outcome.cause_types
        assert isinstance(outcome.name, str) and isinstance(outcome.operation, str)
        if not response["allowed"]:
            assert response["status"]["code"] == 422
