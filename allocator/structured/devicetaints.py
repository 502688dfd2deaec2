"""DeviceTaintRules applied to ResourceSlices, as the scheduler sees the devices (KEP-5055).

Upstream: `dynamic-resource-allocation/resourceslice/tracker` (`applyPatches`, v0.37.2): the scheduler
allocates from slices "patched" with each rule's taint on every device its selector matches (driver, pool,
device name; all set fields must match, no selector matches nothing), when DRADeviceTaintRules is on. The
taints then count as the slice's own do (allocator/structured/search.py `taint_prevents`): NoSchedule and
NoExecute block a request that does not tolerate them, `None` blocks nothing. Evicting running pods for a
NoExecute taint is the device taint eviction controller's business, not the allocator's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from resourceapi import gates as g
from resourceapi.api.resource_v1 import Device, DeviceTaintRule, ResourceSlice
from resourceapi.gates import FeatureGates


def rules_apply(gates: FeatureGates) -> bool:
    """The scheduler watches DeviceTaintRules only with DRADeviceTaintRules (which needs DRADeviceTaints)."""
    values = gates.as_dict()
    return bool(values.get(g.DRA_DEVICE_TAINTS)) and bool(values.get(g.DRA_DEVICE_TAINT_RULES))


def ordered(rules: Iterable[DeviceTaintRule]) -> list[DeviceTaintRule]:
    """Rules by name: upstream lists them from an informer's store (no order); a fixed one keeps messages
    (the first untolerated taint) reproducible."""
    return sorted(rules, key=lambda r: r.metadata.name)


def selects(rule: DeviceTaintRule, driver: str, pool: str, device: str) -> bool:
    """Whether the rule's selector matches the device `driver/pool/device`."""
    selector = rule.spec.device_selector
    if selector is None:
        return False
    return (
        (selector.driver is None or selector.driver == driver)
        and (selector.pool is None or selector.pool == pool)
        and (selector.device is None or selector.device == device)
    )


def patch_slice(model: ResourceSlice, rules: Sequence[DeviceTaintRule]) -> ResourceSlice:
    """`model` with each matching rule's taint appended to its devices' taints (in rule order); the same
    object when no rule matches (a copy otherwise: input objects are never modified)."""
    spec = model.spec
    driver, pool = spec.driver, spec.pool.name
    devices = spec.devices or []
    patched: list[Device] | None = None
    for rule in rules:
        for i, device in enumerate(devices):
            if not selects(rule, driver, pool, device.name):
                continue
            if patched is None:
                patched = list(devices)
            current = patched[i]
            taints = [*(current.taints or []), rule.spec.taint]
            patched[i] = current.model_copy(update={"taints": taints})
    if patched is None:
        return model
    return model.model_copy(update={"spec": spec.model_copy(update={"devices": patched})})


def patch_slices(
    slices: Iterable[ResourceSlice], rules: Iterable[DeviceTaintRule], gates: FeatureGates
) -> list[ResourceSlice]:
    """Every slice as the scheduler allocates from it under `gates` (unpatched when the rules do not
    apply)."""
    chosen = ordered(rules) if rules_apply(gates) else []
    if not chosen:
        return list(slices)
    return [patch_slice(s, chosen) for s in slices]
