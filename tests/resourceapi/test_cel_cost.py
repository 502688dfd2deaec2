"""The static cost estimate: upstream's limit of 1,000,000 and its size assumptions for `device`."""

from __future__ import annotations

import pytest

from resourceapi.api.limits import COST_LIMIT
from resourceapi.cel import CelIssue, compile_selector
from resourceapi.cel.cache import CelCache
from resourceapi.gates import FeatureGates

GATES = FeatureGates.defaults()
TOO_COMPLEX = [CelIssue("forbidden", "too complex, exceeds cost limit")]

ORDINARY = [
    'device.attributes["driver.example.com"].type == "gpu"',
    'device.capacity["gpu.nvidia.com"].shares.isGreaterThan(quantity("0"))',
    'device.attributes["d"].model.matches("^(a100|h100)-[0-9]+gb$") && device.driver == "gpu.nvidia.com"',
    'device.attributes.exists(d, device.attributes[d].exists(a, a.startsWith("gpu")))',
    'cel.bind(a, device.attributes["d"], a.x == 1 && a.y == "z" && a.v.isGreaterThan(semver("1.0.0")))',
]


@pytest.mark.parametrize("expression", ORDINARY)
def test_ordinary_selectors_stay_under_the_limit(expression: str) -> None:
    result = compile_selector(expression, GATES)
    assert result.issues == []
    assert 0 < result.cost < COST_LIMIT


def test_deeply_nested_comprehension_over_attributes_exceeds_the_limit() -> None:
    expr = (
        "device.attributes.all(d1, device.attributes[d1].all(a1, "
        "device.attributes.all(d2, device.attributes[d2].all(a2, a1 != a2))))"
    )
    result = compile_selector(expr, GATES)
    assert result.issues == TOO_COMPLEX
    assert result.cost > COST_LIMIT


def test_cost_grows_with_the_nesting_of_comprehensions() -> None:
    one = compile_selector("device.attributes.all(d, d != '')", GATES).cost
    two = compile_selector("device.attributes.all(d, device.attributes[d].all(a, a != ''))", GATES).cost
    assert two > one * 16


def test_regex_cost_depends_on_the_pattern_length() -> None:
    short = compile_selector('device.attributes["d"].m.matches("a")', GATES).cost
    long = compile_selector('device.attributes["d"].m.matches("' + "a" * 60 + '")', GATES).cost
    assert long > short


def test_cost_is_reported_for_accepted_expressions() -> None:
    assert compile_selector("true", GATES).cost == 0


def test_stored_expressions_have_no_cost_limit_as_in_the_scheduler() -> None:
    expr = (
        "device.attributes.all(d1, device.attributes[d1].all(a1, "
        "device.attributes.all(d2, device.attributes[d2].all(a2, a1 != a2))))"
    )
    result = compile_selector(expr, GATES, stored=True)
    assert result.issues == []
    assert result.cost > COST_LIMIT
    assert result.program is not None


# Costs of the Kubernetes libraries, as apiserver `pkg/cel/library/cost.go` `EstimateCallCost` prices them
# (argument costs plus the call's own estimate; a list literal costs 10, `device.driver` 2, a comparison 1).
@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        # a string receiver: ceil(3 x 0.1) = 1, plus `==` 1
        ('"abc".indexOf("b") == 1', 2),
        # a list of ints: 2 x 1, the list 10, `==` 1
        ("[1, 2].sum() == 3", 13),
        # containsIP(string): ceil(32 x 0.1) = 4 + ceil(8 x 0.1) = 1 to parse it; `cidr(...)` parses its
        # argument, ceil(11 x 0.1) = 2 (calibrated against kube-apiserver v1.37.2 by tests/differential)
        ('cidr("10.0.0.0/16").containsIP("10.0.0.1")', 7),
        # containsCIDR(CIDR): 4 + 2 + 1, `cidr(...)` at 1 and 2
        ('cidr("10.0.0.0/8").containsCIDR(cidr("10.1.0.0/16"))', 10),
        # find: ceil((63 + 1) x 0.1) = 7 times ceil(15 x 0.25) = 4, device.driver 2, `!=` ceil(0 x 0.1) = 0
        ('device.driver.find("gpu[0-9]+rdma0") != ""', 30),
        # url(string): ceil(19 x 0.1) = 2; getHost 1; `==` ceil(11 x 0.1) = 2 (string comparisons have no base
        # cost: calibrated against kube-apiserver v1.37.2 by tests/differential)
        ('url("https://example.com").getHost() == "example.com"', 5),
        ('ip("10.0.0.1").family() == 4', 3),
    ],
)
def test_library_calls_cost_as_upstream_estimates(expression: str, cost: int) -> None:
    assert compile_selector(expression, GATES).cost == cost


