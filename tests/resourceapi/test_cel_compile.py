"""compile_selector: upstream's verdicts and messages (kubernetes/kubernetes
pkg/apis/resource/validation/validation.go, the CEL selector rules, and
staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go)."""

from __future__ import annotations

import pytest
from support.cel import compiled

from resourceapi.cel import CelIssue, compile_selector
from resourceapi.gates import DRA_CONSUMABLE_CAPACITY, DRA_LIST_TYPE_ATTRIBUTES, FeatureGates

GATES = FeatureGates.defaults()
NO_CONSUMABLE = GATES.with_overrides(**{DRA_CONSUMABLE_CAPACITY: False})
LISTS_ON = GATES.with_overrides(**{DRA_LIST_TYPE_ATTRIBUTES: True})


def issue(expression: str, gates: FeatureGates = GATES, stored: bool = False) -> CelIssue:
    result = compile_selector(expression, gates, stored=stored)
    assert len(result.issues) == 1, result.issues
    assert result.program is None or result.issues[0].kind == "forbidden"
    return result.issues[0]


ACCEPTED = [
    'device.capacity["gpu.nvidia.com"].shares.isGreaterThan(quantity("0"))',  # corrected KEP Story 1
    'device.attributes["driver.example.com"].type == "gpu"',
    'device.capacity["driver.example.com"].memory == quantity("64Gi")',
    'device.capacity["driver.example.com"].memory.compareTo(quantity("64Gi")) >= 0',
    'device.attributes["d"].version.isGreaterThan(semver("1.2.0"))',
    'device.attributes["d"].version.compareTo(semver("v1.2", true)) >= 0',
    'semver("1.2.3").major() == 1 && isSemver("1.2.3")',
    'device.attributes["d"].?x.orValue("") == "a"',
    'cel.bind(dra, device.attributes["dra.example.com"], dra.a && dra.b)',
    'device.driver == "gpu.nvidia.com" && device.driver.startsWith("gpu.")',
    'device.attributes["d"].model.lowerAscii().matches("^a100")',
    'device.attributes["d"].exists(k, k.startsWith("gpu"))',
    'has(device.attributes["d"].x) && "y" in device.attributes["d"]',
    'device.attributes["d"].x',  # dyn result: allowed, checked at evaluation
    'device.capacity["d"].memory.add(1).sub(quantity("1")).isInteger()',
    'device.capacity["d"].memory != device.capacity["d"].other',
    'sign(device.capacity["d"].memory) > 0 && isQuantity("1Gi")',
]


@pytest.mark.parametrize("expression", ACCEPTED)
def test_accepted_expressions_compile_without_issues(expression: str) -> None:
    compiled(expression, GATES)


def test_kep_story1_selector_is_rejected_at_column_40() -> None:
    expr = 'device.capacity["shares"].isGreaterThan(quantity("0"))'
    got = issue(expr)
    assert got.kind == "invalid"
    assert got.detail == (
        "compilation failed: ERROR: <input>:1:40: found no matching overload for 'isGreaterThan' applied to "
        "'map(string, kubernetes.Quantity).(kubernetes.Quantity)'\n"
        ' | device.capacity["shares"].isGreaterThan(quantity("0"))\n'
        " | .......................................^"
    )


def test_ordering_operators_on_quantity_are_rejected() -> None:
    got = issue('device.capacity["d"].memory >= quantity("1Gi")')
    assert got.detail.startswith(
        "compilation failed: ERROR: <input>:1:29: found no matching overload for '_>=_' applied to "
        "'(kubernetes.Quantity, kubernetes.Quantity)'"
    )


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            'device.capacity["d"].memory >= 5',
            "ERROR: <input>:1:29: found no matching overload for '_>=_' applied to "
            "'(kubernetes.Quantity, int)'",
        ),
        (
            'device.capacity["d"].memory == 5',
            "ERROR: <input>:1:29: found no matching overload for '_==_' applied to "
            "'(kubernetes.Quantity, int)'",
        ),
        (
            'device.capacity["d"].memory.startsWith("1")',
            "ERROR: <input>:1:39: found no matching overload for 'startsWith' applied to "
            "'kubernetes.Quantity.(string)'",
        ),
        (
            'device.capacity["d"]["memory"] + 1 == 2',
            "ERROR: <input>:1:32: found no matching overload for '_+_' applied to "
            "'(kubernetes.Quantity, int)'",
        ),
    ],
)
def test_capacity_entries_are_quantities_to_the_checker(expression: str, message: str) -> None:
    got = issue(expression)
    assert got.kind == "invalid"
    assert got.detail.startswith("compilation failed: " + message + "\n | " + expression + "\n | ")


