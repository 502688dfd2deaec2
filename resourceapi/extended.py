"""Extended-resource names backed by DRA (KEP-5004) and the KEP-6406 capacity each class asks for.

`ExtendedResourceResolver` is the scheduler's ExtendedResourceCache for a static set of DeviceClasses: every
class maps its implicit name `deviceclass.resource.kubernetes.io/<class>`, and a class with
`extendedResourceName` maps that name too; when two classes claim one name the newer class wins, on equal
timestamps the smaller name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from resourceapi.api.resource_v1 import CapacityRequirements, DeviceClass
from resourceapi.capacity_requests import ANNOTATION, FIELD_PATH, parse_carrier, validate_requirements
from resourceapi.gates import DRA_EXTENDED_RESOURCE, FeatureGates
from resourceapi.machinery.quantity import Quantity

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
_REQUESTS_PREFIX = "requests."
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


class CapacityCarrierError(ValueError):
    """The class's field or annotation carrier is not a usable `CapacityRequirements` (message names it)."""


def is_dra_extended_resource_name(name: str) -> bool:
    """Upstream's IsDRAExtendedResourceName: an extended resource name, or a class's implicit name."""
    if name.startswith(IMPLICIT_PREFIX):
        return True
    return "/" in name and "kubernetes.io/" not in name and not name.startswith(_REQUESTS_PREFIX)


def class_capacity_requests(device_class: DeviceClass) -> CapacityRequirements | None:
    """The class's KEP-6406 capacity: the field if set, else the annotation carrier (field wins).

    Both are re-validated with the webhook's rules before use: a value that escaped the webhook (its
    mutating half unreachable, say) and is invalid (`bandwidth: "0"`) raises CapacityCarrierError naming the
    field, so the class serves no pod rather than sharing a device without limit."""
    field = device_class.spec.extended_resource_capacity_requests
    if field is not None:
        # Only the requests: an unknown key is the reader's concern (an API server prunes it; simulate warns).
        requests = field.model_dump(mode="json", by_alias=True, exclude_none=True).get("requests")
        errors = validate_requirements({"requests": requests}, FIELD_PATH)
        if errors:
            raise CapacityCarrierError("; ".join(str(e) for e in errors))
        return field
    raw = (device_class.metadata.annotations or {}).get(ANNOTATION)
    if raw is None:
        return None
    return parse_capacity_annotation(raw)


def parse_capacity_annotation(raw: str) -> CapacityRequirements:
    """Parse the annotation carrier with the webhook's rules; raises CapacityCarrierError naming the field."""
    requirements, errors = parse_carrier(raw)
    if errors:
        raise CapacityCarrierError("; ".join(str(e) for e in errors))
    return requirements or CapacityRequirements()


@dataclass(frozen=True)
class ResolvedClass:
    """A class an extended resource maps to, with its capacity (or why its capacity cannot be used)."""

    device_class: DeviceClass
    capacity: CapacityRequirements | None
    carrier_error: str | None = None

    @property
    def name(self) -> str:
        return self.device_class.metadata.name


def _created(device_class: DeviceClass) -> datetime:
    ts = device_class.metadata.creation_timestamp
    if not ts:
        return _EPOCH
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        return _EPOCH
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def winning_class(contenders: Iterable[DeviceClass]) -> DeviceClass:
    """Of several classes claiming one extendedResourceName, the one upstream maps it to: the newest
    creationTimestamp, then the smaller name (pkg/scheduler/framework/plugins/dynamicresources/extended)."""
    return min(contenders, key=lambda c: (-_created(c).timestamp(), c.metadata.name))


class ExtendedResourceResolver:
    """Resource name -> DeviceClass, as the scheduler's ExtendedResourceCache sees a set of classes."""

    def __init__(self, classes: Iterable[DeviceClass], gates: FeatureGates) -> None:
        self._enabled = gates.enabled(DRA_EXTENDED_RESOURCE)
        self._by_name: dict[str, ResolvedClass] = {}
        explicit: dict[str, list[DeviceClass]] = {}
        resolved: dict[str, ResolvedClass] = {}
        for dc in classes:
            try:
                capacity, error = class_capacity_requests(dc), None
            except CapacityCarrierError as exc:
                capacity, error = None, f"device class {dc.metadata.name}: {exc}"
            rc = ResolvedClass(dc, capacity, error)
            resolved[dc.metadata.name] = rc
            self._by_name[IMPLICIT_PREFIX + dc.metadata.name] = rc
            if dc.spec.extended_resource_name:
                explicit.setdefault(dc.spec.extended_resource_name, []).append(dc)
        for resource, contenders in explicit.items():
            self._by_name[resource] = resolved[winning_class(contenders).metadata.name]

    @property
    def enabled(self) -> bool:
        """False when DRAExtendedResource is off: no name maps to a class."""
        return self._enabled

    def resolve(self, resource: str) -> ResolvedClass | None:
        """The class backing `resource`, or None (gate off, or no class maps it)."""
        if not self._enabled or not is_dra_extended_resource_name(resource):
            return None
        return self._by_name.get(resource)

    def delegated_to_dra(self, resource: str, allocatable: Mapping[str, Quantity] | None) -> bool:
        """Upstream's ShouldDelegateResourceToDRA: mapped, and the node's allocatable is 0 or missing."""
        if self.resolve(resource) is None:
            return False
        q = (allocatable or {}).get(resource)
        return q is None or q.sign() == 0
