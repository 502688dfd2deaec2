"""ResourceSlice create validation as kube-apiserver 1.37 runs it (pkg/registry/resource/resourceslice,
pkg/apis/resource/validation `ValidateResourceSlice`, pkg/apis/resource/v1 zz_generated.validations.go).

In the API server's order:

1. `PrepareForCreate` drops the fields of disabled features (`prepare`).
2. The handwritten rules: ObjectMeta (cluster-scoped; for slices its name format is handwritten), then
   `validateResourceSliceSpec`: the driver, the pool, the node selection (exactly one of `nodeName`,
   `nodeSelector`, `allNodes`, `perDeviceNodeSelection`), devices xor shared counters, each device
   (slice_devices.py), each counter set, the partition type attribute, the skipped node operations.
3. The enforced declarative rules (`Validate_ResourceSlice`), after every handwritten error: per device
   and per counter set (slice_devices.py). (Had the handwritten rules found nothing, the generic ObjectMeta
   check would run its path-segment name rules; every name they refuse is already no DNS subdomain.)

Each rule a Beta declarative rule supersedes is reported by the declarative pass only (see slice_devices.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resourceapi.api.limits import (
    RESOURCE_SLICE_MAX_COUNTER_SETS,
    RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
    RESOURCE_SLICE_MAX_DEVICES,
    RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES,
)
from resourceapi.gates import (
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINTS,
    DRA_FRACTIONAL_CAPACITY_RANGE,
    DRA_LIST_TYPE_ATTRIBUTES,
    DRA_PARTITIONABLE_DEVICES,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    FeatureGates,
)
from resourceapi.machinery.field import (
    FieldError,
    Path,
    forbidden,
    invalid,
    not_supported,
    required,
)
from resourceapi.machinery.gojson import counters_json, marshal
from resourceapi.machinery.objects import items, mapping, text
from resourceapi.releases import VALIDATION_BEFORE_1_38, Validation, release
from resourceapi.validation.device_fields import driver_name_errors, pool_name_errors
from resourceapi.validation.lists import validate_set, validate_slice
from resourceapi.validation.node_selector import node_name_errors, node_selector_errors, terms_value
from resourceapi.validation.object_meta import GENERATE_NAME, object_meta_errors, owner_references_declarative
from resourceapi.validation.slice_devices import (
    LIST_ATTRIBUTE_FIELDS,
    counter_set_errors_1_36,
    counters_declarative,
    device_declarative,
    device_errors,
    has_list_value,
    internal_attribute_value,
    name_declarative,
    node_selection_errors,
    qualified_name_errors,
)

SPEC = Path("spec")
NODE_FIELDS = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
SKIP_NODE_OPERATIONS = ("*", "NodePrepareResources", "NodeUnprepareResources")  # sorted, as Enum lists them

# Gates of 1.37 features dra-capacity does not model (resourceapi/gates.py rejects their names): what
# kube-apiserver v1.37.2 runs with by default, unless `FeatureGates` knows the gate.
DRA_DEVICE_COMPATIBILITY_GROUPS = "DRADeviceCompatibilityGroups"
DRA_NODE_ALLOCATABLE_RESOURCES = "DRANodeAllocatableResources"
DRA_PARTITIONABLE_DEVICES_TYPE = "DRAPartitionableDevicesType"
DRA_OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"
UPSTREAM_DEFAULTS = {
    DRA_DEVICE_COMPATIBILITY_GROUPS: False,
    DRA_NODE_ALLOCATABLE_RESOURCES: False,
    DRA_PARTITIONABLE_DEVICES_TYPE: False,
    DRA_OPTIONAL_NODE_OPERATIONS: False,
}


def _enabled(gates: FeatureGates, name: str) -> bool:
    try:
        return gates.enabled(name)
    except KeyError:
        return UPSTREAM_DEFAULTS.get(name, False)


@dataclass(frozen=True)
class SliceGates:
    """The gates that change how a slice is prepared or judged."""

    taints: bool
    partitionable: bool
    binding_conditions: bool
    consumable_capacity: bool
    compatibility_groups: bool
    node_allocatable: bool
    list_attributes: bool
    partition_type: bool
    optional_node_operations: bool
    fractional_capacity: bool
    rules: Validation = (
        VALIDATION_BEFORE_1_38  # what the served release judges differently (resourceapi/releases.py)
    )

    @property
    def dropped_device_fields(self) -> tuple[str, ...]:
        """A device's fields that PrepareForCreate drops under these gates."""
        dropped: list[str] = []
        if not self.taints:
            dropped.append("taints")
        if not self.partitionable:
            dropped += ["consumesCounters", "nodeName", "nodeSelector", "allNodes"]
        if not self.binding_conditions:
            dropped += ["bindingConditions", "bindingFailureConditions", "bindsToNode"]
        if not self.consumable_capacity:
            dropped.append("allowMultipleAllocations")
        if not self.node_allocatable:
            dropped.append("nodeAllocatableResources")
        return tuple(dropped)

    @staticmethod
    def of(gates: FeatureGates) -> SliceGates:
        return SliceGates(
            taints=_enabled(gates, DRA_DEVICE_TAINTS),
            partitionable=_enabled(gates, DRA_PARTITIONABLE_DEVICES),
            binding_conditions=_enabled(gates, DRA_DEVICE_BINDING_CONDITIONS)
            and _enabled(gates, DRA_RESOURCE_CLAIM_DEVICE_STATUS),
            consumable_capacity=_enabled(gates, DRA_CONSUMABLE_CAPACITY),
            compatibility_groups=_enabled(gates, DRA_DEVICE_COMPATIBILITY_GROUPS),
            node_allocatable=_enabled(gates, DRA_NODE_ALLOCATABLE_RESOURCES),
            list_attributes=_enabled(gates, DRA_LIST_TYPE_ATTRIBUTES),
            partition_type=_enabled(gates, DRA_PARTITIONABLE_DEVICES_TYPE),
            optional_node_operations=_enabled(gates, DRA_OPTIONAL_NODE_OPERATIONS),
            fractional_capacity=_enabled(gates, DRA_FRACTIONAL_CAPACITY_RANGE),
            rules=release(gates.release).validation,
        )