def test_undeclared_reference_matches_upstream_text() -> None:
    assert issue("noSuchVar").detail == (
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in container '')\n"
        " | noSuchVar\n"
        " | ^"
    )


@pytest.mark.parametrize(
    ("expression", "type_text"),
    [("1", "int"), ('"a"', "string"), ("[true]", "list(bool)"), ('quantity("1")', "kubernetes.Quantity")],
)
def test_non_bool_results_are_rejected_with_their_type(expression: str, type_text: str) -> None:
    got = issue(expression)
    assert got == CelIssue("invalid", f"must evaluate to bool or the unknown type, not {type_text}")


def test_allow_multiple_allocations_is_undefined_without_consumable_capacity() -> None:
    got = issue("device.allowMultipleAllocations", NO_CONSUMABLE)
    assert got.detail == (
        "compilation failed: ERROR: <input>:1:7: undefined field 'allowMultipleAllocations'\n"
        " | device.allowMultipleAllocations\n"
        " | ......^"
    )


def test_allow_multiple_allocations_is_declared_with_consumable_capacity() -> None:
    assert compile_selector("device.allowMultipleAllocations", GATES).issues == []


def test_stored_expressions_see_every_field_regardless_of_gates() -> None:
    assert compile_selector("device.allowMultipleAllocations", NO_CONSUMABLE, stored=True).issues == []


def test_includes_needs_list_type_attributes_for_new_expressions() -> None:
    expr = 'device.attributes["d"].models.includes("a100")'
    assert "undeclared reference to 'includes'" in issue(expr).detail
    assert compile_selector(expr, LISTS_ON).issues == []
    assert compile_selector(expr, GATES, stored=True).issues == []


def test_several_errors_are_reported_in_source_order() -> None:
    detail = issue("a == b").detail
    assert detail.count("ERROR: <input>:") == 2
    assert detail.index("'a'") < detail.index("'b'")


def test_syntax_errors_are_compilation_failures() -> None:
    got = issue("device.driver ==")
    assert got.kind == "invalid"
    assert got.detail.startswith("compilation failed: ERROR: <input>:1:17: Syntax error:")


def test_caret_line_uses_wide_dots_after_non_ascii_characters() -> None:
    got = issue('"é" == 1')
    assert got.detail.endswith(' | "é" == 1\n | .．..^')


def test_message_literals_of_internal_types_are_undeclared() -> None:
    got = issue('kubernetes.Quantity{value: "1"} == quantity("1")')
    assert "undeclared reference to 'kubernetes.Quantity'" in got.detail


@pytest.mark.parametrize(
    "expression",
    ['url("https://x").getHost() == "x"', 'isCIDR("10.0.0.0/8")', 'ip("10.0.0.1").family() == 4'],
)
def test_kubernetes_url_ip_and_cidr_libraries_are_declared(expression: str) -> None:
    assert compile_selector(expression, GATES).issues == []


def test_capacity_entries_reached_through_a_binding_are_dyn_to_the_checker() -> None:
    """Divergence: upstream rejects this (Quantity >= int); the cel-expr-python checker sees `dyn`."""
    assert compile_selector('cel.bind(c, device.capacity["d"], c.memory >= 5)', GATES).issues == []


def test_nesting_deeper_than_32_levels_is_refused() -> None:
    """Divergence: cel-cpp's fixed recursion limit is 32 where cel-go's parser allows 250."""
    assert compile_selector("(" * 30 + "true" + ")" * 30, GATES).issues == []
    got = issue("(" * 40 + "true" + ")" * 40)
    assert got.kind == "invalid"
    assert got.detail.startswith("compilation failed: ")
    assert "recursion" in got.detail


# --- what kube-apiserver v1.37.2 refuses when it compiles (measured by tests/differential) ------------------

FORMAT_ANY = (
    "error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, "
    "lists, types, durations, and timestamps, was given google.protobuf.Any"
)


