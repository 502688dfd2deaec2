"""Upstream's shared allocator table: list-type attributes."""

from __future__ import annotations

from support.allocatortesting.builders import *
from support.dra_objects import *

CASES: dict[str, Case] = {
    "list-attributes-match-constaint-scalar-string-values": list_case(
        MATCH, "stringAttribute", [one("value1"), one("value1")], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-list-of-string-values-with-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        [DEVICE1, DEVICE2],
    ),
    "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2"), strs("value2", "value3"), strs("value3", "value1")],
        3,
        None,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements": list_case(
        MATCH, "stringAttribute", [one("value1"), strs("value1", "value2")], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements": (
        list_case(MATCH, "stringAttribute", [one("value1"), strs("value2", "value3")], 2, None)
    ),
    "list-attributes-match-constaint-list-of-int-values-with-common-elements": list_case(
        MATCH, "numa", [{"ints": [0, 1, 2]}, {"ints": [1, 2, 3]}], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-list-of-version-values-with-common-elements": list_case(
        MATCH,
        "driverVersion",
        [{"versions": ["1.0.0", "1.1.0", "2.0.0"]}, {"versions": ["1.1.0", "2.0.0", "2.1.0"]}],
        2,
        [DEVICE1, DEVICE2],
    ),
    "list-attributes-disabled-match-constraint-with-lists": list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        None,
        lists=False,
    ),
    "list-attributes-distinct-constraint-scalar-string-values-not-distinct": list_case(
        DISTINCT, "stringAttribute", [one("value1"), one("value1")], 2, None
    ),
    "list-attributes-distinct-constraint-list-of-string-values-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2"), strs("value2", "value3"), strs("value3", "value4")],
        2,
        [DEVICE1, DEVICE3],
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct": list_case(
        DISTINCT,
        "stringAttribute",
        [one("value1"), strs("value1", "value2"), strs("value2", "value3")],
        2,
        [DEVICE1, DEVICE3],
    ),
    "list-attributes-distinct-constraint-list-of-bool-values-all-distinct": list_case(
        DISTINCT,
        "boolAttribute",
        [{"bools": [True]}, {"bools": [True, False]}, {"bools": [False]}],
        2,
        [DEVICE1, DEVICE3],
    ),
    "list-attributes-disabled-distinct-constraint-with-lists": list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value3", "value4")],
        2,
        None,
        lists=False,
    ),
    "list-attributes-match-constaint-list-of-string-values-without-common-elements": experimental_list_case(
        MATCH,
        "stringAttribute",
        [strs("value1", "value2"), strs("value3", "value4")],
        1,
        None,
        requests=2,
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements": (
        experimental_list_case(
            MATCH,
            "stringAttribute",
            [s("value1"), strs("value1", "value2"), strs("value2", "value3")],
            3,
            None,
        )
    ),
    "list-attributes-match-constaint-list-of-bool-values-with-common-elements": experimental_list_case(
        MATCH, "boolAttribute", [{"bools": [True, False]}, {"bools": [True]}], 2, [DEVICE1, DEVICE2]
    ),
    "list-attributes-match-constaint-with-empty-or-unknown-type": experimental_list_case(
        MATCH, "stringAttribute", [{}, strs()], 2, None, error="unsupported attribute value"
    ),
    "list-attributes-distinct-constraint-scalar-string-values-all-distinct": experimental_list_case(
        DISTINCT,
        "stringAttribute",
        [s("value1"), s("value2")],
        2,
        [DEVICE1, DEVICE2],
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-list-of-string-values-with-common-elements": experimental_list_case(
        DISTINCT,
        "stringAttribute",
        [strs("value1", "value2", "value3"), strs("value2", "value4", "value5")],
        2,
        None,
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements": experimental_list_case(
        DISTINCT,
        "stringAttribute",
        [s("value1"), strs("value1", "value2")],
        2,
        None,
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-list-of-int-values-all-distinct": experimental_list_case(
        DISTINCT,
        "numa",
        [{"ints": [0, 1]}, {"ints": [1, 2]}, {"ints": [2, 3]}],
        2,
        [DEVICE1, DEVICE3],
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constraint-list-of-version-values-all-distinct": experimental_list_case(
        DISTINCT,
        "driverVersion",
        [
            {"versions": ["1.0.0", "1.1.0"]},
            {"versions": ["1.1.0", "2.0.0"]},
            {"versions": ["2.0.0", "2.1.0"]},
        ],
        2,
        [DEVICE1, DEVICE3],
        "ConsumableCapacity",
    ),
    "list-attributes-distinct-constaint-with-empty-or-unknown-type": experimental_list_case(
        DISTINCT,
        "driverVersion",
        [{"versions": []}, {}],
        2,
        None,
        "ConsumableCapacity",
        error="unsupported attribute value",
    ),
}
