"""Pre-flight checks of a pod's claims and the per-(sub)request data the search uses (`Allocate` in
`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/allocator_experimental.go`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from allocator.structured.constraints import Constraint, DistinctAttribute, MatchAttribute
from allocator.structured.errors import AllocationError
from allocator.structured.features import Features
from allocator.structured.pools import DeviceRecord, NodePools
from allocator.structured.selection import ClassRecord
from resourceapi.api.limits import ALLOCATION_RESULTS_MAX_SIZE
from resourceapi.api.resource_v1 import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceRequest,
    DeviceSubRequest,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
)
from resourceapi.capacity import CapacityNameConflict, Consumption, compute_consumption, normalize_requests
from resourceapi.machinery.quantity import Quantity

_CapacityKey = tuple[tuple[str, str], ...]


def claim_label(claim: ResourceClaim) -> str:
    """klog.KObj rendering: `namespace/name`, or `name` without a namespace."""
    meta = claim.metadata
    return f"{meta.namespace}/{meta.display_name}" if meta.namespace else meta.display_name


class RequestData:
    """One request without subrequests, or one subrequest: everything the search needs, resolved once."""

    __slots__ = (
        "_normalized",
        "admin",
        "all_devices",
        "capacity",
        "claim",
        "claim_index",
        "cls",
        "mode",
        "name",
        "negative_fails",
        "num_devices",
        "parent",
        "selected_sub",
        "selectors",
        "tolerations",
    )

    def __init__(
        self,
        claim_index: int,
        claim: str,
        name: str,
        parent: str,
        request: ExactDeviceRequest | DeviceSubRequest,
    ) -> None:
        self.claim_index = claim_index
        self.claim = claim
        self.name = name
        self.parent = parent
        self.admin = bool(getattr(request, "admin_access", None))
        self.mode = request.allocation_mode or ALLOCATION_MODE_EXACT_COUNT
        self.selectors: tuple[str, ...] = ()
        self.tolerations: list[DeviceToleration] | None = request.tolerations or None
        self.capacity: Mapping[str, Quantity] | None = (
            request.capacity.requests if request.capacity is not None and request.capacity.requests else None
        )
        self.cls: ClassRecord | None = None
        self.num_devices = 0
        self.all_devices: list[DeviceRecord] = []
        self.selected_sub = 0
        self.negative_fails = False  # 1.38: a negative capacity request is an error (Features)
        self._normalized: dict[str, tuple[_CapacityKey, dict[str, Quantity]] | str] = {}

    @property
    def full_name(self) -> str:
        """`req` or `req/sub`, as in results and configs."""
        return f"{self.parent}/{self.name}" if self.parent else self.name

    @property
    def base_name(self) -> str:
        return self.parent or self.name

    @property
    def sub_name(self) -> str:
        return self.name if self.parent else ""

    def consumption(self, device: DeviceRecord) -> Consumption | None:
        """What one allocation of `device` for this request consumes (None: the device cannot serve it).

        Cached on the device per normalized request, so equal requests of later pods reuse it.
        """
        driver = device.id.driver
        entry = self._normalized.get(driver)
        if entry is None:
            try:
                normalized = normalize_requests(self.capacity or {}, driver)
            except CapacityNameConflict as exc:
                entry = f"claim {self.claim}, request {self.full_name}: {exc}"
            else:
                key = tuple(sorted((n, str(q)) for n, q in normalized.items()))
                entry = (key, normalized)
            self._normalized[driver] = entry
        if isinstance(entry, str):
            raise AllocationError(entry)
        key, normalized = entry
        if self.negative_fails:
            self._refuse_negative(device, normalized)
        cache = device.consumption
        if key in cache:
            cached: Consumption | None = cache[key]
            return cached
        result = compute_consumption(device.capacity, normalized, within_value=False)
        cache[key] = result
        return result

    def _refuse_negative(self, device: DeviceRecord, normalized: Mapping[str, Quantity]) -> None:
        """1.38's `calculateConsumedCapacity`: a negative request is an error before any rounding, once the
        device defines every requested capacity (v0.38.0-beta.0 stable/consumable_capacity.go)."""
        capacity = device.capacity
        if any(name not in capacity for name in normalized):
            return
        for name in capacity:
            requested = normalized.get(name)
            if requested is not None and requested.value < 0:
                where = device.name if self.mode == ALLOCATION_MODE_ALL else str(device.id)
                raise AllocationError(
                    f"claim {self.claim}, request {self.name}: checking capacity for device {where}: "
                    f'capacity "{name}": capacity value is negative: request {requested}'
                )


class ClaimPlan:
    """Per claim: its request data (by request index, then subrequest index) and constraints."""

    __slots__ = ("claim", "constraints", "label", "requests")

    def __init__(self, claim: ResourceClaim, label: str) -> None:
        self.claim = claim
        self.label = label
        self.requests: list[list[RequestData]] = []  # one list per request; several entries = firstAvailable
        self.constraints: list[Constraint] = []


def plan_claims(
    claims: Sequence[ResourceClaim],
    features: Features,
    classes: Mapping[str, ClassRecord],
    pools: NodePools,
    all_mode_devices: Callable[[RequestData], list[DeviceRecord]],
) -> list[ClaimPlan]:
    """Upstream's pre-flight: feature checks, class lookup, device counts, result limit, constraints."""
    plans: list[ClaimPlan] = []
    for claim_index, claim in enumerate(claims):
        label = claim_label(claim)
        plan = ClaimPlan(claim, label)
        min_devices = 0
        for request in claim.spec.devices.requests or ():
            subs = request.first_available or []
            if subs and not features.prioritized_list:
                raise AllocationError(
                    f"claim {label}, request {request.name}: has subrequests, but the DRAPrioritizedList "
                    "feature is disabled"
                )
            if not features.consumable_capacity:
                if request.exactly is not None and request.exactly.capacity is not None:
                    raise AllocationError(
                        f"claim {label}, request {request.name}: has capacity requests, but the "
                        "DRAConsumableCapacity feature is disabled"
                    )
                for sub in subs:
                    if sub.capacity is not None:
                        raise AllocationError(
                            f"claim {label}, subrequest {sub.name}: has capacity requests, but the "
                            "DRAConsumableCapacity feature is disabled"
                        )
            entries: list[RequestData] = []
            if subs:
                for sub in subs:
                    data = RequestData(claim_index, label, sub.name, request.name, sub)
                    _validate(data, sub, features, classes, pools, all_mode_devices)
                    entries.append(data)
                min_devices += min(d.num_devices for d in entries)
            else:
                data = RequestData(claim_index, label, request.name, "", _exactly(request))
                _validate(data, _exactly(request), features, classes, pools, all_mode_devices)
                entries.append(data)
                min_devices += data.num_devices
            plan.requests.append(entries)
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {label}: number of requested devices {min_devices} exceeds the claim limit of "
                f"{ALLOCATION_RESULTS_MAX_SIZE}"
            )
        for i, constraint in enumerate(claim.spec.devices.constraints or ()):
            lists = features.list_type_attributes
            semver = features.semver_equality
            if constraint.match_attribute is not None:
                plan.constraints.append(
                    MatchAttribute(constraint.requests, constraint.match_attribute, lists, semver)
                )
            elif constraint.distinct_attribute is not None:
                plan.constraints.append(
                    DistinctAttribute(constraint.requests, constraint.distinct_attribute, lists, semver)
                )
            else:
                raise AllocationError(
                    f"claim {label}, constraint #{i}: empty constraint (unsupported constraint type?)"
                )
        plans.append(plan)
    return plans


