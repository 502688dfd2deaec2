"""The CEL semver library, mirroring apiserver pkg/cel/library/semver_test.go TestSemver by case name."""

from __future__ import annotations

import pytest
from support.cel import compiled

from resourceapi.cel import CelRuntimeError, compile_selector, device_input
from resourceapi.gates import FeatureGates

GATES = FeatureGates.defaults()
DEVICE = device_input("dra.example.com", {"fw": {"version": "1.2.3-rc.1+build.7"}}, {})

CASES: list[tuple[str, str, bool | str]] = [
    ("parse", 'semver("1.2.3") == semver("1.2.3")', True),
    ("parseInvalidVersion", 'semver("v1.0") == semver("1.0.0")', "No Major.Minor.Patch elements found"),
    ("isSemver", 'isSemver("1.2.3-beta.1+build.1")', True),
    ("isSemver_empty_false", 'isSemver("")', False),
    ("isSemver_v_prefix_false", 'isSemver("v1.0.0")', False),
    ("isSemver_v_leading_whitespace_false", 'isSemver(" 1.0.0")', False),
    ("isSemver_v_contains_whitespace_false", 'isSemver("1. 0.0")', False),
    ("isSemver_v_trailing_whitespace_false", 'isSemver("1.0.0 ")', False),
    ("isSemver_leading_zeros_false", 'isSemver("01.01.01")', False),
    ("isSemver_major_only_false", 'isSemver("1")', False),
    ("isSemver_major_minor_only_false", 'isSemver("1.1")', False),
    ("isSemver_empty_normalize_false", 'isSemver("", true)', False),
    ("isSemver_v_leading_whitespace_normalize_false", 'isSemver(" 1.0.0", true)', False),
    ("isSemver_v_contains_whitespace_normalize_false", 'isSemver("1. 0.0", true)', False),
    ("isSemver_v_trailing_whitespace_normalize_false", 'isSemver("1.0.0 ", true)', False),
    ("isSemver_v_prefix_normalize_true", 'isSemver("v1.0.0", true)', True),
    ("isSemver_leading_zeros_normalize_true", 'isSemver("01.01.01", true)', True),
    ("isSemver_major_only_normalize_true", 'isSemver("1", true)', True),
    ("isSemver_major_minor_only_normalize_true", 'isSemver("1.1", true)', True),
    ("equality_normalize", 'semver("v01.01", true) == semver("1.1.0")', True),
    ("equality_reflexivity", 'semver("1.2.3") == semver("1.2.3")', True),
    ("inequality", 'semver("1.2.3") == semver("1.0.0")', False),
    ("semver_less", 'semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    ("semver_less_false", 'semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    ("semver_greater", 'semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    ("semver_greater_false", 'semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    ("compare_equal", 'semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    ("compare_less", 'semver("1.0.0").compareTo(semver("1.2.3")) == -1', True),
    ("compare_greater", 'semver("1.2.3").compareTo(semver("1.0.0")) == 1', True),
    ("major", 'semver("1.2.3").major() == 1', True),
    ("minor", 'semver("1.2.3").minor() == 2', True),
    ("patch", 'semver("1.2.3").patch() == 3', True),
]


@pytest.mark.parametrize(("expression", "want"), [(e, w) for _, e, w in CASES], ids=[n for n, _, _ in CASES])
def test_upstream_semver_table(expression: str, want: bool | str) -> None:
    program = compiled(expression, GATES)
    if isinstance(want, str):
        with pytest.raises(CelRuntimeError) as err:
            program.matches(DEVICE)
        assert err.value.message == want
    else:
        assert program.matches(DEVICE) is want


def test_is_semver_no_overload_is_a_compile_error() -> None:
    issues = compile_selector("isSemver([1, 2, 3])", GATES).issues
    assert len(issues) == 1
    assert "found no matching overload for 'isSemver' applied to '(list(int))'" in issues[0].detail


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        ('device.attributes["dra.example.com"].fw == semver("1.2.3-rc.1")', True),
        ('device.attributes["dra.example.com"].fw.isLessThan(semver("1.2.3"))', True),
        ('device.attributes["dra.example.com"].fw.major() == 1', True),
        ('device.attributes["dra.example.com"].fw.compareTo(semver("1.2.3-rc.2")) < 0', True),
    ],
)
def test_version_attributes_are_semver_values(expression: str, want: bool) -> None:
    result = compile_selector(expression, GATES)
    assert result.program is not None
    assert result.program.matches(DEVICE) is want


def test_semver_and_quantity_do_not_mix_at_runtime() -> None:
    result = compile_selector('device.attributes["dra.example.com"].fw.isGreaterThan(quantity("1"))', GATES)
    assert result.program is not None
    with pytest.raises(CelRuntimeError) as err:
        result.program.matches(DEVICE)
    assert err.value.message == "no such overload: isGreaterThan"
