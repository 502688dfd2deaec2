"""The Kubernetes CEL semver library v1 (apiserver `library/semverlib.go`) for cel-expr-python.

The checker sees `kubernetes.Semver` (a message, messages.py). At evaluation a Semver is a tagged string,
`RUNTIME_PREFIX` + the version without build metadata, so CEL's native `==` is `Version.EQ` (build metadata
ignored, as upstream's `Semver.Equal`); see quantitylib.py for why strings rather than messages.
"""

from __future__ import annotations

import functools
from typing import Any

from resourceapi.machinery.semver import Semver, SemverError

RUNTIME_PREFIX = "\ue000S"


def to_runtime(v: Semver) -> str:
    """The evaluation-time CEL value of a version (device `version` attributes, folded literals)."""
    return RUNTIME_PREFIX + v.identity()


def is_runtime(v: Any) -> bool:
    """Is `v` an evaluation-time Semver?"""
    return isinstance(v, str) and v.startswith(RUNTIME_PREFIX)


@functools.lru_cache(maxsize=4096)
def value_of(v: str) -> Semver:
    """The version an evaluation-time Semver holds."""
    return Semver.parse(v[len(RUNTIME_PREFIX) :])


def semver(s: str, normalize: bool = False) -> str:
    """`semver(string[, bool])`: a parse error is a runtime error with blang/semver's message."""
    return to_runtime(Semver.parse(s, normalize))


def is_semver(s: str, normalize: bool = False) -> bool:
    try:
        Semver.parse(s, normalize)
    except SemverError:
        return False
    return True


def compare_to(a: Any, b: Any) -> int:
    return value_of(a).compare(value_of(b))


def is_greater_than(a: Any, b: Any) -> bool:
    return compare_to(a, b) == 1


def is_less_than(a: Any, b: Any) -> bool:
    return compare_to(a, b) == -1


def major(v: Any) -> int:
    return value_of(v).major


def minor(v: Any) -> int:
    return value_of(v).minor


def patch(v: Any) -> int:
    return value_of(v).patch
