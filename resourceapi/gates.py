"""Feature gates: the names dra-capacity understands, per-release Kubernetes defaults, the product defaults.

Gates describe the cluster being served (`--feature-gates`, docs/user-guide.md): none is locked, so a 1.35
cluster can be described with `DRAExtendedResource=false`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DRA_ADMIN_ACCESS = "DRAAdminAccess"
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
DRA_DEVICE_TAINTS = "DRADeviceTaints"
DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
DRA_EXTENDED_RESOURCE_CAPACITY = "DRAExtendedResourceCapacity"
DRA_LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
DRA_FRACTIONAL_CAPACITY_RANGE = "DRAFractionalCapacityRange"
# Both on turn on the allocator's DeviceBindingAndStatus feature (allocator/structured/features.py) and the
# binder's PreBind wait for the conditions (binder/binding_conditions.py), as in kube-scheduler.
DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"

KNOWN_GATES: tuple[str, ...] = (
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINT_RULES,
    DRA_DEVICE_TAINTS,
    DRA_EXTENDED_RESOURCE,
    DRA_EXTENDED_RESOURCE_CAPACITY,
    DRA_FRACTIONAL_CAPACITY_RANGE,
    DRA_LIST_TYPE_ATTRIBUTES,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
)

# Kubernetes defaults per release (`pkg/features/kube_features.go`). A gate a release does not know is off.
# DRAExtendedResourceCapacity (KEP-6406) is in no release yet. DRAFractionalCapacityRange in 1.37 defaults to
# false at the default compatibility version (its `true` entry needs MinCompatibilityVersion 1.37). 1.36 is
# confirmed from v1.36.3's table; 1.38 from v1.38.0-beta.0's table (DRAConsumableCapacity and
# DRAFractionalCapacityRange GA and on, not locked; DynamicResourceAllocation removed). DRADeviceTaintRules
# (1.35 alpha, 1.36 beta off, 1.37 GA on) needs DRADeviceTaints. DRADeviceBindingConditions: 1.34 alpha off,
# 1.36 beta on, 1.38 GA (v1.38.0-beta.0 kube_features.go:1352-1355); DRAResourceClaimDeviceStatus: 1.33 beta
# on, 1.37 GA (v1.37.2 kube_features.go:1527-1531). What a release locks is in resourceapi/releases.py.
RELEASE_DEFAULTS: dict[str, dict[str, bool]] = {
    "1.34": {
        DRA_ADMIN_ACCESS: True,
        DRA_PRIORITIZED_LIST: True,
        DRA_DEVICE_TAINTS: False,
        DRA_PARTITIONABLE_DEVICES: False,
        DRA_CONSUMABLE_CAPACITY: False,
        DRA_EXTENDED_RESOURCE: False,
        DRA_DEVICE_BINDING_CONDITIONS: False,
        DRA_RESOURCE_CLAIM_DEVICE_STATUS: True,
    },
    "1.35": {
        DRA_ADMIN_ACCESS: True,
        DRA_PRIORITIZED_LIST: True,
        DRA_DEVICE_TAINTS: False,
        DRA_DEVICE_TAINT_RULES: False,
        DRA_PARTITIONABLE_DEVICES: False,
        DRA_CONSUMABLE_CAPACITY: False,
        DRA_EXTENDED_RESOURCE: False,
        DRA_DEVICE_BINDING_CONDITIONS: False,
        DRA_RESOURCE_CLAIM_DEVICE_STATUS: True,
    },
    "1.36": {
        DRA_ADMIN_ACCESS: True,
        DRA_PRIORITIZED_LIST: True,
        DRA_DEVICE_TAINTS: True,
        DRA_DEVICE_TAINT_RULES: False,
        DRA_PARTITIONABLE_DEVICES: True,
        DRA_CONSUMABLE_CAPACITY: True,
        DRA_EXTENDED_RESOURCE: True,
        DRA_LIST_TYPE_ATTRIBUTES: False,
        DRA_DEVICE_BINDING_CONDITIONS: True,
        DRA_RESOURCE_CLAIM_DEVICE_STATUS: True,
    },
    "1.37": {
        DRA_ADMIN_ACCESS: True,
        DRA_PRIORITIZED_LIST: True,
        DRA_DEVICE_TAINTS: True,
        DRA_DEVICE_TAINT_RULES: True,
        DRA_PARTITIONABLE_DEVICES: True,
        DRA_CONSUMABLE_CAPACITY: True,
        DRA_EXTENDED_RESOURCE: True,
        DRA_LIST_TYPE_ATTRIBUTES: False,
        DRA_FRACTIONAL_CAPACITY_RANGE: False,
        DRA_DEVICE_BINDING_CONDITIONS: True,
        DRA_RESOURCE_CLAIM_DEVICE_STATUS: True,
    },
    "1.38": {
        DRA_ADMIN_ACCESS: True,
        DRA_PRIORITIZED_LIST: True,
        DRA_DEVICE_TAINTS: True,
        DRA_DEVICE_TAINT_RULES: True,
        DRA_PARTITIONABLE_DEVICES: True,
        DRA_CONSUMABLE_CAPACITY: True,
        DRA_EXTENDED_RESOURCE: True,
        DRA_LIST_TYPE_ATTRIBUTES: False,
        DRA_FRACTIONAL_CAPACITY_RANGE: True,
        DRA_DEVICE_BINDING_CONDITIONS: True,
        DRA_RESOURCE_CLAIM_DEVICE_STATUS: True,
    },
}
DEFAULT_RELEASE = "1.37"  # the newest GA release


def product_defaults(release: str = DEFAULT_RELEASE) -> dict[str, bool]:
    """The product defaults on `release`: its Kubernetes defaults plus the feature this product exists for."""
    kubernetes = RELEASE_DEFAULTS[release]
    return {**{g: False for g in KNOWN_GATES}, **kubernetes, DRA_EXTENDED_RESOURCE_CAPACITY: True}


PRODUCT_DEFAULTS: dict[str, bool] = product_defaults()


def _unknown_release(release: str) -> str:
    return f"unknown release {release!r}; known: {', '.join(RELEASE_DEFAULTS)}"


class GateError(ValueError):
    """A `--feature-gates` value that names an unknown gate or carries a non-boolean value."""


@dataclass(frozen=True)
class FeatureGates:
    """An immutable, complete gate assignment of a cluster running Kubernetes `release` (a key of
    RELEASE_DEFAULTS; what else differs by release is in resourceapi/releases.py). Build with
    `FeatureGates.defaults()` or `parse()`."""

    values: tuple[tuple[str, bool], ...]
    release: str = DEFAULT_RELEASE

    @staticmethod
    def from_mapping(
        overrides: Mapping[str, bool] | None = None,
        base: Mapping[str, bool] | None = None,
        release: str = DEFAULT_RELEASE,
    ) -> FeatureGates:
        """`base` (the product defaults on `release` when None) with `overrides` applied."""
        if release not in RELEASE_DEFAULTS:
            raise GateError(_unknown_release(release))
        defaults = product_defaults(release) if base is None else {g: False for g in KNOWN_GATES} | dict(base)
        merged = dict(defaults)
        for name, value in (overrides or {}).items():
            if name not in KNOWN_GATES:
                raise GateError(_unknown(name))
            merged[name] = value
        return FeatureGates(tuple(sorted(merged.items())), release)

    @staticmethod
    def defaults() -> FeatureGates:
        return FeatureGates.from_mapping()

    @staticmethod
    def for_release(release: str, overrides: Mapping[str, bool] | None = None) -> FeatureGates:
        """Kubernetes defaults of `release` (1.34 ... 1.38), without the product's additions."""
        if release not in RELEASE_DEFAULTS:
            raise GateError(_unknown_release(release))
        return FeatureGates.from_mapping(overrides, base=RELEASE_DEFAULTS[release], release=release)

    @staticmethod
    def parse(spec: str | None, release: str = DEFAULT_RELEASE) -> FeatureGates:
        """Parse `A=true,B=false` (Kubernetes component syntax) over the product defaults on `release`."""
        overrides: dict[str, bool] = {}
        for raw in (spec or "").split(","):
            entry = raw.strip()
            if not entry:
                continue
            name, sep, value = entry.partition("=")
            name, value = name.strip(), value.strip()
            if not sep:
                raise GateError(
                    f"invalid feature gate entry {entry!r}: missing '=' (expected NAME=true|false)"
                    + _known_suffix()
                )
            if name not in KNOWN_GATES:
                raise GateError(_unknown(name))
            parsed = _PARSE_BOOL.get(value)
            if parsed is None:
                raise GateError(f"invalid value of {name}={value}: must be true or false" + _known_suffix())
            overrides[name] = parsed
        return FeatureGates.from_mapping(overrides, release=release)

    def enabled(self, name: str) -> bool:
        for key, value in self.values:
            if key == name:
                return value
        raise KeyError(name)

    def as_dict(self) -> dict[str, bool]:
        return dict(self.values)

    def with_overrides(self, **overrides: bool) -> FeatureGates:
        return FeatureGates.from_mapping(overrides, base=self.as_dict(), release=self.release)

    def __str__(self) -> str:
        return ",".join(f"{k}={'true' if v else 'false'}" for k, v in self.values)


# Go's strconv.ParseBool, which Kubernetes components use for gate values.
_PARSE_BOOL: dict[str, bool] = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def _known_suffix() -> str:
    return f" (known gates: {', '.join(KNOWN_GATES)})"


def _unknown(name: str) -> str:
    return f"unrecognized feature gate: {name}" + _known_suffix()
