"""Property: whatever a DeviceClass object holds, /validate and /mutate answer without an internal error."""

from __future__ import annotations

from typing import Any

from deviceclasses import ANNOTATION, review_request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resourceapi.gates import FeatureGates
from webhook.admission import DeviceClassAdmission

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
