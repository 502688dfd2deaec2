"""The core/v1 PodSpec fields that a default kube-scheduler filter reads, and how placement treats each one.

One table for both sides: the allocator's placement reports a pod that uses an `UNSUPPORTED` field as
`unsupported` and never places it (allocator/scheduling/podfeatures.py), and pod routing
(resourceapi/routing.py) leaves such a pod with the default scheduler, since the capacity binder places pods
with the same placement. The plugin named beside each field is the kube-scheduler filter that reads it
(pkg/scheduler/framework/plugins/...).
"""

from __future__ import annotations

from enum import Enum


class Support(Enum):
    MODELLED = "modelled"  # filtered as upstream filters it
    SCORED = "scored"  # scored as upstream scores it (allocator/scheduling/scoring.py)
    ADMISSION = "applied by admission"  # the API server already folded it into fields that are modelled
    ORDER_ONLY = "queue order and preemption"  # placement orders by priority and preempts (preemption.py)
    UNSUPPORTED = "unsupported"  # the pod is reported `unsupported`, never placed


SCHEDULING_FIELDS: dict[str, tuple[Support, str]] = {
    "nodeName": (Support.MODELLED, "NodeName"),
    "nodeSelector": (Support.MODELLED, "NodeAffinity"),
    "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Support.MODELLED,
        "NodeAffinity",
    ),
    "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Support.SCORED,
        "NodeAffinity",
    ),
    "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Support.MODELLED,
        "InterPodAffinity",
    ),
    "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Support.SCORED,
        "InterPodAffinity",
    ),
    "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Support.MODELLED,
        "InterPodAffinity",
    ),
    "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Support.SCORED,
        "InterPodAffinity",
    ),
    "tolerations": (Support.MODELLED, "TaintToleration"),
    "schedulingGates": (Support.MODELLED, "SchedulingGates"),
    "topologySpreadConstraints[whenUnsatisfiable=DoNotSchedule]": (Support.MODELLED, "PodTopologySpread"),
    "topologySpreadConstraints[whenUnsatisfiable=ScheduleAnyway]": (
        Support.SCORED,
        "PodTopologySpread",
    ),
    "resources": (Support.MODELLED, "NodeResourcesFit"),
    "overhead": (Support.MODELLED, "NodeResourcesFit"),
    "containers[].resources": (Support.MODELLED, "NodeResourcesFit"),
    "initContainers[].resources": (Support.MODELLED, "NodeResourcesFit"),
    "resourceClaims": (Support.MODELLED, "DynamicResources"),
    "runtimeClassName": (
        Support.ADMISSION,
        "RuntimeClass admission sets overhead, nodeSelector, tolerations",
    ),
    "priority": (Support.ORDER_ONLY, "PrioritySort, DefaultPreemption"),
    "priorityClassName": (Support.ORDER_ONLY, "PrioritySort, DefaultPreemption"),
    "preemptionPolicy": (Support.ORDER_ONLY, "DefaultPreemption"),
    "containers[].ports[].hostPort": (Support.MODELLED, "NodePorts"),
    "initContainers[].ports[].hostPort": (Support.MODELLED, "NodePorts (not counted, as upstream)"),
    "hostNetwork": (Support.MODELLED, "NodePorts (container ports are host ports)"),
    "volumes[].persistentVolumeClaim": (
        Support.MODELLED,
        "VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone",
    ),
    "volumes[].ephemeral": (Support.MODELLED, "NodeVolumeLimits, VolumeBinding"),
    "volumes[].csi": (Support.MODELLED, "NodeVolumeLimits (inline CSI volumes are not counted, as upstream)"),
    "volumes[].gcePersistentDisk": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].awsElasticBlockStore": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].rbd": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].iscsi": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].azureDisk": (Support.UNSUPPORTED, "NodeVolumeLimits"),
    "volumes[].cinder": (Support.UNSUPPORTED, "NodeVolumeLimits"),
    "workloadRef": (Support.UNSUPPORTED, "GangScheduling"),
    "schedulingGroup": (Support.UNSUPPORTED, "GangScheduling"),
}


UNSUPPORTED_VOLUMES: tuple[str, ...] = tuple(
    path.removeprefix("volumes[].")
    for path, (support, _) in SCHEDULING_FIELDS.items()
    if support is Support.UNSUPPORTED and path.startswith("volumes[].")
)
"""The volume sources (keys of a core/v1 Volume) whose pods placement does not model."""

UNSUPPORTED_SPEC_FIELDS: tuple[str, ...] = tuple(
    path
    for path, (support, _) in SCHEDULING_FIELDS.items()
    if support is Support.UNSUPPORTED and "." not in path
)
"""Top-level PodSpec fields (gang scheduling) whose pods placement does not model."""
