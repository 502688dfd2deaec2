"""Upstream's shared allocator table: list-type attributes."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.allocatortesting.case import *
from support.dra_objects import *

# upstream's gates here: the product's (with or without ListTypeAttributes), or ListTypeAttributes alone
STABLE, STABLE_LISTS = stable_features(), stable_features("ListTypeAttributes")
LISTS, LISTS_CONSUMABLE = features("ListTypeAttributes"), features("ListTypeAttributes", "ConsumableCapacity")

CASES: dict[str, Case] = {
    "list-attributes-match-constaint-scalar-string-values": list_case(
        MATCH, "stringAttribute", [one("value1"), one("value1")], 2, [DEVICE1, DEVICE2], STABLE_LISTS
    ),
    "list-attributes-match-constaint-list-of-string-values-with-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        [DEVICE1, DEVICE2],
        STABLE_LISTS,
    ),
    "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2"), strs("value2", "value3"), strs("value3", "value1")],
        3,
        None,
        STABLE_LISTS,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [one("value1"), strs("value1", "value2")],
        2,
        [DEVICE1, DEVICE2],
        STABLE_LISTS,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements": (
        list_case(MATCH, "stringAttribute", [one("value1"), strs("value2", "value3")], 2, None, STABLE_LISTS)
    ),
    "list-attributes-match-constaint-list-of-int-values-with-common-elements": list_case(
        MATCH, "numa", [{"ints": [0, 1, 2]}, {"ints": [1, 2, 3]}], 2, [DEVICE1, DEVICE2], STABLE_LISTS
    ),
    "list-attributes-match-constaint-list-of-version-values-with-common-elements": list_case(
        MATCH,
        "driverVersion",
        [{"versions": ["1.0.0", "1.1.0", "2.0.0"]}, {"versions": ["1.1.0", "2.0.0", "2.1.0"]}],
        2,
        [DEVICE1, DEVICE2],
        STABLE_LISTS,
    ),
    "list-attributes-disabled-match-constraint-with-lists": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        None,
        STABLE,
    ),
    "list-attributes-distinct-constraint-scalar-string-values-not-distinct": list_case(
        DISTINCT, "stringAttribute", [one("value1"), one("value1")], 2, None, STABLE_LISTS
    ),
    "list-attributes-distinct-constraint-list-of-string-values-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2"), strs("value2", "value3"), strs("value3", "value4")],
        2,
        [DEVICE1, DEVICE3],
        STABLE_LISTS,
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [one("value1"), strs("value1", "value2"), strs("value2", "value3")],
        2,
        [DEVICE1, DEVICE3],
        STABLE_LISTS,
    ),
    "list-attributes-distinct-constraint-list-of-bool-values-all-distinct": list_case(
        DISTINCT,
        "boolAttribute",
        [{"bools": [True]}, {"bools": [True, False]}, {"bools": [False]}],
        2,
        [DEVICE1, DEVICE3],
        STABLE_LISTS,
    ),
    "list-attributes-disabled-distinct-constraint-with-lists": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        None,
        STABLE,
    ),
    "list-attributes-match-constaint-list-of-string-values-without-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2"), strs("value3", "value4")],
        1,
        None,
        LISTS,
        requests=2,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements": (
        list_case(
            MATCH,
            "stringAttribute",
            [s("value1"), strs("value1", "value2"), strs("value2", "value3")],
            3,
            None,
            LISTS,
        )
    ),
    "list-attributes-match-constaint-list-of-bool-values-with-common-elements": list_case(
        MATCH, "boolAttribute", [{"bools": [True, False]}, {"bools": [True]}], 2, [DEVICE1, DEVICE2], LISTS
    ),
    "list-attributes-match-constaint-with-empty-or-unknown-type": list_case(
        MATCH, "stringAttribute", [{}, strs()], 2, None, LISTS, error="unsupported attribute value"
    ),
    "list-attributes-distinct-constraint-scalar-string-values-all-distinct": list_case(
        DISTINCT, "stringAttribute", [s("value1"), s("value2")], 2, [DEVICE1, DEVICE2], LISTS_CONSUMABLE
    ),
    "list-attributes-distinct-constraint-list-of-string-values-with-common-elements": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value4", "value5")],
        2,
        None,
        LISTS_CONSUMABLE,
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements": list_case(
        DISTINCT, "stringAttribute", [s("value1"), strs("value1", "value2")], 2, None, LISTS_CONSUMABLE
    ),
    "list-attributes-distinct-constraint-list-of-int-values-all-distinct": list_case(
        DISTINCT,
        "numa",
        [{"ints": [0, 1]}, {"ints": [1, 2]}, {"ints": [2, 3]}],
        2,
        [DEVICE1, DEVICE3],
        LISTS_CONSUMABLE,
    ),
    "list-attributes-distinct-constraint-list-of-version-values-all-distinct": list_case(
        DISTINCT,
        "driverVersion",
        [
            {"versions": ["1.0.0", "1.1.0"]},
            {"versions": ["1.1.0", "2.0.0"]},
            {"versions": ["2.0.0", "2.1.0"]},
        ],
        2,
        [DEVICE1, DEVICE3],
        LISTS_CONSUMABLE,
    ),
    "list-attributes-distinct-constaint-with-empty-or-unknown-type": list_case(
        DISTINCT,
        "driverVersion",
        [{"versions": []}, {}],
        2,
        None,
        LISTS_CONSUMABLE,
        error="unsupported attribute value",
    ),
}