def validate_resource_slice(slice_obj: Mapping[str, Any], gates: FeatureGates) -> list[FieldError]:
    """Every error kube-apiserver 1.37 reports on creating `slice_obj` (decoded JSON), in its order."""
    sg = SliceGates.of(gates)
    owners = sg.rules.declarative_owner_references
    errors = object_meta_errors(
        mapping(slice_obj.get("metadata")),
        declarative_owners=owners,
        owners_1_36=not sg.rules.declarative_texts,
    )
    spec = prepare(mapping(slice_obj.get("spec")), sg)
    errors.extend(spec_errors(spec, sg))
    if not sg.rules.declarative_texts:  # 1.36: v1.36.3's handwritten errors, each repeated one again
        return errors
    tail = owner_references_declarative(mapping(slice_obj.get("metadata"))) if owners else []
    return once(errors) + tail + spec_declarative(spec, sg)


def once(errors: list[FieldError]) -> list[FieldError]:
    """The handwritten errors with equal ones reported once (the API server filters them through
    `ErrorList.ToAggregate`, which drops repeated texts; the declarative ones are appended after, as they
    are). The generated name's errors, which stand at `metadata.generateName` here, are the server's at
    `metadata.name` with the random name: never equal to the prefix's own."""
    seen: set[str] = set()
    out: list[FieldError] = []
    for e in errors:
        key = str(e)
        if key not in seen or e.field == GENERATE_NAME:
            seen.add(key)
            out.append(e)
    return out


# --- PrepareForCreate --------------------------------------------------------------------------------------


