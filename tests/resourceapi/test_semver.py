"""Semver: blang/semver v4 strict parsing and ordering, and apiserver's normalizing parse."""

from __future__ import annotations

import pytest

from resourceapi.machinery.semver import Semver, SemverError


@pytest.mark.parametrize(
    ("text", "major", "minor", "patch"),
    [
        ("1.2.3", 1, 2, 3),
        ("0.0.0", 0, 0, 0),
        ("1.2.3-alpha.1+build.5", 1, 2, 3),
        ("10.20.30-rc-1", 10, 20, 30),
    ],
)
def test_strict_parse_accepts_semver_2(text: str, major: int, minor: int, patch: int) -> None:
    v = Semver.parse(text)
    assert (v.major, v.minor, v.patch) == (major, minor, patch)
    assert str(v) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("1.2", "No Major.Minor.Patch elements found"),
        ("v1.2.3", 'Invalid character(s) found in major number "v1"'),
        ("01.2.3", 'Major number must not contain leading zeroes "01"'),
        ("1.02.3", 'Minor number must not contain leading zeroes "02"'),
        ("1.2.03", 'Patch number must not contain leading zeroes "03"'),
        ("1.2.x", 'Invalid character(s) found in patch number "x"'),
        ("1.2.3-", "Prerelease is empty"),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.2.3-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.2.3+", "Build meta data is empty"),
        ("1.2.3+a_b", 'Invalid character(s) found in build meta data "a_b"'),
        ("1..3", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("99999999999999999999.0.0", 'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
    ],
)
def test_strict_parse_errors_carry_blang_messages(text: str, message: str) -> None:
    with pytest.raises(SemverError) as err:
        Semver.parse(text)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("text", "normalized"),
    [("v1.0.0", "1.0.0"), ("1.0", "1.0.0"), ("1", "1.0.0"), ("01.01.01", "1.1.1"), ("v2.1-rc", None)],
)
def test_normalizing_parse(text: str, normalized: str | None) -> None:
    if normalized is None:
        with pytest.raises(SemverError, match="short version cannot contain PreRelease/Build meta data"):
            Semver.parse(text, normalize=True)
    else:
        assert str(Semver.parse(text, normalize=True)) == normalized


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [
        ("1.2.3", "1.2.3", 0),
        ("1.2.3", "1.2.4", -1),
        ("2.0.0", "1.9.9", 1),
        ("1.0.0-alpha", "1.0.0", -1),
        ("1.0.0-alpha", "1.0.0-alpha.1", -1),
        ("1.0.0-alpha.1", "1.0.0-alpha.beta", -1),
        ("1.0.0-beta.2", "1.0.0-beta.11", -1),
        ("1.0.0-rc.1", "1.0.0-beta.11", 1),
        ("1.0.0+build1", "1.0.0+build2", 0),
    ],
)
def test_compare_follows_semver_precedence(a: str, b: str, want: int) -> None:
    assert Semver.parse(a).compare(Semver.parse(b)) == want


def test_equality_ignores_build_metadata() -> None:
    assert Semver.parse("1.0.0+a") == Semver.parse("1.0.0+b")
