"""pydantic models of the resource.k8s.io/v1 fields the allocator reads and writes.

Input/output only: the allocator converts them to lean internal records before searching. API field
names are the aliases (`populate_by_name` also accepts the Python names); unknown fields are kept
(`extra="allow"`) so an object read from a newer API server round-trips unchanged. Dump with `to_api()`
(by alias, without unset None).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from resourceapi.api.core_v1 import NodeSelector
from resourceapi.api.meta import ApiModel, ObjectMeta
from resourceapi.machinery.quantity import QuantityField
from resourceapi.manifests.interning import interned, raw_objects


class CELDeviceSelector(ApiModel):
    expression: str = ""


class DeviceSelector(ApiModel):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(ApiModel):
    driver: str = ""
    parameters: Any = None


class CapacityRequirements(ApiModel):
    # Unknown keys are reported by the KEP-6406 rules themselves (resourceapi.capacity_requests).
    free_form: ClassVar[bool] = True
    requests: dict[str, QuantityField] | None = None


# --- DeviceClass --------------------------------------------------------------------------------------------


class DeviceClassConfiguration(ApiModel):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(ApiModel):
    selectors: list[DeviceSelector] | None = None
    config: list[DeviceClassConfiguration] | None = None
    extended_resource_name: str | None = None
    extended_resource_capacity_requests: CapacityRequirements | None = None


class DeviceClass(ApiModel):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "DeviceClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# --- ResourceSlice ------------------------------------------------------------------------------------------


class ResourcePool(ApiModel):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class DeviceAttribute(ApiModel):
    """One typed value: one of int/bool/string/version is set (list types are kept as extra fields). The
    shape of the objects in `Device.attributes`, which keeps them as raw dicts (see AttributeMap)."""

    int_: int | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None


class CapacityRequestPolicyRange(ApiModel):
    min: QuantityField
    max: QuantityField | None = None
    step: QuantityField | None = None


class CapacityRequestPolicy(ApiModel):
    default: QuantityField | None = None
    valid_values: list[QuantityField] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(ApiModel):
    value: QuantityField
    request_policy: CapacityRequestPolicy | None = None


class Counter(ApiModel):
    value: QuantityField


class CounterSet(ApiModel):
    name: str = ""
    counters: dict[str, Counter] = Field(default_factory=dict)


class DeviceCounterConsumption(ApiModel):
    counter_set: str = ""
    counters: dict[str, Counter] = Field(default_factory=dict)


class DeviceTaint(ApiModel):
    key: str = ""
    value: str | None = None
    effect: str = ""
    time_added: str | None = None


# A device's attributes are the API's own objects (`{"string": "Hopper"}`), kept as they were read: a
# 5,000-node cluster has 400,000 of them (what a model of each would cost: docs/internals.md). Their
# types are checked where the object comes in (the API server, or `simulate`'s field schema check,
# resourceapi/manifests/apischema.py, before any model is built); readers take them as DeviceAttribute
# describes
# (resourceapi.cel.device.attribute_value, allocator.structured.pools). Never modify them.
AttributeMap = Annotated[dict[str, dict[str, Any]], raw_objects()]
# Capacities are validated once per distinct value, and whole maps once per distinct map, and shared between
# devices (resourceapi/manifests/interning.py): never modify them.
CapacityMap = Annotated[dict[str, DeviceCapacity], interned(DeviceCapacity, whole=True)]


class Device(ApiModel):
    name: str = ""
    attributes: AttributeMap | None = None
    capacity: CapacityMap | None = None
    consumes_counters: list[DeviceCounterConsumption] | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] | None = None
    binds_to_node: bool | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    allow_multiple_allocations: bool | None = None


class ResourceSliceSpec(ApiModel):
    driver: str = ""
    pool: ResourcePool = Field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] | None = None
    shared_counters: list[CounterSet] | None = None


class ResourceSlice(ApiModel):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = Field(default_factory=ResourceSliceSpec)


class DeviceTaintSelector(ApiModel):
    """Which devices a DeviceTaintRule taints: all set fields must match; the empty selector matches all."""

    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(ApiModel):
    device_selector: DeviceTaintSelector | None = None  # unset: no device
    taint: DeviceTaint = Field(default_factory=DeviceTaint)


class DeviceTaintRule(ApiModel):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "DeviceTaintRule"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DeviceTaintRuleSpec = Field(default_factory=DeviceTaintRuleSpec)


# --- ResourceClaim ------------------------------------------------------------------------------------------


class DeviceToleration(ApiModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class ExactDeviceRequest(ApiModel):
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: int | None = None
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(ApiModel):
    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] | None = None
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: list[DeviceToleration] | None = None
    capacity: CapacityRequirements | None = None


class DeviceRequest(ApiModel):
    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] | None = None


class DeviceConstraint(ApiModel):
    requests: list[str] | None = None
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(ApiModel):
    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(ApiModel):
    requests: list[DeviceRequest] | None = None
    constraints: list[DeviceConstraint] | None = None
    config: list[DeviceClaimConfiguration] | None = None


class ResourceClaimSpec(ApiModel):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(ApiModel):
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: dict[str, QuantityField] | None = None


class DeviceAllocationConfiguration(ApiModel):
    source: str = ""
    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(ApiModel):
    results: list[DeviceRequestAllocationResult] | None = None
    config: list[DeviceAllocationConfiguration] | None = None


class AllocationResult(ApiModel):
    devices: DeviceAllocationResult | None = None
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(ApiModel):
    api_group: str | None = None
    resource: str = ""
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(ApiModel):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] | None = None


class ResourceClaim(ApiModel):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus | None = None


class ResourceClaimTemplateSpec(ApiModel):
    """What the resourceclaim controller copies into each claim it generates: labels, annotations, spec."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(ApiModel):
    api_version: str = "resource.k8s.io/v1"
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
ALLOCATION_CONFIG_SOURCE_CLASS = "FromClass"
ALLOCATION_CONFIG_SOURCE_CLAIM = "FromClaim"
