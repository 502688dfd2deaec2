"""Semantic versions as the Kubernetes CEL semver library sees them (blang/semver v4, strict parse).

`Semver.parse` follows `semver.Parse` (errors carry blang's text); `Semver.parse(s, normalize=True)` follows
apiserver's `normalizeAndParse` (drop a leading `v`, fill in missing minor/patch, strip leading zeros).
Ordering and equality follow `Version.Compare`, which ignores build metadata.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_MAX_UINT64 = (1 << 64) - 1


class SemverError(ValueError):
    """A string that is not a semantic version; the message is blang/semver's."""


def _contains_only(s: str, allowed: frozenset[str]) -> bool:
    return all(ch in allowed for ch in s)


def _has_leading_zeroes(s: str) -> bool:
    return len(s) > 1 and s[0] == "0"


def _parse_uint(s: str) -> int:
    """Go `strconv.ParseUint(s, 10, 64)` for a digits-only string, with its error text."""
    if not s:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    n = int(s)
    if n > _MAX_UINT64:
        raise SemverError(f'strconv.ParseUint: parsing "{s}": value out of range')
    return n


@dataclass(frozen=True)
class PreRelease:
    """One dot-separated prerelease identifier: numeric ones sort numerically and before alphanumeric ones."""

    text: str
    number: int | None

    def compare(self, other: PreRelease) -> int:
        if self.number is not None and other.number is not None:
            return (self.number > other.number) - (self.number < other.number)
        if self.number is not None:
            return -1
        if other.number is not None:
            return 1
        return (self.text > other.text) - (self.text < other.text)


def _parse_prerelease(s: str) -> PreRelease:
    if not s:
        raise SemverError("Prerelease is empty")
    if _contains_only(s, _NUMBERS):
        if _has_leading_zeroes(s):
            raise SemverError(f'Numeric PreRelease version must not contain leading zeroes "{s}"')
        return PreRelease(s, _parse_uint(s))
    if _contains_only(s, _ALPHANUM):
        return PreRelease(s, None)
    raise SemverError(f'Invalid character(s) found in prerelease "{s}"')


@dataclass(frozen=True)
class Semver:
    """A parsed semantic version; `==`, `<` ... compare as `Version.Compare` (build metadata ignored)."""

    major: int
    minor: int
    patch: int
    pre: tuple[PreRelease, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    @staticmethod
    def parse(s: str, normalize: bool = False) -> Semver:
        """`semver.Parse`, or apiserver's `normalizeAndParse` with `normalize`; raises SemverError."""
        return _parse_normalized(s) if normalize else _parse_strict(s)

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 as blang's `Version.Compare`."""
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for a_pre, b_pre in zip(self.pre, other.pre, strict=False):
            c = a_pre.compare(b_pre)
            if c:
                return c
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __le__(self, other: Semver) -> bool:
        return self.compare(other) <= 0

    def __gt__(self, other: Semver) -> bool:
        return self.compare(other) > 0

    def __ge__(self, other: Semver) -> bool:
        return self.compare(other) >= 0

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(p.text for p in self.pre)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def identity(self) -> str:
        """The text without build metadata: equal versions have equal identities."""
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(p.text for p in self.pre)
        return s


@functools.lru_cache(maxsize=4096)
def _parse_strict(s: str) -> Semver:
    if not s:
        raise SemverError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    numbers: list[int] = []
    for label, text in (("major", parts[0]), ("minor", parts[1])):
        if not _contains_only(text, _NUMBERS):
            raise SemverError(f'Invalid character(s) found in {label} number "{text}"')
        if _has_leading_zeroes(text):
            raise SemverError(f'{label.capitalize()} number must not contain leading zeroes "{text}"')
        numbers.append(_parse_uint(text))
    patch_text = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    plus = patch_text.find("+")
    if plus != -1:
        build = patch_text[plus + 1 :].split(".")
        patch_text = patch_text[:plus]
    dash = patch_text.find("-")
    if dash != -1:
        prerelease = patch_text[dash + 1 :].split(".")
        patch_text = patch_text[:dash]
    if not _contains_only(patch_text, _NUMBERS):
        raise SemverError(f'Invalid character(s) found in patch number "{patch_text}"')
    if _has_leading_zeroes(patch_text):
        raise SemverError(f'Patch number must not contain leading zeroes "{patch_text}"')
    patch = _parse_uint(patch_text)
    pre = tuple(_parse_prerelease(p) for p in prerelease)
    for b in build:
        if not b:
            raise SemverError("Build meta data is empty")
        if not _contains_only(b, _ALPHANUM):
            raise SemverError(f'Invalid character(s) found in build meta data "{b}"')
    return Semver(numbers[0], numbers[1], patch, pre, tuple(build))


def _parse_normalized(s: str) -> Semver:
    """apiserver `normalizeAndParse`: like blang's ParseTolerant, but without trimming whitespace."""
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(ch in parts[-1] for ch in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts.extend(["0"] * (3 - len(parts)))
    return _parse_strict(".".join(parts))
