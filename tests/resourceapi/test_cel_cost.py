"""The static cost estimate: upstream's limit of 1,000,000 and its size assumptions for `device`."""

from __future__ import annotations

import pytest

from resourceapi.cel import COST_LIMIT, CelIssue, compile_selector
from resourceapi.gates import FeatureGates

GATES = FeatureGates.defaults()

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
    assert result.issues == [CelIssue("forbidden", "too complex, exceeds cost limit")]
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
