"""The list and map helpers behave as upstream's validateSlice / validateSet / validateMap."""

from __future__ import annotations

from typing import Any

from resourceapi.machinery.field import FieldError, Path, invalid
from resourceapi.validation.lists import truncate_if_too_long, validate_map, validate_set, validate_slice

P = Path("spec").child("items")


def _odd(item: Any, path: Path) -> list[FieldError]:
    return [invalid(path, item, "odd")] if item % 2 else []


def test_a_list_over_its_limit_is_one_too_many_and_its_items_are_not_judged() -> None:
    assert [str(e) for e in validate_slice([1, 1, 1], 2, _odd, P)] == [
        "spec.items: Too many: 3: must have at most 2 items"
    ]
    assert validate_slice([1, 1, 1], 2, _odd, P, size_covered=True) == []


def test_items_are_judged_at_their_index_unless_covered() -> None:
    assert [str(e) for e in validate_slice([2, 3], -1, _odd, P)] == ["spec.items[1]: Invalid value: 3: odd"]
    assert validate_slice([2, 3], -1, _odd, P, items_covered=True) == []


def test_a_set_reports_each_repeat_at_its_index_after_the_items() -> None:
    errors = validate_set([3, 2, 3, 2], 8, _odd, lambda x: x, P)
    assert [str(e) for e in errors] == [
        "spec.items[0]: Invalid value: 3: odd",
        "spec.items[2]: Invalid value: 3: odd",
        "spec.items[2]: Duplicate value: 3",
        "spec.items[3]: Duplicate value: 2",
    ]
    assert len(validate_set([3, 3], 8, _odd, lambda x: x, P, uniqueness_covered=True)) == 2


def test_declarative_sets_report_the_repeats_before_the_items() -> None:
    """zz_generated's order: `MaxItems` (alone when exceeded), then uniqueness, then each item."""
    errors = validate_set([3, 2, 3], 8, _odd, None, P, unique_first=True)
    assert [str(e) for e in errors] == [
        "spec.items[2]: Duplicate value: 3",
        "spec.items[0]: Invalid value: 3: odd",
        "spec.items[2]: Invalid value: 3: odd",
    ]
    assert [str(e) for e in validate_set([3, 3, 3], 2, _odd, None, P, unique_first=True)] == [
        "spec.items: Too many: 3: must have at most 2 items"
    ]


def test_a_set_without_item_rules_judges_size_and_repeats_showing_the_chosen_value() -> None:
    rows = [{"name": "a"}, {"name": "b"}, {"name": "a"}]
    errors = validate_set(rows, 4, None, lambda r: r["name"], P, shown=lambda r: f"row {r['name']}")
    assert [str(e) for e in errors] == ['spec.items[2]: Duplicate value: "row a"']
    assert validate_slice([1, 3], 4, None, P) == []
    assert [str(e) for e in validate_slice([1, 3], 1, None, P)] == [
        "spec.items: Too many: 2: must have at most 1 items"
    ]


def test_long_map_keys_are_cut_in_the_middle_and_never_below_16_bytes() -> None:
    assert truncate_if_too_long("a" * 16, 4) == "a" * 16
    assert truncate_if_too_long("abcdefghijklmnopq", 4) == "abcdefg...lmnopq"
    errors = validate_map({"k" * 40: 1}, 4, 20, lambda k, p: [], _odd, P)
    assert [e.field for e in errors] == ["spec.items[kkkkkkkkk...kkkkkkkk]"]
    assert [str(e) for e in validate_map({"a": 2, "b": 2}, 1, 20, lambda k, p: [], _odd, P)] == [
        "spec.items: Too many: 2: must have at most 1 items"
    ]
