"""Upstream's allocator `Features`, derived from the served cluster's feature gates."""

from __future__ import annotations

from dataclasses import dataclass, fields

from resourceapi import gates as g
from resourceapi.gates import FeatureGates
from resourceapi.releases import release


def _on(gates: FeatureGates, name: str) -> bool:
    try:
        return gates.enabled(name)
    except KeyError:
        return False


@dataclass(frozen=True, slots=True)
class Features:
    """Control-flow switches of the allocator (upstream `internal.Features`)."""

    admin_access: bool = True
    consumable_capacity: bool = True
    device_binding_and_status: bool = False
    device_taints: bool = True
    list_type_attributes: bool = False
    partitionable_devices: bool = True
    prioritized_list: bool = True
    # The served release's allocator semantics (resourceapi/releases.py `Allocation`), not an upstream gate.
    live_share_blocks_exclusive: bool = False
    all_mode_pool_fails_node: bool = False
    negative_request_fails: bool = False
    negative_consumed_fails_prefilter: bool = False
    semver_equality: bool = False
    qualified_name_wins: bool = False

    @staticmethod
    def from_gates(gates: FeatureGates) -> Features:
        """The scheduler's mapping: one gate per feature; binding+status needs both of its gates
        (kube-scheduler v1.37.2 `plugins/dynamicresources/dynamicresources.go:841`)."""
        binding = _on(gates, g.DRA_DEVICE_BINDING_CONDITIONS)
        status = _on(gates, g.DRA_RESOURCE_CLAIM_DEVICE_STATUS)
        return Features(
            admin_access=_on(gates, g.DRA_ADMIN_ACCESS),
            consumable_capacity=_on(gates, g.DRA_CONSUMABLE_CAPACITY),
            device_binding_and_status=binding and status,
            device_taints=_on(gates, g.DRA_DEVICE_TAINTS),
            list_type_attributes=_on(gates, g.DRA_LIST_TYPE_ATTRIBUTES),
            partitionable_devices=_on(gates, g.DRA_PARTITIONABLE_DEVICES),
            prioritized_list=_on(gates, g.DRA_PRIORITIZED_LIST),
            **_allocation(gates),
        )


def _allocation(gates: FeatureGates) -> dict[str, bool]:
    """The served release's allocator semantics (resourceapi/releases.py `Allocation`), field by field."""
    row = release(gates.release).allocation
    return {f.name: getattr(row, f.name) for f in fields(row)}
