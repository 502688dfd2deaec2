"""The differential's order comparison: Go visits a map's keys in a random order."""

from __future__ import annotations

from differential.compare import compare
from dra_capacity.apiverdict import Cause, Verdict


def _verdict(*fields: str) -> Verdict:
    return Verdict(False, 422, tuple(Cause(f, "FieldValueInvalid", "Invalid value") for f in fields))


def test_a_maps_causes_compare_in_any_order() -> None:
    ours = _verdict(
        "spec.driver",
        "spec.devices[0].attributes",
        "spec.devices[0].attributes[a].version",
        "spec.devices[0].attributes[b].string",
        "spec.devices[1].name",
    )
    theirs = _verdict(
        "spec.driver",
        "spec.devices[0].attributes[b].string",
        "spec.devices[0].attributes",
        "spec.devices[0].attributes[a].version",
        "spec.devices[1].name",
    )
    assert compare("ResourceSlice", ours, theirs).disagreements == []


def test_list_items_out_of_order_are_an_order_disagreement() -> None:
    ours = _verdict("spec.devices[0].name", "spec.devices[1].name")
    theirs = _verdict("spec.devices[1].name", "spec.devices[0].name")
    found = compare("ResourceSlice", ours, theirs).disagreements
    assert [d.key for d in found] == ["ResourceSlice|order|-|-"]
