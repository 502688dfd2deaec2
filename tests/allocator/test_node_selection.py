"""Which nodes a ResourceSlice (or a device) serves: upstream's NodeMatches with node-affinity semantics
(allocator.structured.pools), operator by operator, and the capacity records of a slice's devices."""

from __future__ import annotations

from typing import Any

import pytest

from allocator.structured.pools import build_slice, node_matches, node_selector_matches
from resourceapi.api.core_v1 import NodeSelector
from resourceapi.api.resource_v1 import ResourceSlice
from resourceapi.machinery.quantity import Quantity

LABELS = {"zone": "a", "gpus": "8", "name": "x"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def selector(*terms: dict[str, Any]) -> NodeSelector:
    return NodeSelector.model_validate({"nodeSelectorTerms": list(terms)})


def matches(*exprs: dict[str, Any], labels: dict[str, str] = LABELS) -> bool:
    return node_selector_matches(selector({"matchExpressions": list(exprs)}), "n1", labels)


OPERATOR_CASES: list[tuple[dict[str, Any], bool]] = [
    (expr("zone", "In", "a", "b"), True),
    (expr("zone", "In", "b"), False),
    (expr("missing", "In", ""), False),
    (expr("zone", "NotIn", "b", "c"), True),
    (expr("zone", "NotIn", "a"), False),
    (expr("missing", "NotIn", "a"), True),
    (expr("zone", "Exists"), True),
    (expr("missing", "Exists"), False),
    (expr("zone", "DoesNotExist"), False),
    (expr("missing", "DoesNotExist"), True),
    (expr("gpus", "Gt", "7"), True),
    (expr("gpus", "Gt", "8"), False),
    (expr("gpus", "Lt", "9"), True),
    (expr("gpus", "Lt", "8"), False),
    (expr("missing", "Gt", "1"), False),
    (expr("missing", "Lt", "100"), False),
    (expr("gpus", "Gt", "1", "2"), False),
    (expr("gpus", "Lt"), False),
    (expr("zone", "Gt", "1"), False),
    (expr("gpus", "Lt", "many"), False),
    (expr("zone", "Equals", "a"), False),
]


@pytest.mark.parametrize(
    ("requirement", "want"),
    OPERATOR_CASES,
    ids=[" ".join([r["key"], r["operator"], *r.get("values", [])]) for r, _ in OPERATOR_CASES],
)
def test_each_operator_as_node_affinity_reads_it(requirement: dict[str, Any], want: bool) -> None:
    assert matches(requirement) is want


def test_requirements_of_a_term_are_anded() -> None:
    assert matches(expr("zone", "In", "a"), expr("gpus", "Gt", "4"))
    assert not matches(expr("zone", "In", "a"), expr("gpus", "Gt", "8"))


def test_terms_are_ored_and_an_empty_term_matches_nothing() -> None:
    miss = {"matchExpressions": [expr("zone", "In", "b")]}
    hit = {"matchExpressions": [expr("zone", "In", "a")]}
    assert node_selector_matches(selector(miss, hit), "n1", LABELS)
    assert not node_selector_matches(selector(miss), "n1", LABELS)
    assert not node_selector_matches(selector({}), "n1", LABELS)
    assert not node_selector_matches(selector({"matchExpressions": [], "matchFields": []}), "n1", LABELS)
    assert not node_selector_matches(selector(), "n1", LABELS)


def test_match_fields_read_the_node_name_not_the_labels() -> None:
    by_name = {"matchFields": [expr("metadata.name", "In", "n1")]}
    assert node_selector_matches(selector(by_name), "n1", {})
    assert not node_selector_matches(selector(by_name), "n2", {"metadata.name": "n1"})
    both = {"matchExpressions": [expr("zone", "In", "a")], "matchFields": [expr("metadata.name", "In", "n1")]}
    assert node_selector_matches(selector(both), "n1", LABELS)
    assert not node_selector_matches(selector(both), "n2", LABELS)
    assert not node_selector_matches(selector(both), "n1", {"zone": "b"})


def test_node_matches_by_name_all_nodes_or_selector() -> None:
    zone_a = selector({"matchExpressions": [expr("zone", "In", "a")]})
    assert node_matches("n1", LABELS, "n1", False, None)
    assert not node_matches("n2", LABELS, "n1", True, zone_a)  # a node name decides alone
    assert node_matches("n2", {}, "", True, None)
    assert node_matches("n2", LABELS, "", False, zone_a)
    assert not node_matches("n2", {"zone": "b"}, "", False, zone_a)
    assert not node_matches("n2", LABELS, "", False, None)


def _slice(devices: list[dict[str, Any]]) -> ResourceSlice:
    return ResourceSlice.model_validate(
        {
            "metadata": {"name": "s1"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
    )


def test_capacity_records_are_keyed_by_normalized_name_and_keep_the_device_spelling() -> None:
    record = build_slice(
        _slice(
            [
                {
                    "name": "g0",
                    "capacity": {
                        "shares": {
                            "value": "4",
                            "requestPolicy": {"default": "1", "validRange": {"min": "1"}},
                        },
                        "other.example.com/memory": {"value": "80Gi"},
                    },
                }
            ]
        )
    )
    [device] = record.devices
    assert sorted(device.capacity) == ["gpu.example.com/shares", "other.example.com/memory"]
    shares = device.capacity["gpu.example.com/shares"]
    assert (shares.spelling, shares.quantity) == ("shares", Quantity.parse("4"))
    assert shares.policy is not None and shares.policy.default == Quantity.parse("1")
    memory = device.capacity["other.example.com/memory"]
    assert (memory.spelling, memory.quantity, memory.policy) == (
        "other.example.com/memory",
        Quantity.parse("80Gi"),
        None,
    )


def test_devices_with_one_capacity_model_share_its_records() -> None:
    model = _slice([{"name": "g0", "capacity": {"shares": {"value": "4"}}}])
    first, second = build_slice(model), build_slice(model)
    assert first.devices[0].capacity is second.devices[0].capacity
    other = build_slice(_slice([{"name": "g0", "capacity": {"shares": {"value": "8"}}}]))
    assert other.devices[0].capacity["gpu.example.com/shares"].quantity == Quantity.parse("8")
    assert first.devices[0].capacity["gpu.example.com/shares"].quantity == Quantity.parse("4")


def test_an_empty_term_is_skipped_for_the_next_term() -> None:
    hit = {"matchExpressions": [expr("zone", "In", "a")]}
    assert node_selector_matches(selector({}, hit), "n1", LABELS)


def test_a_slice_selector_on_the_node_name_reads_the_node_name() -> None:
    by_name = selector({"matchFields": [expr("metadata.name", "In", "n1")]})
    assert node_matches("n1", {}, "", False, by_name)
    assert not node_matches("n2", {}, "", False, by_name)


def test_devices_sharing_one_capacity_model_share_its_record() -> None:
    """Validation interns equal capacity models (resourceapi/manifests/interning.py); their records are
    shared too."""
    model = _slice(
        [
            {"name": "g0", "capacity": {"shares": {"value": "4"}}},
            {"name": "g1", "capacity": {"x": {"value": "1"}}},
        ]
    )
    devices = model.spec.devices or []
    assert devices[0].capacity is not None
    devices[1].capacity = {"shares": devices[0].capacity["shares"]}
    first, second = build_slice(model).devices
    assert first.capacity is not second.capacity
    assert first.capacity["gpu.example.com/shares"] is second.capacity["gpu.example.com/shares"]
    assert second.capacity["gpu.example.com/shares"].spelling == "shares"


def test_one_capacity_map_under_two_drivers_is_normalized_under_each() -> None:
    mine = _slice([{"name": "g0", "capacity": {"shares": {"value": "4"}}}])
    theirs = ResourceSlice.model_validate(
        {
            "metadata": {"name": "s2"},
            "spec": {
                "driver": "nic.example.com",
                "nodeName": "n1",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "n0"}],
            },
        }
    )
    (theirs.spec.devices or [])[0].capacity = (mine.spec.devices or [])[0].capacity
    assert sorted(build_slice(mine).devices[0].capacity) == ["gpu.example.com/shares"]
    assert sorted(build_slice(theirs).devices[0].capacity) == ["nic.example.com/shares"]