@pytest.mark.parametrize(
    "expression",
    [
        '["a100", "h100"].indexOf(device.driver) >= 0',
        '["a", "b"].isSorted()',
        '["a", "b"].join("-") == ""',
    ],
)
def test_scans_of_string_lists_are_too_complex_as_for_kube_apiserver(expression: str) -> None:
    # cel-go keeps no size for a list's string elements: kube-apiserver v1.37.2 refuses these selectors
    # (measured by tests/differential).
    assert compile_selector(expression, GATES).issues == TOO_COMPLEX


def test_lists_range_iterates_its_constant_size() -> None:
    # lists.range(N) costs N plus a list and a call; `all` over it 4 per element (calibrated)
    assert compile_selector("lists.range(1000).all(i, true)", GATES).cost == 1000 + 11 + 3 * 1000 + 1


@pytest.mark.parametrize(
    "expression",
    [
        '"%s-%d".format(["", 1]).matches(".")',
        'url("https://" + device.driver).getHost().matches(".")',
        'device.driver.charAt(0).matches(".")',
        'ip(device.attributes["dra.net"].ipv4) != ip("192.168.7.1")',
    ],
)
def test_unsized_values_are_too_costly_to_scan_as_for_kube_apiserver(expression: str) -> None:
    # cel-go cannot size these values (measured against kube-apiserver v1.37.2 by tests/differential)
    assert compile_selector(expression, GATES).issues == TOO_COMPLEX


def test_a_flattened_int_list_is_sized_by_its_elements() -> None:
    assert compile_selector("[[1], [2, 3]].flatten().isSorted()", GATES).issues == []


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        # calibrated against kube-apiserver v1.37.2 (tests/differential): sort and distinct compare pairs,
        # 2n² + a new list (10) + the call (1); a format check 32 per started 10 characters
        ("[3, 1, 2].sort().size() > 0", 10 + 29 + 1 + 1),
        ("[1, 2, 2].distinct().size() > 0", 10 + 29 + 1 + 1),
        ('format.dns1123Label().validate("abcdefgh").hasValue()', 1 + 32 + 1),
    ],
)
def test_calibrated_costs(expression: str, cost: int) -> None:
    assert compile_selector(expression, GATES).cost == cost


def _nested(levels: int, body: str) -> str:
    """`levels` loops over the device's attributes, each `exists(dom, dom == "x" && (...))`, around `body`."""
    for _ in range(levels):
        body = f'device.attributes.exists(dom, dom == "x" && ({body}))'
    return body


def _padded(expression: str, size: int) -> str:
    """`expression` plus `size` + 13 (`lists.range(size)` costs size + 11, `size()` and `> 0` one each)."""
    return f"({expression}) && lists.range({size}).size() > 0"


# Nested loops over `device.attributes`, padded to exactly the limit: kube-apiserver v1.37.2 accepts each at
# `size` and says `too complex` at `size + 1` (measured on its dry-run create of a DeviceClass). Every loop
# ranges over 32 domains; per iteration an `exists` costs its step, its condition `@not_strictly_false(!r)`
# (3: the `!` costs 1) and the body, so each level multiplies the body's cost by 32.
NESTED_AT_THE_LIMIT = [
    (1, "[1, 2].reverse().isSorted()", 998_992),
    (2, "[1, 2].reverse().isSorted()", 967_952),
    (3, 'dom == "y"', 728_336),
    (4, "[1, 2].exists(i, i == 1)", 40_208),  # three loops over the attributes, one over a list of 2
]


@pytest.mark.parametrize(("levels", "body", "size"), NESTED_AT_THE_LIMIT)
def test_nested_attribute_loops_meet_the_limit_where_kube_apiserver_does(
    levels: int, body: str, size: int
) -> None:
    expression = _nested(levels if levels < 4 else 3, body)
    at_limit = compile_selector(_padded(expression, size), GATES)
    assert (at_limit.cost, at_limit.issues) == (COST_LIMIT, [])
    over = compile_selector(_padded(expression, size + 1), GATES)
    assert over.cost == COST_LIMIT + 1
    assert over.issues == TOO_COMPLEX


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        # cel-go v0.29.2 estimates through the DRA compiler kube-apiserver v1.37.2 runs (the server agrees on
        # each side of the limit, above): 32 iterations a level
        ('device.attributes.exists(d, d == "x")', 195),
        (_nested(1, "[1, 2].reverse().isSorted()"), 995),
        (_nested(2, "[1, 2].reverse().isSorted()"), 32_035),
        (_nested(3, "[1, 2].reverse().isSorted()"), 1_025_315),
        (
            "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
            "device.attributes.all(d, true))))",
            3_348_675,
        ),
        # `!` is an ordinary call (1), in a selector as in `exists`' loop condition
        ("!true", 1),
        ('!(device.driver == "x")', 4),
        ("lists.range(1000).exists(i, true)", 5012),
        ("lists.range(1000).all(i, !(i == 1))", 7012),
        # an index into a literal is sized by its entries (cel-go), not by the default string size
        ('["abc", "d"][0].lowerAscii() == "a"', 13),
        ('{"a": "bcd"}["a"].lowerAscii() == "a"', 33),
    ],
)
def test_nested_loops_cost_as_cel_go_estimates(expression: str, cost: int) -> None:
    assert compile_selector(expression, GATES).cost == cost


