"""The Kubernetes releases dra-capacity targets, and what differs between them: one row per release.

The release is a dimension of the product (docs/cli.md `--kubernetes-version`): every behaviour that differs
by release reads it from here, never from a version check of its own. Gate defaults per release are in
resourceapi/gates.py (`RELEASE_DEFAULTS`); this table holds the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from resourceapi.gates import (
    DEFAULT_RELEASE,
    DRA_ADMIN_ACCESS,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINT_RULES,
    DRA_DEVICE_TAINTS,
    DRA_EXTENDED_RESOURCE,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    RELEASE_DEFAULTS,
    FeatureGates,
)


@dataclass(frozen=True)
class Validation:
    """What the ported validation (resourceapi/validation/) judges differently by release, read from each
    release's `pkg/apis/resource/validation/validation.go` and `v1/zz_generated.validations.go`.

    `one_slash`: a qualified attribute or capacity name of a ResourceSlice with more than one slash is refused
    (before 1.38 `validateQualifiedName` left it unjudged). `semver_digits`: the numbers of a semver
    attribute have at most this many digits (None: unbounded). `node_selection_apart`: a device's own node
    selection is judged after every device (`validateDeviceNodeSelection`), its `nodeSelector` with exactly
    one term. `capacity_request_names`: a claim's capacity requests and an allocation's `consumedCapacity`
    have qualified-name keys, at most 32 entries and no negative value (1.38's re-validation of a
    ResourceClaimTemplate UPDATE, with unchanged capacity requests ratcheting, has no row: nothing here
    judges a template update, docs/divergences.md "Releases"). `declarative_owner_references`: a missing
    field of an owner reference is the declarative `Required value`, without the handwritten `must not be
    empty` (measured against kube-apiserver v1.38.0-beta.0). `declarative_texts`: the declarative rules
    (`v1/zz_generated.validations.go`) report in place of the handwritten ones they cover: 1.37 marks them
    Beta, enforced; 1.36 marks every one Alpha, so its handwritten `validation.go` texts and order stand
    (ported so far: a DeviceClass's `extendedResourceName`, an opaque configuration's `driver`).
    `quantity_e_notation`: a canonical DecimalSI quantity past E prints with an exponent (`1000000P` as
    `1e21`, apimachinery v0.38.0-beta.0 `CanonicalizeBytes`), before 1.38 as its mantissa alone (`1`), in
    the texts that show a quantity (resourceapi/machinery/goquantity.py `go_canonical`).
    """

    one_slash: bool = False
    semver_digits: int | None = None
    node_selection_apart: bool = False
    capacity_request_names: bool = False
    declarative_owner_references: bool = False
    declarative_texts: bool = True
    quantity_e_notation: bool = False


VALIDATION_1_36 = Validation(declarative_texts=False)
VALIDATION_BEFORE_1_38 = Validation()
VALIDATION_1_38 = Validation(
    one_slash=True,
    semver_digits=18,
    node_selection_apart=True,
    capacity_request_names=True,
    declarative_owner_references=True,
    quantity_e_notation=True,
)


@dataclass(frozen=True)
class Schema:
    """How a release's API types differ from the 1.37 field tree (resourceapi/manifests/schemas/fields.json),
    so strict decoding names what that release's API server names (`unknown field ...`, a 400).

    `absent`: (model, field) pairs the release's types lack. `added`: fields the release has that 1.37 does
    not, as fields.json types (model -> field -> type), new models included. Read from each release's
    `k8s.io/api/resource/v1/types.go` (v0.36.3 against v0.37.2).
    """

    absent: frozenset[tuple[str, str]] = frozenset()
    added: tuple[tuple[str, str, Any], ...] = ()


_V1 = "io.k8s.api.resource.v1."
SCHEMA_1_37 = Schema()
# v0.36.3: no derived attributes, compatibility groups, skipNodeOperations or partitionTypeAttribute, and
# the alpha `nodeAllocatableResourceMappings` (capacityKey, allocationMultiplier) where 1.37 has
# `nodeAllocatableResources`.
SCHEMA_1_36 = Schema(
    absent=frozenset(
        {
            (_V1 + "Device", "nodeAllocatableResources"),
            (_V1 + "DeviceCounterConsumption", "compatibilityGroups"),
            (_V1 + "DeviceRequestAllocationResult", "skipNodeOperations"),
            (_V1 + "DeviceSubRequest", "derivedAttributes"),
            (_V1 + "ExactDeviceRequest", "derivedAttributes"),
            (_V1 + "ResourceSliceSpec", "partitionTypeAttribute"),
            (_V1 + "ResourceSliceSpec", "skipNodeOperations"),
        }
    ),
    added=(
        (
            _V1 + "Device",
            "nodeAllocatableResourceMappings",
            ("d", ("m", _V1 + "NodeAllocatableResourceMapping")),
        ),
        (_V1 + "NodeAllocatableResourceMapping", "capacityKey", "s"),
        (_V1 + "NodeAllocatableResourceMapping", "allocationMultiplier", "q"),
    ),
)


@dataclass(frozen=True)
class Allocation:
    """What the allocator (allocator/structured/) does differently by release, read from each release's
    `dynamic-resource-allocation/structured/internal/stable/allocator_stable.go`.

    `live_share_blocks_exclusive`: a device that no longer allows multiple allocations but still holds a
    committed or in-flight share cannot be allocated exclusively (`deviceCapacityInUse`,
    kubernetes/kubernetes#140798; before 1.38 it could, a double allocation).
    `all_mode_pool_fails_node`: an `allocationMode: All` request meeting an incomplete or invalid pool fails
    that node only (`ErrFailedAllocationOnNode`, v0.38.0-beta.0 allocator_stable.go `validateDeviceRequest`);
    before 1.38 the error fails the pod on every node.
    `negative_request_fails`: a negative capacity request is an error before the request policy rounds it
    (`calculateConsumedCapacity`, v0.38.0-beta.0 stable/consumable_capacity.go); before 1.38 a range's min or
    a valid value rounds it up, and the request is served.
    `negative_consumed_fails_prefilter`: while a committed claim has a negative `consumedCapacity`, PreFilter
    fails every pod that needs an allocation (kube-scheduler v1.38.0-beta.0
    `plugins/dynamicresources/allocateddevices.go` `consumedCapacityError`/`getCapacities`); before 1.38 the
    negative amount is summed with the others.
    `semver_equality`: matchAttribute and distinctAttribute compare versions by semver precedence, so build
    metadata is ignored (`semver.Version.Equals`, v0.38.0-beta.0 stable/constraint.go and
    allocator_stable.go); before 1.38 they compare the strings.
    `qualified_name_wins`: a device publishing one capacity or attribute both as `name` and as
    `<driver>/name` has the qualified one, in CEL and in capacity bookkeeping (v0.38.0-beta.0
    `dynamic-resource-allocation/api/conversion.go`); before 1.38 CEL sees whichever Go's map order puts last,
    and dra-capacity takes the later spelling.
    The allocator's DeviceBindingAndStatus feature is no row here: it follows the DRADeviceBindingConditions
    and DRAResourceClaimDeviceStatus gates (allocator/structured/features.py), whose defaults and locks per
    release are in resourceapi/gates.py and `Release.locked`.
    """

    live_share_blocks_exclusive: bool = False
    all_mode_pool_fails_node: bool = False
    negative_request_fails: bool = False
    negative_consumed_fails_prefilter: bool = False
    semver_equality: bool = False
    qualified_name_wins: bool = False


ALLOCATION_BEFORE_1_38 = Allocation()
ALLOCATION_1_38 = Allocation(
    live_share_blocks_exclusive=True,
    all_mode_pool_fails_node=True,
    negative_request_fails=True,
    negative_consumed_fails_prefilter=True,
    semver_equality=True,
    qualified_name_wins=True,
)


@dataclass(frozen=True)
class Release:
    """One Kubernetes release's differences.

    `tested`: a test tier runs it (1.34 and 1.35 are accepted but untested). `locked`: the known gates it
    locks to their default (`LockToDefault`); setting one the other way is a warning, never a refusal, since
    gates describe the served cluster. `cel_lists_always`: new CEL selectors compile with the Lists v1
    library, so `includes()` is declared whatever DRAListTypeAttributes says (1.38 compiles new expressions
    at compatibility version binary-1 = 1.37, which has it; 1.37 declares it only with the gate).
    `cel_url_sizes`: the cost model sizes the URL accessors' results (`getHost`, `getEscapedPath`, ...) by
    their URL, so a `matches()` on one is bounded (apiserver v0.38 `pkg/cel/library/cost.go`; before 1.38
    their results have no size estimate and such a selector is too complex).
    `cel_container_in_undeclared`: cel-go's `undeclared reference to 'x'` ends with ` (in container '')`
    (github.com/google/cel-go v0.29; cel.dev/cel-go v0.33 in 1.38 drops it). `schema`: the fields its
    API types have, as a difference from 1.37's (strict decoding's unknown fields).

    Read from each release's source: `pkg/features/kube_features.go` (LockToDefault), the staging modules'
    `dynamic-resource-allocation/cel/compile.go` and `apiserver/pkg/cel/{environment/base.go,library/cost.go}`
    (v1.36.3, v1.37.2, v1.38.0-beta.0).
    """

    name: str
    tested: bool
    locked: frozenset[str]
    cel_lists_always: bool
    cel_url_sizes: bool = False
    cel_container_in_undeclared: bool = True
    validation: Validation = VALIDATION_BEFORE_1_38
    allocation: Allocation = ALLOCATION_BEFORE_1_38
    schema: Schema = SCHEMA_1_37


RELEASES: dict[str, Release] = {
    r.name: r
    for r in (
        Release(
            "1.34",
            tested=False,
            locked=frozenset(),
            cel_lists_always=False,
            validation=VALIDATION_1_36,
            schema=SCHEMA_1_36,
        ),
        Release(
            "1.35",
            tested=False,
            locked=frozenset(),
            cel_lists_always=False,
            validation=VALIDATION_1_36,
            schema=SCHEMA_1_36,
        ),
        Release(
            "1.36",
            tested=True,
            locked=frozenset({DRA_ADMIN_ACCESS}),
            cel_lists_always=False,
            validation=VALIDATION_1_36,
            schema=SCHEMA_1_36,
        ),
        Release(
            "1.37",
            tested=True,
            locked=frozenset(
                {
                    DRA_ADMIN_ACCESS,
                    DRA_PRIORITIZED_LIST,
                    DRA_EXTENDED_RESOURCE,
                    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
                }
            ),
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
                    DRA_DEVICE_BINDING_CONDITIONS,
                    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
                }
            ),
            cel_lists_always=True,
            cel_url_sizes=True,
            cel_container_in_undeclared=False,
            validation=VALIDATION_1_38,
            allocation=ALLOCATION_1_38,
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


@dataclass(frozen=True)
class ServerRelease:
    """The release a served cluster's `/version` maps to: `name` (a RELEASES key), and a warning when the
    server runs a release dra-capacity does not know (it is then treated as the nearest known one)."""

    name: str
    git_version: str
    warning: str | None = None
    unknown: bool = False


def _minor(name: str) -> tuple[int, int]:
    major, _, minor = name.partition(".")
    return int(major), int(minor)


def server_release(git_version: str) -> ServerRelease:
    """Map a `/version` gitVersion (`v1.38.0-beta.0`, `v1.37.2-gke.100`) to a known release: a newer unknown
    one is treated as the newest known, an older one as the oldest, each with a warning; an unreadable one as
    the default release, with a warning."""
    found = _GIT_VERSION.match(git_version.strip())
    known = sorted(RELEASES, key=_minor)
    if found is None:
        return ServerRelease(
            DEFAULT_RELEASE,
            git_version,
            f"the API server reports version {git_version!r}, which names no release: treating it as "
            f"Kubernetes {DEFAULT_RELEASE}",
            unknown=True,
        )
    name = f"{found.group(1)}.{found.group(2)}"
    if name in RELEASES:
        return ServerRelease(name, git_version)
    nearest = known[-1] if _minor(name) > _minor(known[-1]) else known[0]
    return ServerRelease(
        nearest,
        git_version,
        f"the API server runs Kubernetes {git_version}, which dra-capacity does not know: treating it as "
        f"Kubernetes {nearest}, the {'newest' if nearest == known[-1] else 'oldest'} known release",
        unknown=True,
    )


def lowest(releases: list[str]) -> str:
    """The oldest of `releases` (RELEASES keys): during an HA upgrade the servers differ, and objects must be
    judged as the oldest one would."""
    return min(releases, key=_minor)


_GIT_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?")
