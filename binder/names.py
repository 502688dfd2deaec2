"""The binder's vocabulary on the API: annotations, finalizers, Event reasons, condition and component names.

Upstream names come from `staging/src/k8s.io/api/resource/v1/types.go` (the claim annotation and the
delete-protection finalizer) and `pkg/scheduler/framework/plugins/dynamicresources/` (Event reasons).
"""

from __future__ import annotations

from resourceapi.api.core_v1 import EXTENDED_RESOURCE_CLAIM_ANNOTATION

DEFAULT_SCHEDULER_NAME = "dra-capacity"
KUBE_DEFAULT_SCHEDULER = "default-scheduler"
COMPONENT = "dra-capacity-binder"
FIELD_MANAGER = "dra-capacity-binder"

CLAIM_ANNOTATION = EXTENDED_RESOURCE_CLAIM_ANNOTATION
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
# Written by a new leader on the claims of pods still being placed (binder/fence.py): every write a
# deposed leader still had queued for them carries an older resourceVersion and gets 409.
FENCE_ANNOTATION = "dra-capacity.io/fenced-by"

# Events (core/v1), as kube-scheduler emits them for pods, plus the binder's own.
REASON_SCHEDULED = "Scheduled"
REASON_FAILED_SCHEDULING = "FailedScheduling"
REASON_NOT_ROUTED = "NotRoutedToCapacityBinder"
REASON_OTHER_SCHEDULER = "OtherSchedulerForCapacityResource"
REASON_NOT_OPTED_IN = "NotOptedInToCapacityBinder"
REASON_FOREIGN_ALLOCATION = "DeviceAllocatedByAnotherScheduler"
EVENT_NORMAL = "Normal"
EVENT_WARNING = "Warning"

# Pod condition written for pods that do not fit, as the scheduler writes it.
CONDITION_POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"

# Opt-in to routing by the /mutate-pods endpoint (namespace or object label), shared with the webhook through
# resourceapi.routing.
