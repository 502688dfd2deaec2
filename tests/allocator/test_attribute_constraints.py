"""matchAttribute and distinctAttribute on single devices (allocator.structured.constraints), beside the
upstream allocator tests that exercise them through whole claims: how an attribute name is looked up on a
device, the scalar and list modes, undoing an add, and values of an unknown type."""

from __future__ import annotations

from typing import Any

from allocator.structured.constraints import (
    DistinctAttribute,
    MatchAttribute,
    lookup_attribute,
    without_build,
)
from allocator.structured.pools import DeviceRecord, SliceRecord
from resourceapi.api.resource_v1 import Device

DRIVER = "gpu.example.com"


def device(attributes: dict[str, Any], name: str = "d0", driver: str = DRIVER) -> DeviceRecord:
    slice_record = SliceRecord(
        name="s",
        driver=driver,
        pool="pool",
        pool_generation=1,
        slice_count=1,
        node_name="n1",
        node_selector=None,
        all_nodes=False,
        per_device=False,
        per_device_set=False,
        counter_sets=[],
    )
    return DeviceRecord(slice_record, Device.model_validate({"name": name, "attributes": attributes}))


def test_a_qualified_attribute_is_found_under_its_full_name() -> None:
    dev = device({"other.example.com/zone": {"string": "a"}, f"{DRIVER}/model": {"string": "x"}})
    assert lookup_attribute(dev, "other.example.com/zone") == ("string", "a")
    assert lookup_attribute(dev, f"{DRIVER}/model") == ("string", "x")


def test_an_unqualified_attribute_is_found_under_the_drivers_domain_only() -> None:
    dev = device({"model": {"string": "a100"}})
    assert lookup_attribute(dev, f"{DRIVER}/model") == ("string", "a100")
    assert lookup_attribute(dev, "other.example.com/model") is None
    assert lookup_attribute(dev, "model") == ("string", "a100")
    assert lookup_attribute(dev, "zone") is None


def test_a_constraint_on_a_qualified_attribute_of_another_domain_matches_it() -> None:
    match = MatchAttribute(None, "other.example.com/zone")
    assert match.add("r", "", device({"other.example.com/zone": {"string": "a"}}, "d0"))
    assert match.add("r", "", device({"other.example.com/zone": {"string": "a"}}, "d1"))
    assert not match.add("r", "", device({"other.example.com/zone": {"string": "b"}}, "d2"))


def test_list_values_are_compared_as_scalars_unless_list_mode() -> None:
    """Without DRAListTypeAttributes a list value admits the first device and no other."""
    models = {"models": {"strings": ["a", "b"]}}
    scalar = MatchAttribute(None, f"{DRIVER}/models")
    assert scalar.add("r", "", device(models, "d0"))
    assert not scalar.add("r", "", device(models, "d1"))
    listed = MatchAttribute(None, f"{DRIVER}/models", list_mode=True)
    assert listed.add("r", "", device(models, "d0"))
    assert listed.add("r", "", device({"models": {"strings": ["b", "c"]}}, "d1"))
    assert not listed.add("r", "", device({"models": {"strings": ["c"]}}, "d2"))


def test_remove_undoes_the_add_of_a_listed_subrequest() -> None:
    for constraint in (
        MatchAttribute(["r/s"], f"{DRIVER}/model"),
        DistinctAttribute(["r/s"], f"{DRIVER}/model"),
    ):
        assert constraint.add("r", "s", device({"model": {"string": "a"}}))
        assert constraint.values == [("string", "a")]
        constraint.remove("r", "s")
        assert constraint.values == []
        assert constraint.add("other", "", device({}))  # not constrained: admitted, nothing recorded
        constraint.remove("other", "")
        assert constraint.values == []


def test_a_value_of_unknown_type_never_matches_in_list_mode() -> None:
    unknown = {"model": {}}
    match = MatchAttribute(None, f"{DRIVER}/model", list_mode=True)
    assert not match.add("r", "", device(unknown))
    distinct = DistinctAttribute(None, f"{DRIVER}/model", list_mode=True)
    assert distinct.add("r", "", device({"model": {"string": "a"}}, "d0"))
    assert not distinct.add("r", "", device(unknown, "d1"))
    assert distinct.add("r", "", device({"model": {"strings": ["b"]}}, "d2"))
    assert not distinct.add("r", "", device({"model": {"strings": ["a", "c"]}}, "d3"))


def test_attributes_are_read_as_typed_values_and_non_empty_lists_as_sets() -> None:
    dev = device(
        {
            "s": {"string": "a"},
            "i": {"int": 3},
            "b": {"bool": False},
            "v": {"version": "1.2.3"},
            "ints": {"ints": [1, 2]},
            "bools": {"bools": [True]},
            "strings": {"strings": ["x"]},
            "versions": {"versions": ["1.0.0"]},
            "empty": {"strings": []},
            "nothing": {},
        }
    )
    assert dev.attributes == {
        "s": ("string", "a"),
        "i": ("int", 3),
        "b": ("bool", False),
        "v": ("version", "1.2.3"),
        "ints": ("list", frozenset({("int", 1), ("int", 2)})),
        "bools": ("list", frozenset({("bool", True)})),
        "strings": ("list", frozenset({("string", "x")})),
        "versions": ("list", frozenset({("version", "1.0.0")})),
        "empty": ("unknown", None),
        "nothing": ("unknown", None),
    }


def test_without_build_drops_only_a_versions_build_metadata() -> None:
    """1.38's semver equality (resourceapi/releases.py `semver_equality`): build metadata goes, nothing else;
    other kinds, and the non-version elements of a list, stay as they are."""
    assert without_build(("version", "1.0.0-rc.1+build.7")) == ("version", "1.0.0-rc.1")
    assert without_build(("version", "2.0.0")) == ("version", "2.0.0")
    assert without_build(("string", "a+b")) == ("string", "a+b")
    assert without_build(("int", 5)) == ("int", 5)
    mixed = frozenset({("string", "x+y"), ("version", "1.0.0+b"), ("version", "2.0.0")})
    assert without_build(("list", mixed)) == (
        "list",
        frozenset({("string", "x+y"), ("version", "1.0.0"), ("version", "2.0.0")}),
    )
    strings = ("list", frozenset({("string", "x+y")}))
    assert without_build(strings) == strings


def test_versions_compare_as_strings_unless_semver_equality_is_asked_for() -> None:
    """Before 1.38 (the default) `1.0.0+a` and `1.0.0+b` differ; with semver equality they are one value."""
    first, second = device({"fw": {"version": "1.0.0+a"}}), device({"fw": {"version": "1.0.0+b"}}, name="d1")
    plain = MatchAttribute(None, f"{DRIVER}/fw")
    assert plain.add("r", "", first)
    assert not plain.add("r", "", second)
    semver = MatchAttribute(None, f"{DRIVER}/fw", semver_equality=True)
    assert semver.add("r", "", first)
    assert semver.add("r", "", second)
