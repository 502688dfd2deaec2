"""One row of upstream's shared allocator table, and its runner (as ported here from
`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go`).

`Case` is one row; `check_case` runs it through `Cluster.allocate` and compares with upstream's expected
error, results and step count. Gates follow upstream's convention: `features(...)` names the allocator
features a case turns on (every other one is off); `stable_features()` is the set the product enables by
default (upstream's Features with AdminAccess, ConsumableCapacity, DeviceTaints, PartitionableDevices and
PrioritizedList on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from resourceapi import gates as g
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates
from support.dra_objects import NODE1, REGION1, dump, node, run

_GATES_OF = {
    "AdminAccess": (g.DRA_ADMIN_ACCESS,),
    "ConsumableCapacity": (g.DRA_CONSUMABLE_CAPACITY,),
    "DeviceBindingAndStatus": (g.DRA_DEVICE_BINDING_CONDITIONS, g.DRA_RESOURCE_CLAIM_DEVICE_STATUS),
    "DeviceTaints": (g.DRA_DEVICE_TAINTS,),
    "ListTypeAttributes": (g.DRA_LIST_TYPE_ATTRIBUTES,),
    "PartitionableDevices": (g.DRA_PARTITIONABLE_DEVICES,),
    "PrioritizedList": (g.DRA_PRIORITIZED_LIST,),
}


STABLE_FEATURES = (
    "AdminAccess",
    "ConsumableCapacity",
    "DeviceTaints",
    "PartitionableDevices",
    "PrioritizedList",
)


def features(*names: str) -> FeatureGates:
    """upstream `Features{<name>: true, ...}`: every other allocator feature is off."""
    return FeatureGates.from_mapping({gate: True for n in names for gate in _GATES_OF[n]}, base={})


def stable_features(*extra: str) -> FeatureGates:
    """The product's default allocator features, plus `extra`."""
    return features(*STABLE_FEATURES, *extra)


def stable_features_without(*names: str) -> FeatureGates:
    """The product's default allocator features less `names`."""
    return features(*(n for n in STABLE_FEATURES if n not in names))


@dataclass
class Case:
    claims: list[ResourceClaim]
    classes: list[DeviceClass]
    slices: list[ResourceSlice]
    want: list[dict[str, Any]] | None = None
    error: str | None = None
    on: tuple[str, str] = (NODE1, REGION1)
    allocated_claims: list[ResourceClaim] = field(default_factory=list)
    feature_gates: FeatureGates = field(default_factory=stable_features)
    calls: int | None = None


def check_case(case: Case) -> None:
    """Run one table case and compare with upstream's expected error, results and step count."""
    outcome = run(
        case.claims,
        case.classes,
        case.slices,
        on=node(*case.on),
        allocated_claims=case.allocated_claims,
        feature_gates=case.feature_gates,
    )
    if case.error is not None:
        assert outcome.error is not None, dump(outcome)
        assert case.error in outcome.error
        assert outcome.results is None
        return
    assert outcome.error is None, outcome.error
    assert dump(outcome) == case.want
    if case.calls is not None:
        assert outcome.allocate_one_calls == case.calls