@pytest.mark.parametrize(
    ("expression", "where", "message"),
    [
        ('"%s".format([device.attributes["x"].model]) == ""', 36, FORMAT_ANY),
        (
            '"%d".format(["a"]) == ""',
            14,
            "error during formatting: decimal clause can only be used on integers, was given string",
        ),
        ('"%s-%d".format([1]) == ""', 15, "index 1 out of range"),
        ('"a".matches("[unclosed")', 13, "invalid matches argument"),
        ("true && 1", 9, "expected type 'bool' but found 'int'"),
        ("1 || false", 1, "expected type 'bool' but found 'int'"),
    ],
)
def test_constant_arguments_are_checked_as_upstream_compiles(
    expression: str, where: int, message: str
) -> None:
    found = issue(expression)
    assert found.kind == "invalid"
    assert found.detail.startswith(f"compilation failed: ERROR: <input>:1:{where}: {message}\n")


def test_format_of_formattable_values_compiles() -> None:
    # (its argument list is exempt from the homogeneous literal check, as in cel-go)
    assert compile_selector('"%s-%d".format([device.driver, 1]) == ""', GATES).issues == []
    assert compile_selector('"%s".format([["a", 1]]) == ""', GATES).issues == []


def test_constant_invalid_find_pattern_fails_when_the_program_is_built() -> None:
    found = issue('"a".find("[unclosed") == ""')
    assert found == CelIssue(
        "internal", "program instantiation failed: error parsing regexp: missing closing ]: `[unclosed`"
    )


def test_split_lists_are_unbounded_to_the_cost_estimate() -> None:
    assert issue('"a,b".split(",").isSorted()') == CelIssue("forbidden", "too complex, exceeds cost limit")
    assert compile_selector('"a,b".split(",").size() == 2', GATES).issues == []


def test_an_empty_expression_is_reported_at_column_0_without_a_snippet() -> None:
    found = issue("")
    assert found.detail.startswith("compilation failed: ERROR: <input>:1:0: Syntax error: ")
    assert "\n" not in found.detail


def test_sign_as_a_member_is_refused_as_upstream_refuses_it() -> None:
    # Upstream declares `sign` as a global function only: kube-apiserver v1.37.2 says `found no matching
    # overload for 'sign' applied to 'kubernetes.Quantity.()'`; cel-cpp words it as an undeclared reference
    # (docs/divergences.md). Both refuse the selector.
    found = issue('quantity("1").sign() == 1')
    assert found.kind == "invalid"
    assert "ERROR: <input>:1:19: undeclared reference to 'sign'" in found.detail


@pytest.mark.parametrize(
    ("expression", "where", "message"),
    [
        ('[device.attributes["x"].y, "x"].size() == 2', 28, "expected type 'any' but found 'string'"),
        ('["x", device.attributes["x"].y][0] == "a"', 29, "expected type 'string' but found 'any'"),
        ('["a", 1].size() == 2', 7, "expected type 'string' but found 'int'"),
    ],
)
def test_aggregate_literals_are_homogeneous_as_upstream_compiles_them(
    expression: str, where: int, message: str
) -> None:
    # a device attribute's value is `any` to upstream's checker (measured against kube-apiserver v1.37.2)
    found = issue(expression)
    assert found.detail.startswith(f"compilation failed: ERROR: <input>:1:{where}: {message}\n")


def test_joins_are_too_complex_as_for_kube_apiserver() -> None:
    assert issue('[device.attributes["x"].y].join("-") == "a"') == CelIssue(
        "forbidden", "too complex, exceeds cost limit"
    )


def test_a_loop_over_an_attribute_value_needs_list_type_attributes() -> None:
    """Upstream declares an attribute's value `any` without DRAListTypeAttributes (`dyn` with it), and
    cel-go cannot range over `any` (found by upstream's compile_test.go table, tests/differential)."""
    expr = 'device.attributes["dra.example.com"].ids.exists(id, id == 1)'
    assert issue(expr).detail == (
        "compilation failed: ERROR: <input>:1:37: expression of type 'any' cannot be range of a "
        "comprehension (must be list, map, or dynamic)\n | " + expr + "\n | " + "." * 36 + "^"
    )
    assert compile_selector(expr, FeatureGates.parse("DRAListTypeAttributes=true")).issues == []
    assert compile_selector(expr, FeatureGates.defaults(), stored=True).issues == []


def test_a_failed_operand_reports_one_error_as_cel_go_does() -> None:
    detail = issue("device.attributes[true].someBoolean").detail
    assert detail.count("ERROR:") == 1 and "'*error*'" not in detail