def prepare(spec: Mapping[str, Any], sg: SliceGates) -> dict[str, Any]:
    """`dropDisabledFields` on create: a copy of the spec without the fields of disabled features (the input
    is not modified)."""
    out = dict(spec)
    if not sg.partitionable:
        out.pop("sharedCounters", None)
        out.pop("perDeviceNodeSelection", None)
    if not sg.partition_type:
        out.pop("partitionTypeAttribute", None)
    if not sg.optional_node_operations:
        out.pop("skipNodeOperations", None)
    devices = out.get("devices")
    if isinstance(devices, list):
        out["devices"] = [_prepare_device(d, sg) if isinstance(d, Mapping) else d for d in devices]
    return out


def _prepare_device(device: Mapping[str, Any], sg: SliceGates) -> Mapping[str, Any]:
    """One device without its disabled fields: a copy where something is dropped, else the device itself."""
    dropped = [key for key in sg.dropped_device_fields if key in device]
    capacity = device.get("capacity")
    drop_policies = (
        not sg.consumable_capacity
        and isinstance(capacity, dict)
        and any(isinstance(c, dict) and "requestPolicy" in c for c in capacity.values())
    )
    consumptions = device.get("consumesCounters")
    drop_groups = (
        not sg.compatibility_groups
        and isinstance(consumptions, list)
        and any(isinstance(c, dict) and "compatibilityGroups" in c for c in consumptions)
    )
    attributes = device.get("attributes")
    drop_lists = (
        not sg.list_attributes
        and isinstance(attributes, dict)
        and any(
            isinstance(a, dict) and not a.keys().isdisjoint(LIST_ATTRIBUTE_FIELDS)
            for a in attributes.values()
        )
    )
    if not (dropped or drop_policies or drop_groups or drop_lists):
        return device
    out = dict(device)
    for key in dropped:
        del out[key]
    if drop_policies:
        assert isinstance(capacity, dict)
        out["capacity"] = {k: _without(c, ("requestPolicy",)) for k, c in capacity.items()}
    if drop_groups:
        assert isinstance(consumptions, list)
        out["consumesCounters"] = [_without(c, ("compatibilityGroups",)) for c in consumptions]
    if drop_lists:
        assert isinstance(attributes, dict)
        out["attributes"] = {k: _without(a, LIST_ATTRIBUTE_FIELDS) for k, a in attributes.items()}
    return out


