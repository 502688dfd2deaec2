"""Rules the API server's validation applies within one object, for the rules that change what simulate
computes (pkg/apis/resource/validation/validation.go, pkg/apis/core/validation/validation.go).

Each function returns the first `(field path, message)` the API server would refuse the object with, or
None. What a real cluster can hold across objects (a pool inconsistent across slices, a device name repeated
in another slice of the pool, a counter set in another slice, a missing DeviceClass) is not checked here:
the allocator reports it per claim, as upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allocator.scheduling.predicates import is_pod_level_resource, pod_requests
from resourceapi.api.core_v1 import Pod
from resourceapi.api.meta import LabelSelector

Problem = tuple[str, str]
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def v1beta1_slice_problem(raw: Mapping[str, Any]) -> Problem | None:
    """A v1 slice whose devices use the v1beta1 `basic:` wrapper: resource.k8s.io/v1 has no `basic` (strict
    decoding refuses it as an unknown field; otherwise it is dropped, and with it the device's attributes and
    capacity). Simulate says so, rather than report what the dropped fields leave behind."""
    spec = raw.get("spec")
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    for i, d in enumerate(devices if isinstance(devices, list) else ()):
        if isinstance(d, Mapping) and "basic" in d:
            return (
                f"spec.devices[{i}].basic",
                "unknown field: this is the v1beta1 shape; in resource.k8s.io/v1 the device's attributes, "
                "capacity and other fields sit directly in the device",
            )
    return None


def pod_problem(p: Pod) -> Problem | None:
    """Pod validation the placer relies on: topology spread constraints, affinity terms and their label
    selectors, and pod-level resources (validatePodResourceConsistency: pod-level requests cover the
    containers')."""
    spec = p.spec
    for i, c in enumerate(spec.topology_spread_constraints or []):
        path = f"spec.topologySpreadConstraints[{i}]"
        if c.max_skew <= 0:
            return f"{path}.maxSkew", f"Invalid value: {c.max_skew}: must be greater than zero"
        if not c.topology_key:
            return f"{path}.topologyKey", "Required value: can not be empty"
        if c.when_unsatisfiable not in _WHEN_UNSATISFIABLE:
            supported = ", ".join(f'"{w}"' for w in _WHEN_UNSATISFIABLE)
            return (
                f"{path}.whenUnsatisfiable",
                f'Unsupported value: "{c.when_unsatisfiable}": supported values: {supported}',
            )
        if c.min_domains is not None and c.min_domains <= 0:
            return f"{path}.minDomains", f"Invalid value: {c.min_domains}: must be greater than 0"
        problem = _selector_problem(c.label_selector, f"{path}.labelSelector")
        if problem:
            return problem
    affinity = spec.affinity
    for part, name in (
        ((affinity.pod_affinity, "podAffinity"), (affinity.pod_anti_affinity, "podAntiAffinity"))
        if affinity
        else ()
    ):
        for i, t in enumerate(
            (part.required_during_scheduling_ignored_during_execution or []) if part else []
        ):
            path = f"spec.affinity.{name}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not t.topology_key:
                return f"{path}.topologyKey", "Required value: can not be empty"
            problem = _selector_problem(t.label_selector, f"{path}.labelSelector")
            if problem:
                return problem
    return _pod_resources_problem(p)


def _selector_problem(selector: LabelSelector | None, path: str) -> Problem | None:
    exprs = (selector.match_expressions or []) if selector is not None else []
    for j, e in enumerate(exprs):
        if e.operator not in _SELECTOR_OPERATORS:
            return (
                f"{path}.matchExpressions[{j}].operator",
                f'Invalid value: "{e.operator}": is not a valid selector operator',
            )
    return None


def _pod_resources_problem(p: Pod) -> Problem | None:
    resources = p.spec.resources
    if resources is None:
        return None
    for part, values in (("limits", resources.limits), ("requests", resources.requests)):
        for name in values or {}:
            if not is_pod_level_resource(name):
                return (
                    f"spec.resources.{part}[{name}]",
                    f'Unsupported value: "{name}": supported values: "cpu", "hugepages-", "memory"',
                )
    containers = pod_requests(
        p.model_copy(update={"spec": p.spec.model_copy(update={"resources": None, "overhead": None})})
    )
    for name, q in (resources.requests or {}).items():
        aggregate = containers.get(name)
        if aggregate is not None and q < aggregate:
            return (
                f"spec.resources.requests[{name}]",
                f'Invalid value: "{q}": must be greater than or equal to aggregate container requests of '
                f"{aggregate}",
            )
    return None
