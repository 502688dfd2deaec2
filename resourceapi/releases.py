"""The Kubernetes releases dra-capacity targets, and what differs between them: one row per release.

The release is a dimension of the product (docs/cli.md `--kubernetes-version`): every behaviour that differs
by release reads it from here, never from a version check of its own. Gate defaults per release are in
resourceapi/gates.py (`RELEASE_DEFAULTS`); this table holds the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from resourceapi.gates import (
    DEFAULT_RELEASE,
    DRA_ADMIN_ACCESS,
    DRA_DEVICE_TAINT_RULES,
    DRA_DEVICE_TAINTS,
    DRA_EXTENDED_RESOURCE,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    RELEASE_DEFAULTS,
    FeatureGates,
)


@dataclass(frozen=True)
class Release:
    """One Kubernetes release's differences.

    `tested`: a test tier runs it (1.34 and 1.35 are accepted but untested). `locked`: the known gates it
    locks to their default (`LockToDefault`); setting one the other way is a warning, never a refusal, since
    gates describe the served cluster. `cel_lists_always`: new CEL selectors compile with the Lists v1
    library, so `includes()` is declared whatever DRAListTypeAttributes says (1.38 compiles new expressions
    at compatibility version binary-1 = 1.37, which has it; 1.37 declares it only with the gate).
    """

    name: str
    tested: bool
    locked: frozenset[str]
    cel_lists_always: bool


RELEASES: dict[str, Release] = {
    r.name: r
    for r in (
        Release("1.34", tested=False, locked=frozenset(), cel_lists_always=False),
        Release("1.35", tested=False, locked=frozenset(), cel_lists_always=False),
        Release("1.36", tested=True, locked=frozenset({DRA_ADMIN_ACCESS}), cel_lists_always=False),
        Release(
            "1.37",
            tested=True,
            locked=frozenset({DRA_ADMIN_ACCESS, DRA_PRIORITIZED_LIST, DRA_EXTENDED_RESOURCE}),
            cel_lists_always=False,
        ),
        Release(
            "1.38",
            tested=True,
            locked=frozenset(
                {
                    DRA_ADMIN_ACCESS,
                    DRA_PRIORITIZED_LIST,
                    DRA_EXTENDED_RESOURCE,
                    DRA_DEVICE_TAINTS,
                    DRA_DEVICE_TAINT_RULES,
                    DRA_PARTITIONABLE_DEVICES,
                }
            ),
            cel_lists_always=True,
        ),
    )
}
assert RELEASES.keys() == RELEASE_DEFAULTS.keys(), "every release has gate defaults, and only those"


class ReleaseError(ValueError):
    """A `--kubernetes-version` that names no known release."""


def release(name: str = DEFAULT_RELEASE) -> Release:
    """The row of release `name` (`1.37`); ReleaseError naming the known ones otherwise."""
    row = RELEASES.get(name)
    if row is None:
        raise ReleaseError(f"unknown Kubernetes version {name!r}; known: {', '.join(RELEASES)}")
    return row


def release_warnings(gates: FeatureGates) -> list[str]:
    """What a user describing a cluster of `gates.release` should hear: an untested release, and each gate
    set against the release's lock (a warning, never a refusal: everything follows the gates as given)."""
    row = release(gates.release)
    out: list[str] = []
    if not row.tested:
        out.append(f"Kubernetes {row.name} is untested: dra-capacity is tested on {', '.join(_tested())}")
    defaults = RELEASE_DEFAULTS[row.name]
    for name in sorted(row.locked):
        locked = defaults.get(name, False)
        if gates.enabled(name) != locked:
            value = "true" if locked else "false"
            out.append(
                f"{name} is locked to {value} in Kubernetes {row.name} "
                "(its components refuse to start with it set otherwise)"
            )
    return out


def _tested() -> list[str]:
    return [r.name for r in RELEASES.values() if r.tested]
