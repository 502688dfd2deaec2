"""The API's size limits that more than one part of dra-capacity checks or sizes buffers by.

Values and names from `k8s.io/api/resource/v1/types.go` and apimachinery's object-meta validation.
"""

from __future__ import annotations

DEVICE_SELECTORS_MAX_SIZE = 32  # resource.DeviceSelectorsMaxSize
DEVICE_CONFIG_MAX_SIZE = 32  # resource.DeviceConfigMaxSize
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024  # resource.CELSelectorExpressionMaxLength, bytes
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024  # resource.OpaqueParametersMaxLength, bytes
ALLOCATION_RESULTS_MAX_SIZE = 32  # resource.AllocationResultsMaxSize
TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024  # apimachinery validation.TotalAnnotationSizeLimitB
