"""Every size limit of the API that dra-capacity checks: the one home of each.

Values and names from `k8s.io/api/resource/v1/types.go` and apimachinery's name and object-meta validation;
a module that checks a limit imports it from here, never defines its own copy.
"""

from __future__ import annotations

DEVICE_SELECTORS_MAX_SIZE = 32  # resource.DeviceSelectorsMaxSize
DEVICE_CONFIG_MAX_SIZE = 32  # resource.DeviceConfigMaxSize
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024  # resource.CELSelectorExpressionMaxLength, bytes
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024  # resource.OpaqueParametersMaxLength, bytes
ALLOCATION_RESULTS_MAX_SIZE = 32  # resource.AllocationResultsMaxSize
TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024  # apimachinery validation.TotalAnnotationSizeLimitB
DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
LABEL_KEY_NAME_MAX_LENGTH = 63
DRIVER_NAME_MAX_LENGTH = 63  # resource.DriverNameMaxLength, also the CSI driver limit
DEVICE_MAX_ID_LENGTH = 32  # resource.DeviceMaxIDLength
# apiserver `names.SimpleNameGenerator`: the generateName prefix cut to maxNameLength 63 - randomLength 5
# bytes, then 5 random characters (names.NAME_GENERATOR_ALPHABET).
GENERATED_NAME_BASE_MAX = 58
GENERATED_NAME_SUFFIX_LENGTH = 5
LABEL_VALUE_MAX_LENGTH = 63
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10  # resource.CapacityRequestPolicyDiscreteMaxOptions
POOL_NAME_MAX_LENGTH = 253
BINDING_CONDITIONS_MAX_SIZE = 4
BINDING_FAILURE_CONDITIONS_MAX_SIZE = 4
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES = 64
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET = 32
DEVICE_REQUESTS_MAX_SIZE = 32  # resource.DeviceRequestsMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8  # resource.FirstAvailableDeviceRequestMaxSize
DEVICE_CONSTRAINTS_MAX_SIZE = 32  # resource.DeviceConstraintsMaxSize
ATTRIBUTE_DOMAIN_MAX_LENGTH = 63
RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48
RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE = 2
RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION = 32
DEVICE_TAINTS_MAX_LENGTH = 16
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
DEVICE_MAX_DOMAIN_LENGTH = 63
COMPATIBILITY_GROUPS_MAX_ITEMS = 2
# attributeAndCapacityMaxKeyLength: the longest valid `<domain>/<id>`, and the display cut of longer keys.
ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
RESERVED_FOR_MAX_SIZE = 256  # resource.ResourceClaimReservedForMaxSize
ALLOCATION_CONFIG_MAX_SIZE = 2 * DEVICE_CONFIG_MAX_SIZE  # class + claim
MAX_CONDITIONS = 8  # resource.AllocatedDeviceStatusMaxConditions
INTERFACE_NAME_MAX_LENGTH = 256  # resource.NetworkDeviceDataInterfaceNameMaxLength
HARDWARE_ADDRESS_MAX_LENGTH = 128  # resource.NetworkDeviceDataHardwareAddressMaxLength
MAX_IPS = 16  # resource.NetworkDeviceDataMaxIPs
CONDITION_REASON_MAX_LENGTH = 1024
CONDITION_MESSAGE_MAX_LENGTH = 32 * 1024
COST_LIMIT = 1_000_000  # resource.k8s.io CELSelectorExpressionMaxCost
CAPACITY_REQUESTS_MAX_SIZE = 32  # CapacityRequirements.requests `+k8s:maxProperties` (1.38)