def _without(value: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(value, dict):
        return value
    return {f: v for f, v in value.items() if f not in keys}


# --- handwritten -------------------------------------------------------------------------------------------


def spec_errors(spec: Mapping[str, Any], sg: SliceGates) -> list[FieldError]:
    """`validateResourceSliceSpec` on create, its covered errors left to `spec_declarative`."""
    errors = driver_name_errors(text(spec.get("driver")), SPEC.child("driver"))
    pool = mapping(spec.get("pool"))
    pool_path = SPEC.child("pool")
    errors.extend(pool_name_errors(text(pool.get("name")), pool_path.child("name")))
    count = _int(pool.get("resourceSliceCount"))
    if count <= 0:
        errors.append(invalid(pool_path.child("resourceSliceCount"), count, "must be greater than zero"))
    generation = _int(pool.get("generation"))
    if generation < 0:
        errors.append(
            invalid(pool_path.child("generation"), generation, "must be greater than or equal to zero")
        )
    errors.extend(_node_selection_errors(spec))
    devices_raw = spec.get("devices")
    counters_raw = spec.get("sharedCounters")
    if counters_raw is not None and devices_raw is not None:
        errors.append(invalid(SPEC, "", "only one of `sharedCounters` or `devices` is allowed"))
    devices = [mapping(d) for d in items(devices_raw)]
    errors.extend(_devices_errors(devices, spec.get("perDeviceNodeSelection") is True, sg))
    if not sg.rules.declarative_texts:
        errors.extend(
            validate_set(
                items(counters_raw),
                RESOURCE_SLICE_MAX_COUNTER_SETS,
                lambda item, p: counter_set_errors_1_36(mapping(item), p),
                lambda item: text(mapping(item).get("name")),
                SPEC.child("sharedCounters"),
            )
        )
    else:
        errors.extend(
            validate_slice(  # over the limit: the declarative Too many only
                items(counters_raw),
                RESOURCE_SLICE_MAX_COUNTER_SETS,
                lambda item, p: validate_slice(
                    list(mapping(mapping(item).get("counters"))),
                    RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
                    None,
                    p.child("counters"),
                ),
                SPEC.child("sharedCounters"),
                size_covered=True,
            )
        )
    if spec.get("partitionTypeAttribute") is not None:
        errors.extend(_partition_type_errors(spec, devices))
    errors.extend(_skip_node_operations_errors(spec.get("skipNodeOperations")))
    return errors


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _node_selection_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """The slice's node selection: each set field's own rules, then exactly one of the four."""
    errors: list[FieldError] = []
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        name = text(node_name)
        if name:
            chosen.append("`nodeName`")
            errors.extend(node_name_errors(name, SPEC.child("nodeName")))
        else:
            errors.append(
                invalid(SPEC.child("nodeName"), name, "must be either unset or set to a non-empty string")
            )
    selector = spec.get("nodeSelector")
    if selector is not None:
        chosen.append("`nodeSelector`")
        sel = mapping(selector)
        errors.extend(node_selector_errors(sel, SPEC.child("nodeSelector")))
        if len(items(sel.get("nodeSelectorTerms"))) != 1:
            # upstream: one term only, which simplifies merging selectors of devices from several slices
            path = SPEC.child("nodeSelector", "nodeSelectorTerms")
            errors.append(invalid(path, terms_value(sel), "must have exactly one node selector term"))
    for key, label in (("allNodes", "`allNodes`"), ("perDeviceNodeSelection", "`perDeviceNodeSelection`")):
        value = spec.get(key)
        if value is None:
            continue
        if value is True:
            chosen.append(label)
        else:
            errors.append(invalid(SPEC.child(key), False, "must be either unset or set to true"))
    if not chosen:
        errors.append(required(SPEC, NODE_FIELDS))
    elif len(chosen) > 1:
        errors.append(
            invalid(SPEC, "{" + ", ".join(chosen) + "}", f"{NODE_FIELDS}, but multiple fields are set")
        )
    return errors


def _devices_errors(devices: list[Mapping[str, Any]], per_device: bool, sg: SliceGates) -> list[FieldError]:
    """`validateSet(spec.devices)`: at most 128 devices (64 with taints, counter consumption or list
    attributes; over the limit nothing else is judged), each device, unique names."""
    path = SPEC.child("devices")
    advanced = any(
        items(d.get("taints"))
        or items(d.get("consumesCounters"))
        or (
            sg.list_attributes
            and any(has_list_value(mapping(a)) for a in mapping(d.get("attributes")).values())
        )
        for d in devices
    )
    limit = RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES if advanced else RESOURCE_SLICE_MAX_DEVICES
    errors = validate_set(
        devices,
        limit,
        lambda device, p: device_errors(
            device, p, per_device, sg.fractional_capacity, sg.node_allocatable, sg.rules
        ),
        lambda device: text(device.get("name")),
        path,
    )
    if sg.rules.node_selection_apart:
        errors += node_selection_errors(devices, path, per_device)
    return errors


def _partition_type_errors(spec: Mapping[str, Any], devices: list[Mapping[str, Any]]) -> list[FieldError]:
    """`validatePartitionTypeAttribute` (DRAPartitionableDevicesType): only beside counter-consuming devices,
    each of which carries it (explicitly or bare in the driver's domain) as a string."""
    name = text(spec.get("partitionTypeAttribute"))
    path = SPEC.child("partitionTypeAttribute")
    consuming = [i for i, d in enumerate(devices) if items(d.get("consumesCounters"))]
    if not consuming:
        return [
            invalid(path, name, "may only be set on a slice which declares devices that consume counters")
        ]
    if _fully_qualified_name_errors(name, path):
        return []
    prefix = text(spec.get("driver")) + "/"
    bare = name[len(prefix) :] if name.startswith(prefix) else ""
    errors: list[FieldError] = []
    for i in consuming:
        attributes = mapping(devices[i].get("attributes"))
        attr_path = SPEC.child("devices").index(i).child("attributes").key(name)
        raw = attributes.get(name) if name in attributes else (attributes.get(bare) if bare else None)
        if name not in attributes and (not bare or bare not in attributes):
            errors.append(
                required(
                    attr_path,
                    "device consumes counters and `partitionTypeAttribute` names this attribute, so it must "
                    "be set",
                )
            )
            continue
        attribute = mapping(raw)
        if attribute.get("string") is None:
            errors.append(
                invalid(
                    attr_path,
                    internal_attribute_value(attribute),
                    "must be a string value because `partitionTypeAttribute` names this attribute",
                )
            )
    return errors


def _fully_qualified_name_errors(name: str, path: Path) -> list[FieldError]:
    """`validateFullyQualifiedName`: a qualified name that has a domain."""
    errors = qualified_name_errors(name, path)
    if "/" not in name:
        errors.append(
            invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")
        )
    return errors


def _skip_node_operations_errors(value: Any) -> list[FieldError]:
    """`validateSkipNodeOperations` (DRAOptionalNodeOperations): preparing may only be skipped together with
    unpreparing (or `*`)."""
    ops = [text(v) for v in items(value)]
    if "NodePrepareResources" in ops and "NodeUnprepareResources" not in ops and "*" not in ops:
        return [
            invalid(
                SPEC.child("skipNodeOperations"),
                marshal(ops),
                "NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped",
            )
        ]
    return []


# --- declarative -------------------------------------------------------------------------------------------


def spec_declarative(spec: Mapping[str, Any], sg: SliceGates) -> list[FieldError]:
    """`Validate_ResourceSliceSpec`'s enforced rules: each device, the counter sets (at most 8, unique names,
    names and counters), the partition type attribute's gate and format, the skipped node operations."""
    errors: list[FieldError] = []
    devices_path = SPEC.child("devices")
    for i, device in enumerate(items(spec.get("devices"))):
        errors.extend(device_declarative(mapping(device), devices_path.index(i), sg.rules.declarative_texts))
    counter_sets = items(spec.get("sharedCounters"))
    errors.extend(_counter_sets_declarative(counter_sets, SPEC.child("sharedCounters"), sg.rules))
    attribute = spec.get("partitionTypeAttribute")
    if attribute is not None:
        path = SPEC.child("partitionTypeAttribute")
        if not sg.partition_type:
            errors.append(forbidden(path, ""))
        else:
            errors.extend(_fully_qualified_name_errors(text(attribute), path))
    skip = [text(v) for v in items(spec.get("skipNodeOperations"))]
    errors.extend(skip_node_operations_declarative(skip, SPEC.child("skipNodeOperations")))
    return errors


def counter_set_value(counter_set: Mapping[str, Any]) -> Any:
    """A v1 `CounterSet` as json.Marshal writes it (a declarative Duplicate shows it whole)."""
    out: dict[str, Any] = {"name": text(counter_set.get("name"))}
    counters = counters_json(counter_set.get("counters"))
    if counters:
        out["counters"] = counters
    return marshal(out)


def _counter_sets_declarative(counter_sets: list[Any], path: Path, rules: Validation) -> list[FieldError]:
    def check(entry: Mapping[str, Any], p: Path) -> list[FieldError]:
        errors = name_declarative(text(entry.get("name")), p.child("name"))
        return errors + counters_declarative(entry.get("counters"), p.child("counters"))

    return validate_set(
        [mapping(c) for c in counter_sets],
        RESOURCE_SLICE_MAX_COUNTER_SETS,
        check,
        lambda e: text(e.get("name")),
        path,
        shown=counter_set_value if rules.declarative_texts else None,  # 1.36's handwritten set: the name
        unique_first=True,
    )


def skip_node_operations_declarative(values: list[str], path: Path) -> list[FieldError]:
    """A `skipNodeOperations` list (a slice's, an allocation result's): unique, then each a known one."""

    def check(value: str, p: Path) -> list[FieldError]:
        return [] if value in SKIP_NODE_OPERATIONS else [not_supported(p, value, SKIP_NODE_OPERATIONS)]

    return validate_set(values, -1, check, None, path, unique_first=True)