def _exactly(request: DeviceRequest) -> ExactDeviceRequest:
    return request.exactly if request.exactly is not None else ExactDeviceRequest()


def _validate(
    data: RequestData,
    request: ExactDeviceRequest | DeviceSubRequest,
    features: Features,
    classes: Mapping[str, ClassRecord],
    pools: NodePools,
    all_mode_devices: Callable[[RequestData], list[DeviceRecord]],
) -> None:
    """Upstream validateDeviceRequest."""
    data.negative_fails = features.negative_request_fails and any(
        q.value < 0 for q in (data.capacity or {}).values()
    )
    prefix = f"claim {data.claim}, request {data.name}"
    selectors: list[str] = []
    for i, selector in enumerate(request.selectors or ()):
        if selector.cel is None:
            raise AllocationError(
                f"{prefix}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
        selectors.append(selector.cel.expression)
    data.selectors = tuple(selectors)
    if data.admin and not features.admin_access:
        raise AllocationError(f"{prefix}: admin access is requested, but the feature is disabled")
    class_name = request.device_class_name
    if not class_name:
        raise AllocationError(f"{prefix}: missing device class name (unsupported request type?)")
    cls = classes.get(class_name)
    if cls is None:
        raise AllocationError(
            f"{prefix}: could not retrieve device class {class_name}: "
            f'deviceclass.resource.k8s.io "{class_name}" not found'
        )
    data.cls = cls
    if data.mode == ALLOCATION_MODE_EXACT_COUNT:
        data.num_devices = request.count if request.count is not None else 1
    elif data.mode == ALLOCATION_MODE_ALL:
        node_only = features.all_mode_pool_fails_node  # 1.38: ErrFailedAllocationOnNode
        for pool in pools.pools:
            if pool.incomplete:
                raise AllocationError(
                    f"{prefix}: asks for all devices, but resource pool {pool.id} is currently being updated",
                    node_failure=node_only,
                )
            if pool.invalid:
                raise AllocationError(
                    f"{prefix}: asks for all devices, but resource pool {pool.id} is currently invalid",
                    node_failure=node_only,
                )
        data.all_devices = all_mode_devices(data)
        data.num_devices = len(data.all_devices)
    else:
        raise AllocationError(f"{prefix}: unsupported count mode {data.mode}")
