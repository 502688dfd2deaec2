"""Which pod-spec fields that affect scheduling the placer models, and the pods it must not place.

Every core/v1 PodSpec field that a default kube-scheduler filter reads is listed in `SCHEDULING_FIELDS` with
how placement treats it. A pod that uses an `UNSUPPORTED` field is reported `unsupported`, with the field
named, and never placed: a what-if tool must not be silently wrong. Gated pods (`spec.schedulingGates`) are
never placed either, as the SchedulingGates PreEnqueue plugin keeps them out of the scheduling queue
(pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from resourceapi.core_v1 import Pod


class Support(Enum):
    MODELLED = "modelled"  # filtered as upstream filters it
    SCORING_ONLY = "scoring only"  # upstream only scores with it; placement ignores it (docs/simulate.md)
    ADMISSION = "applied by admission"  # the API server already folded it into fields that are modelled
    ORDER_ONLY = "queue order and preemption"  # placement keeps input order; see `preemption_note`
    UNSUPPORTED = "unsupported"  # the pod is reported `unsupported`, never placed


SCHEDULING_FIELDS: dict[str, tuple[Support, str]] = {
    "nodeName": (Support.MODELLED, "NodeName"),
    "nodeSelector": (Support.MODELLED, "NodeAffinity"),
    "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Support.MODELLED,
        "NodeAffinity",
    ),
    "affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Support.SCORING_ONLY,
        "NodeAffinity",
    ),
    "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Support.MODELLED,
        "InterPodAffinity",
    ),
    "affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Support.SCORING_ONLY,
        "InterPodAffinity",
    ),
    "affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution": (
        Support.MODELLED,
        "InterPodAffinity",
    ),
    "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution": (
        Support.SCORING_ONLY,
        "InterPodAffinity",
    ),
    "tolerations": (Support.MODELLED, "TaintToleration"),
    "schedulingGates": (Support.MODELLED, "SchedulingGates"),
    "topologySpreadConstraints[whenUnsatisfiable=DoNotSchedule]": (Support.MODELLED, "PodTopologySpread"),
    "topologySpreadConstraints[whenUnsatisfiable=ScheduleAnyway]": (
        Support.SCORING_ONLY,
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
    "volumes[].persistentVolumeClaim": (Support.UNSUPPORTED, "VolumeBinding, VolumeZone, NodeVolumeLimits"),
    "volumes[].ephemeral": (Support.UNSUPPORTED, "VolumeBinding, NodeVolumeLimits"),
    "volumes[].csi": (Support.UNSUPPORTED, "NodeVolumeLimits"),
    "volumes[].gcePersistentDisk": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].awsElasticBlockStore": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].rbd": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].iscsi": (Support.UNSUPPORTED, "VolumeRestrictions"),
    "volumes[].azureDisk": (Support.UNSUPPORTED, "NodeVolumeLimits"),
    "volumes[].cinder": (Support.UNSUPPORTED, "NodeVolumeLimits"),
    "workloadRef": (Support.UNSUPPORTED, "GangScheduling"),
    "schedulingGroup": (Support.UNSUPPORTED, "GangScheduling"),
}

_UNSUPPORTED_VOLUMES = tuple(
    path.removeprefix("volumes[].")
    for path, (support, _) in SCHEDULING_FIELDS.items()
    if support is Support.UNSUPPORTED and path.startswith("volumes[].")
)


@dataclass(frozen=True)
class Hold:
    """Why a pod is not placed at all: `gated` (scheduling gates) or `unsupported` (a field not modelled)."""

    result: Literal["gated", "unsupported"]
    reason: str


def unsupported_fields(pod: Pod) -> list[str]:
    """Field paths of this pod that affect scheduling and that placement does not model."""
    spec = pod.spec
    extra = spec.model_extra or {}
    if not extra:
        return []  # nothing beyond the modelled fields: the common case
    out: list[str] = []
    volumes = extra.get("volumes")
    for i, v in enumerate(volumes if isinstance(volumes, list) else []):
        if isinstance(v, dict):
            out.extend(
                f"spec.volumes[{i}].{kind}" for kind in _UNSUPPORTED_VOLUMES if v.get(kind) is not None
            )
    out.extend(f"spec.{name}" for name in ("workloadRef", "schedulingGroup") if extra.get(name) is not None)
    return out


def hold(pod: Pod) -> Hold | None:
    """None when the pod may be placed; else why not (gates first: a gated pod never reaches a filter)."""
    gates = pod.spec.scheduling_gates or []
    if gates:
        return Hold("gated", f"waiting for scheduling gates: [{' '.join(g.name for g in gates)}]")
    fields = unsupported_fields(pod)
    if fields:
        plugins = sorted({_plugin_of(f) for f in fields})
        return Hold(
            "unsupported",
            f"not simulated: {', '.join(fields)} ({', '.join(plugins)}); "
            "simulate does not model this, so it does not guess where the pod would go",
        )
    return None


def _plugin_of(path: str) -> str:
    generic = path.removeprefix("spec.")
    for key, (_, plugin) in SCHEDULING_FIELDS.items():
        pattern = key.replace("[]", "")
        if _strip_indexes(generic) == pattern:
            return plugin
    return "?"


def _strip_indexes(path: str) -> str:
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def preemption_note(pod: Pod) -> str | None:
    """For a pod reported unschedulable: the scheduler might preempt lower-priority pods for it (its
    preemptionPolicy is not Never and it has a priority), which placement does not simulate."""
    extra = pod.spec.model_extra or {}
    if extra.get("preemptionPolicy") == "Never":
        return None
    priority = extra.get("priority")
    if (isinstance(priority, int) and priority > 0) or extra.get("priorityClassName"):
        return "preemption of lower-priority pods is not simulated"
    return None
