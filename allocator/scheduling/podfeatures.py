"""Which pod-spec fields that affect scheduling the placer models, and the pods it must not place.

Every core/v1 PodSpec field that a default kube-scheduler filter reads is listed in
`resourceapi.scheduling_fields.SCHEDULING_FIELDS` with how placement treats it. A pod that uses an
`UNSUPPORTED` field is reported `unsupported`, with the field named, and never placed: a what-if tool must not
be silently wrong. Gated pods (`spec.schedulingGates`) are never placed either, as the SchedulingGates
PreEnqueue plugin keeps them out of the scheduling queue
(pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from resourceapi.api.core_v1 import Pod
from resourceapi.scheduling_fields import (
    SCHEDULING_FIELDS,
    UNSUPPORTED_SPEC_FIELDS,
    UNSUPPORTED_VOLUMES,
    Support,
)

__all__ = ["SCHEDULING_FIELDS", "Hold", "Support", "hold", "unsupported_fields"]


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
            out.extend(f"spec.volumes[{i}].{kind}" for kind in UNSUPPORTED_VOLUMES if v.get(kind) is not None)
    out.extend(f"spec.{name}" for name in UNSUPPORTED_SPEC_FIELDS if extra.get(name) is not None)
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
