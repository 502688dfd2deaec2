"""Rules the API server's validation applies within one object, for the rules that change what simulate
computes (pkg/apis/resource/validation/validation.go, pkg/apis/core/validation/validation.go).

Each function returns the first `(field path, message)` the API server would refuse the object with, or
None. What a real cluster can hold across objects (a pool inconsistent across slices, a device name repeated
in another slice of the pool, a counter set in another slice, a missing DeviceClass) is not checked here:
the allocator reports it per claim, as upstream does.
"""

from __future__ import annotations

from collections.abc import Iterable

from allocator.scheduling.predicates import is_pod_level_resource, pod_requests
from resourceapi.core_v1 import Pod
from resourceapi.meta import LabelSelector
from resourceapi.resource_v1 import ResourceSlice

Problem = tuple[str, str]
_NODE_FIELDS = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
_DEVICE_NODE_FIELDS = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is "
    "set to true in the ResourceSlice spec"
)
_DEVICE_NODE_FIELDS_FORBIDDEN = (
    "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in "
    "the ResourceSlice spec"
)
_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _duplicate(names: Iterable[str], path: str) -> Problem | None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            return f"{path}[{i}].name", f'Duplicate value: "{name}"'
        seen.add(name)
    return None


def _true_or_unset(value: bool | None, path: str, label: str, into: list[str]) -> Problem | None:
    if value is None:
        return None
    if not value:
        return path, "Invalid value: false: must be either unset or set to true"
    into.append(label)
    return None


def slice_problem(s: ResourceSlice, raw_devices: list[object] | None) -> Problem | None:
    """validateResourceSliceSpec: node selection, devices xor sharedCounters, unique names, and the v1beta1
    `basic:` device wrapper, which resource.k8s.io/v1 does not have (its fields would be dropped)."""
    for i, d in enumerate(raw_devices or []):
        if isinstance(d, dict) and "basic" in d:
            return (
                f"spec.devices[{i}].basic",
                "unknown field: this is the v1beta1 shape; in resource.k8s.io/v1 the device's attributes, "
                "capacity and other fields sit directly in the device",
            )
    spec = s.spec
    if spec.pool.resource_slice_count <= 0:
        return (
            "spec.pool.resourceSliceCount",
            f"Invalid value: {spec.pool.resource_slice_count}: must be greater than zero",
        )
    set_fields: list[str] = []
    if spec.node_name:
        set_fields.append("`nodeName`")
    if spec.node_selector is not None:
        set_fields.append("`nodeSelector`")
        if len(spec.node_selector.node_selector_terms) != 1:
            return "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term"
    for value, path, label in (
        (spec.all_nodes, "spec.allNodes", "`allNodes`"),
        (spec.per_device_node_selection, "spec.perDeviceNodeSelection", "`perDeviceNodeSelection`"),
    ):
        problem = _true_or_unset(value, path, label, set_fields)
        if problem:
            return problem
    if not set_fields:
        return "spec", f"Required value: {_NODE_FIELDS}"
    if len(set_fields) > 1:
        return (
            "spec",
            f'Invalid value: "{{{", ".join(set_fields)}}}": {_NODE_FIELDS}, but multiple fields are set',
        )
    if spec.shared_counters is not None and spec.devices is not None:
        return "spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed'
    names = [d.name for d in spec.devices or ()]
    if len(set(names)) != len(names):
        return _duplicate(names, "spec.devices")
    problem = _duplicate((c.name for c in spec.shared_counters or []), "spec.sharedCounters")
    if problem:
        return problem
    per_device = bool(spec.per_device_node_selection)
    for i, d in enumerate(spec.devices or []):
        if not per_device and not d.node_name and d.node_selector is None and d.all_nodes is None:
            continue  # the common device: no node selection of its own, and none required
        chosen: list[str] = []
        if d.node_name:
            chosen.append("`nodeName`")
        if d.node_selector is not None:
            chosen.append("`nodeSelector`")
        problem = _true_or_unset(d.all_nodes, f"spec.devices[{i}].allNodes", "`allNodes`", chosen)
        if problem:
            return problem
        if per_device and not chosen:
            return f"spec.devices[{i}]", f"Required value: {_DEVICE_NODE_FIELDS}"
        if per_device and len(chosen) > 1:
            return f"spec.devices[{i}]", f'Invalid value: "{{{", ".join(chosen)}}}": {_DEVICE_NODE_FIELDS}'
        if not per_device and chosen:
            return f"spec.devices[{i}]", f"Invalid value: null: {_DEVICE_NODE_FIELDS_FORBIDDEN}"
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