# Nested loops whose bodies use what cel-go sizes in its own way, each padded to exactly the limit:
# kube-apiserver v1.37.2 accepts each at `size` and says `too complex` at `size + 1`. In turn: a two-variable
# loop over `device.attributes[d]` (cel-go sizes its key as a value, 64); `matches` ((length + 1) x 0.1
# times the pattern's length x 0.25); `in` a list (one per element, no base) and `semver()` (its string's
# traversal); a sorted list's size (its input's squared) and `replace` (the input's traversal twice);
# map() and filter() results, whose elements keep the size of what was appended.
NESTED_BODIES_AT_THE_LIMIT = [
    ('device.attributes.all(d, device.attributes["x"].all(k, v, k.lowerAscii() == d))', 19683, 980304),
    ('device.attributes.all(d, device.attributes[d].model.matches("^[a-z]+-[0-9]+$"))', 1155, 998832),
    (
        'device.attributes.all(d, device.attributes.all(e, d in [e, "a"] && '
        'semver("1.2.3-alpha.1").isLessThan(semver("2.0.0-beta.22"))))',
        22723,
        977264,
    ),
    (
        'device.attributes.all(d, [3, 1, 2].sort().isSorted() || d.replace("a", "bb").size() > 1)',
        2147,
        997840,
    ),
    (
        'device.attributes.exists(d, device.attributes.map(e, e + d).filter(f, f.startsWith("a"))'
        '.exists(g, g.lowerAscii() == "x"))',
        63395,
        936592,
    ),
]


@pytest.mark.parametrize(("expression", "cost", "size"), NESTED_BODIES_AT_THE_LIMIT)
def test_nested_loop_bodies_meet_the_limit_where_kube_apiserver_does(
    expression: str, cost: int, size: int
) -> None:
    assert compile_selector(expression, GATES).cost == cost
    assert compile_selector(_padded(expression, size), GATES).cost == COST_LIMIT
    over = compile_selector(_padded(expression, size + 1), GATES)
    assert over.issues == TOO_COMPLEX


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes.x.all(k, k == "a")',
        'device.driver.split(".").all(s, s.matches("^a+$"))',
        'device.attributes["x"].model.split(",").exists(s, s.lowerAscii() == "a")',
        'device.driver.split(".")[0].lowerAscii() == "a"',
        'cel.bind(a, device.driver.split("."), a[0].lowerAscii() == "a")',
        'cel.bind(a, device.attributes.x, a.model.lowerAscii() == "a")',
    ],
)
def test_loops_over_unsized_strings_are_too_complex_as_for_kube_apiserver(expression: str) -> None:
    # cel-go sizes no field of the outer attribute map (`device.attributes.x`, unlike `["x"]`) and no element
    # of a `split()` result: a loop over them, or a scan of what it yields or indexes, is unbounded, also
    # through a binding (the server agrees)
    result = compile_selector(expression, GATES)
    assert result.issues == TOO_COMPLEX


URL_SELECTORS = [
    'url(device.attributes["dra.example.com"].endpoint).getHost().matches("^gpu-[0-9]+$")',
    'url(device.attributes["dra.example.com"].endpoint).getEscapedPath().matches("^/v[0-9]+/gpu$")',
    'url(device.attributes["dra.example.com"].endpoint).getHostname().contains("gpu")',
]


@pytest.mark.parametrize("expression", URL_SELECTORS)
def test_url_accessor_results_are_sized_from_1_38(expression: str) -> None:
    """apiserver v0.38 library/cost.go sizes a URL accessor's result by its URL, so a scan of it is bounded;
    v0.37 gives it no size, so the same selector is too complex (`Release.cel_url_sizes`)."""
    on_138 = compile_selector(expression, FeatureGates.parse("", release="1.38"))
    assert on_138.issues == [] and on_138.cost < COST_LIMIT
    for older in ("1.36", "1.37"):
        result = compile_selector(expression, FeatureGates.parse("", release=older))
        assert result.issues == TOO_COMPLEX


def test_the_compile_cache_keys_the_release_cost_model() -> None:
    cache = CelCache()
    expression = URL_SELECTORS[0]
    assert cache.compile(expression, FeatureGates.parse("", release="1.38")).issues == []
    assert cache.compile(expression, FeatureGates.parse("", release="1.37")).issues != []
