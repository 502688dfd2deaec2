"""One ResourceSlice device as kube-apiserver 1.37 judges it: `validateDevice` (handwritten) and
`Validate_Device` (1.37's declarative rules), over the decoded JSON with disabled fields already dropped.

The handwritten half leaves out what a Beta declarative rule reports instead (`MarkCoveredByDeclarative`
errors that a matching enforced declarative error supersedes): the attribute union, the counter consumptions'
names, Required maps, list size and uniqueness, the taints' effects, the binding conditions' sizes. An Alpha
declarative rule is never enforced, so its handwritten twin stays (a string list item over 64 bytes, a node
allocatable mapping's dependent fields). A covered error that no declarative error matches stays too: the
attribute union at a key cut short for display (the declarative rule reports the whole key).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from resourceapi.api.limits import (
    ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH,
    COMPATIBILITY_GROUPS_MAX_ITEMS,
    DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH,
    DEVICE_TAINTS_MAX_LENGTH,
    DNS1123_LABEL_MAX_LENGTH,
    RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE,
    RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET,
    RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
    RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
)
from resourceapi.machinery.field import ErrorType, FieldError, Path, invalid, required, too_long, too_many
from resourceapi.machinery.gojson import NULL, GoJSON, counters_json, marshal
from resourceapi.machinery.goquantity import go_quantity
from resourceapi.machinery.names import (
    go_len,
    is_dns1123_label,
    max_len_bytes_error,
    max_len_error,
    validate_qualified_name,
)
from resourceapi.machinery.objects import items, mapping, text
from resourceapi.releases import VALIDATION_BEFORE_1_38, Validation
from resourceapi.validation.capacity_policy import multi_allocatable_errors, single_allocatable_errors
from resourceapi.validation.device_fields import (
    binding_parameter_declarative,
    binding_parameter_errors,
    device_name_errors,
    taint_declarative,
    taint_errors,
)
from resourceapi.validation.lists import truncate_if_too_long, validate_set, validate_slice
from resourceapi.validation.node_selector import node_name_errors, node_selector_errors, terms_value

# The union members of DeviceAttribute, in declaration order (json names), scalar then list.
SCALAR_ATTRIBUTE_FIELDS = ("int", "bool", "string", "version")
LIST_ATTRIBUTE_FIELDS = ("ints", "bools", "strings", "versions")
_UNION_FIELDS = ", ".join(f"`{f}`" for f in SCALAR_ATTRIBUTE_FIELDS + LIST_ATTRIBUTE_FIELDS)
_GO_ATTRIBUTE_FIELDS = (
    ("int", "IntValue"),
    ("bool", "BoolValue"),
    ("string", "StringValue"),
    ("version", "VersionValue"),
    ("ints", "IntValues"),
    ("bools", "BoolValues"),
    ("strings", "StringValues"),
    ("versions", "VersionValues"),
)
_NUMERIC = r"(0|[1-9][0-9]*)"
_PRE_RELEASE = r"(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
SEMVER_RE = re.compile(
    rf"{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRE_RELEASE}(\.{_PRE_RELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?"
)
SEMVER_MESSAGE = "must be a string compatible with semver.org spec 2.0.0"


@functools.cache
def semver_pattern(digits: int | None) -> re.Pattern[str]:
    """`semverRe` of a release whose numbers have at most `digits` digits (1.38: 18, so that every number
    fits an int64; None: unbounded)."""
    if digits is None:
        return SEMVER_RE
    numeric = rf"(0|[1-9][0-9]{{0,{digits - 1}}})"
    pre = rf"({numeric}|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
    return re.compile(rf"{numeric}\.{numeric}\.{numeric}(-{pre}(\.{pre})*)?(\+{_BUILD}(\.{_BUILD})*)?")


def semver_message(digits: int | None) -> str:
    return SEMVER_MESSAGE if digits is None else f"{SEMVER_MESSAGE}, with at most {digits} digits in numbers"


# The simple-attribute fast path checks the strictest release's rule; a value it turns away is judged in
# full, by its release's rule.
_SIMPLE_SEMVER = semver_pattern(18)
PER_DEVICE_NODE_FIELDS = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is "
    "set to true in the ResourceSlice spec"
)
PER_DEVICE_NODE_FIELDS_FORBIDDEN = (
    "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in "
    "the ResourceSlice spec"
)
NODE_ALLOCATABLE_FIELDS = "`capacityKey`, `deviceMultiplier`"


_BASE = "\x00"  # the path of memoized errors, replaced by the real one (`_rebased`)


def _rebased(errors: tuple[FieldError, ...], path: Path) -> list[FieldError]:
    """Memoized errors (computed at `_BASE`) at `path`."""
    if not errors:
        return []
    prefix = str(path)
    return [dataclasses.replace(e, field=prefix + e.field[len(_BASE) :]) for e in errors]


def key_errors(name: str, path: Path, one_slash: bool = False) -> list[FieldError]:
    """`qualified_name_errors`, memoized: a dump repeats the same few attribute and capacity names."""
    return _rebased(_key_errors(name, one_slash), path)


@functools.lru_cache(maxsize=4096)
def _key_errors(name: str, one_slash: bool) -> tuple[FieldError, ...]:
    return tuple(qualified_name_errors(name, Path(_BASE), one_slash))


def qualified_name_errors(name: str, path: Path, one_slash: bool = False) -> list[FieldError]:
    """`validateQualifiedName`: `<C identifier>` or `<domain>/<C identifier>`, the identifier at most 32
    bytes and the domain a driver name. A name with more slashes is not judged before 1.38 (upstream's
    TODO), refused from 1.38 on (`one_slash`, `Validation.one_slash`), as `validate_qualified_name` does."""
    return [] if name.count("/") > 1 and not one_slash else validate_qualified_name(name, path)


def simple_attribute(attribute: Any) -> bool:
    """One valid scalar value (the common attribute): no handwritten error and no union error."""
    if attribute.__class__ is not dict or len(attribute) != 1:
        return False
    value = attribute.get("string")
    if value is not None:
        return value.__class__ is str and (
            len(value) <= 16 or go_len(value) <= DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH
        )
    value = attribute.get("int")
    if value is not None:
        return value.__class__ is int
    value = attribute.get("bool")
    if value is not None:
        return value.__class__ is bool
    value = attribute.get("version")
    if value is not None:
        return (
            value.__class__ is str
            and (len(value) <= 16 or go_len(value) <= DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)
            and _SIMPLE_SEMVER.fullmatch(value) is not None
        )
    return False


def has_list_value(attribute: Mapping[str, Any]) -> bool:
    """A list-typed attribute value is set (non-nil, even empty)."""
    return any(attribute.get(f) is not None for f in LIST_ATTRIBUTE_FIELDS)


def _num_attribute_values(attributes: Mapping[str, Any]) -> int:
    """`numEntriesDeviceAttribute`: a scalar counts 1, a list its items."""
    total = 0
    for raw in attributes.values():
        if raw.__class__ is not dict or raw.keys().isdisjoint(LIST_ATTRIBUTE_FIELDS):
            total += 1
            continue
        lengths = [len(items(raw.get(f))) for f in LIST_ATTRIBUTE_FIELDS]
        total += sum(lengths) if any(lengths) else 1
    return total


# --- handwritten -----------------------------------------------------------------------------------------


def device_errors(
    device: Mapping[str, Any],
    path: Path,
    per_device_node_selection: bool,
    fractional: bool,
    allocatable: bool,
    rules: Validation = VALIDATION_BEFORE_1_38,
) -> list[FieldError]:
    """`validateDevice` on create, its covered errors left to `device_declarative`; with
    `rules.node_selection_apart` (1.38) the node selection is left to `node_selection_errors`."""
    name = text(device.get("name"))
    errors = device_name_errors(name, path.child("name"))
    attributes = mapping(device.get("attributes"))
    capacity = mapping(device.get("capacity"))
    count = len(attributes) + len(capacity)
    if count > RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        limit = RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
        errors.append(
            invalid(path, count, f"the total number of attributes and capacities must not exceed {limit}")
        )
    values = _num_attribute_values(attributes)
    if values > RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        limit = RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE
        errors.append(invalid(path, values, f"the total number of attribute values must not exceed {limit}"))
    if attributes:
        attributes_path = path.child("attributes")
        for key in sorted(attributes):
            errors.extend(key_errors(key, attributes_path, rules.one_slash))
            value = attributes[key]
            if simple_attribute(value):
                continue
            shown = truncate_if_too_long(key, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH)
            union = shown != key or not rules.declarative_texts  # 1.36: no declarative union
            errors.extend(
                _attribute_errors(mapping(value), attributes_path.key(shown), union, rules.semver_digits)
            )
    if capacity:
        multiple = device.get("allowMultipleAllocations") is True
        found = _capacity_errors(capacity, multiple, fractional, rules.one_slash, not rules.declarative_texts)
        errors.extend(_rebased(found, path.child("capacity")))
    v1_36 = not rules.declarative_texts  # v1.36.3: nothing declarative enforced, every covered rule by hand
    errors.extend(
        validate_slice(
            items(device.get("taints")),
            DEVICE_TAINTS_MAX_LENGTH,
            lambda taint, p: taint_errors(mapping(taint), p, effect=v1_36),
            path.child("taints"),
        )
    )
    if v1_36:
        errors.extend(
            validate_set(
                items(device.get("consumesCounters")),
                RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
                lambda item, p: consumption_errors_1_36(mapping(item), p),
                lambda item: text(mapping(item).get("counterSet")),
                path.child("consumesCounters"),
            )
        )
    else:
        errors.extend(
            validate_slice(  # over the limit: the declarative Too many only
                items(device.get("consumesCounters")),
                RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
                lambda consumption, p: validate_slice(
                    list(mapping(mapping(consumption).get("counters"))),
                    RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
                    None,
                    p.child("counters"),
                ),
                path.child("consumesCounters"),
                size_covered=True,
            )
        )
    if not rules.node_selection_apart:
        errors.extend(_node_selection_errors(device, path, per_device_node_selection))
    conditions = device.get("bindingConditions")
    failure_conditions = device.get("bindingFailureConditions")
    if conditions is not None or failure_conditions is not None:
        errors.extend(binding_parameter_errors(conditions, failure_conditions, path, sizes=v1_36))
    if allocatable:
        resources = mapping(device.get("nodeAllocatableResources"))
        errors.extend(_node_allocatable_errors(resources, capacity, path))
    return errors


_CAPACITY_CACHE: dict[tuple[bool, bool, bool, bool, str], tuple[FieldError, ...]] = {}
_CAPACITY_CACHE_MAX = 4096


def _capacity_errors(
    capacity: Mapping[str, Any], multiple: bool, fractional: bool, one_slash: bool, v1_36: bool = False
) -> tuple[FieldError, ...]:
    """The capacity map's errors at `_BASE`, memoized by its JSON: the devices of a slice, and of a cluster,
    repeat the same capacities."""
    try:
        key = (multiple, fractional, one_slash, v1_36, json.dumps(capacity, sort_keys=True))
    except (TypeError, ValueError):
        return tuple(_capacity_map_errors(capacity, multiple, fractional, Path(_BASE), one_slash, v1_36))
    found = _CAPACITY_CACHE.get(key)
    if found is None:
        found = tuple(_capacity_map_errors(capacity, multiple, fractional, Path(_BASE), one_slash, v1_36))
        if len(_CAPACITY_CACHE) >= _CAPACITY_CACHE_MAX:
            _CAPACITY_CACHE.clear()
        _CAPACITY_CACHE[key] = found
    return found


def _capacity_map_errors(
    capacity: Mapping[str, Any], multiple: bool, fractional: bool, path: Path, one_slash: bool, v1_36: bool
) -> list[FieldError]:
    """`validateMap(capacity)`: each key a qualified name, each item's request policy for a device that
    allows multiple allocations, none for one that does not."""
    errors: list[FieldError] = []
    for key in sorted(capacity):
        errors.extend(key_errors(key, path, one_slash))
        item_path = path.key(truncate_if_too_long(key, ATTRIBUTE_AND_CAPACITY_MAX_KEY_LENGTH))
        item = mapping(capacity[key])
        if multiple:
            errors.extend(multi_allocatable_errors(item, item_path, fractional, v1_36))
        else:
            errors.extend(single_allocatable_errors(item, item_path))
    return errors


def counter_set_errors_1_36(counter_set: Mapping[str, Any], path: Path) -> list[FieldError]:
    """v1.36.3 `validateCounterSet`, nothing declarative enforced: the name (Required, a DNS label), the
    counters (Required when empty, else at most 32, each key a DNS label reported at the map's path)."""
    name = text(counter_set.get("name"))
    errors = [required(path.child("name"))] if not name else label_errors(name, path.child("name"))
    return errors + _counters_1_36(
        counter_set.get("counters"), path.child("counters"), RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET
    )


def consumption_errors_1_36(consumption: Mapping[str, Any], path: Path) -> list[FieldError]:
    """v1.36.3 `validateDeviceCounterConsumption`: the counter set (Required, a DNS label), the counters
    (Required when empty, else at most 32, each key a DNS label)."""
    name = text(consumption.get("counterSet"))
    path_set = path.child("counterSet")
    errors = [required(path_set)] if not name else label_errors(name, path_set)
    limit = RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION
    return errors + _counters_1_36(consumption.get("counters"), path.child("counters"), limit)


def _counters_1_36(value: Any, path: Path, limit: int) -> list[FieldError]:
    counters = mapping(value)
    if not counters:
        return [required(path)]
    if len(counters) > limit:
        return [too_many(path, len(counters), limit)]
    return [e for key in sorted(counters) for e in label_errors(key, path)]


def label_errors(name: str, path: Path) -> list[FieldError]:
    """`ValidateDNS1123Label` (handwritten: its length in characters)."""
    return [invalid(path, name, msg) for msg in is_dns1123_label(name)]


def _attribute_errors(
    attribute: Mapping[str, Any], path: Path, cut: bool, semver_digits: int | None
) -> list[FieldError]:
    """`validateDeviceAttribute`: each set value's own rules; the one-value union only where the
    declarative union cannot supersede it (`cut`: the key shown shortened)."""
    errors: list[FieldError] = []
    num_fields = 0
    for field in SCALAR_ATTRIBUTE_FIELDS:
        value = attribute.get(field)
        if value is None:
            continue
        num_fields += 1
        if field == "string":
            errors.extend(_string_value_errors(text(value), path.child("string")))
        elif field == "version":
            errors.extend(_version_value_errors(text(value), path.child("version"), semver_digits))
    for field in LIST_ATTRIBUTE_FIELDS:
        value = attribute.get(field)
        if value is None:
            continue
        num_fields += 1
        values = items(value)
        if not values:
            errors.append(invalid(path.child(field), GoJSON("[]"), "must not be empty if specified"))
        if field == "strings":
            for i, item in enumerate(values):
                errors.extend(_string_value_errors(text(item), path.child("strings").index(i)))
        elif field == "versions":
            for i, item in enumerate(values):
                errors.extend(
                    _version_value_errors(text(item), path.child("versions").index(i), semver_digits)
                )
    if cut and num_fields == 0:
        errors.append(invalid(path, "", "exactly one value must be specified"))
    elif cut and num_fields > 1:
        errors.append(
            invalid(path, internal_attribute_value(attribute), "exactly one value must be specified")
        )
    return errors


def internal_attribute_value(attribute: Mapping[str, Any]) -> GoJSON:
    """The internal `resource.DeviceAttribute` as a bad value (Go field names, unset as null)."""
    return marshal({go: attribute.get(json) for json, go in _GO_ATTRIBUTE_FIELDS})


def _string_value_errors(value: str, path: Path) -> list[FieldError]:
    if go_len(value) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
        return [too_long(path, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)]
    return []


def _version_value_errors(value: str, path: Path, digits: int | None) -> list[FieldError]:
    errors: list[FieldError] = []
    if not semver_pattern(digits).fullmatch(value):
        errors.append(invalid(path, value, semver_message(digits)))
    errors.extend(_string_value_errors(value, path))
    return errors


def node_selection_errors(devices: list[Mapping[str, Any]], path: Path, per_device: bool) -> list[FieldError]:
    """1.38's `validateDeviceNodeSelection` of every device, after all other device errors (`path`:
    `spec.devices`): one `nodeSelector` term only."""
    errors: list[FieldError] = []
    for i, device in enumerate(devices):
        errors.extend(_node_selection_errors(mapping(device), path.index(i), per_device, one_term=True))
    return errors


def _node_selection_errors(
    device: Mapping[str, Any], path: Path, per_device: bool, one_term: bool = False
) -> list[FieldError]:
    """A device's own node selection: exactly one of three with `perDeviceNodeSelection`, none without;
    with `one_term` (1.38) a `nodeSelector` of exactly one term."""
    node_name = device.get("nodeName")
    selector = device.get("nodeSelector")
    all_nodes = device.get("allNodes")
    if not per_device:
        if node_name is not None or selector is not None or all_nodes is not None:
            return [invalid(path, NULL, PER_DEVICE_NODE_FIELDS_FORBIDDEN)]
        return []
    errors: list[FieldError] = []
    chosen: list[str] = []
    if node_name is not None:
        name = text(node_name)
        if name:
            chosen.append("`nodeName`")
            errors.extend(node_name_errors(name, path.child("nodeName")))
        else:
            errors.append(invalid(path.child("nodeName"), name, "must not be empty"))
    if selector is not None:
        chosen.append("`nodeSelector`")
        sel = mapping(selector)
        errors.extend(node_selector_errors(sel, path.child("nodeSelector")))
        if one_term and len(items(sel.get("nodeSelectorTerms"))) != 1:
            terms = path.child("nodeSelector", "nodeSelectorTerms")
            errors.append(invalid(terms, terms_value(sel), "must have exactly one node selector term"))
    if all_nodes is not None:
        if all_nodes is True:
            chosen.append("`allNodes`")
        else:
            errors.append(invalid(path.child("allNodes"), False, "must be either unset or set to true"))
    if not chosen:
        errors.append(required(path, PER_DEVICE_NODE_FIELDS))
    elif len(chosen) > 1:
        errors.append(invalid(path, "{" + ", ".join(chosen) + "}", PER_DEVICE_NODE_FIELDS))
    return errors


def _is_node_allocatable_resource_name(name: str) -> bool:
    """`IsNodeAllocatableResourceName`: cpu, memory or a hugepages size."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _node_allocatable_errors(
    resources: Mapping[str, Any], capacity: Mapping[str, Any], path: Path
) -> list[FieldError]:
    """`validateNodeAllocatableResources` (DRANodeAllocatableResources)."""
    errors: list[FieldError] = []
    base = path.child("nodeAllocatableResources")
    for name in sorted(resources):
        key_path = base.key(name)
        resource = mapping(resources[name])
        if not _is_node_allocatable_resource_name(name):
            errors.append(invalid(key_path, name, "must be a node allocatable resource name"))
        resource_mapping = resource.get("mapping")
        overhead = resource.get("overhead")
        if resource_mapping is None and overhead is None:
            errors.append(required(key_path, "at least one of mapping or overhead must be set"))
        if resource_mapping is not None:
            errors.extend(
                _allocatable_mapping_errors(mapping(resource_mapping), capacity, key_path.child("mapping"))
            )
        if overhead is not None:
            errors.extend(_allocatable_overhead_errors(mapping(overhead), key_path.child("overhead")))
    return errors


def _allocatable_mapping_errors(
    mapping: Mapping[str, Any], capacity: Mapping[str, Any], path: Path
) -> list[FieldError]:
    errors: list[FieldError] = []
    key = mapping.get("capacityKey")
    capacity_multiplier = mapping.get("capacityMultiplier")
    if key is not None:
        key_text = text(key)
        if not key_text:
            errors.append(invalid(path.child("capacityKey"), "", "capacityKey must not be an empty string"))
        elif key_text not in capacity:
            errors.append(FieldError(ErrorType.NOT_FOUND, str(path.child("capacityKey")), key_text))
        if capacity_multiplier is None:
            errors.append(
                required(
                    path.child("capacityMultiplier"), "capacityMultiplier is required when capacityKey is set"
                )
            )
        elif go_quantity(capacity_multiplier).q.sign() <= 0:
            errors.append(
                invalid(
                    path.child("capacityMultiplier"),
                    str(go_quantity(capacity_multiplier)),
                    "must be positive",
                )
            )
    device_multiplier = mapping.get("deviceMultiplier")
    if device_multiplier is not None and go_quantity(device_multiplier).q.sign() <= 0:
        errors.append(
            invalid(path.child("deviceMultiplier"), str(go_quantity(device_multiplier)), "must be positive")
        )
    if capacity_multiplier is not None and key is None:
        errors.append(
            required(path.child("capacityKey"), "capacityKey is required when capacityMultiplier is set")
        )
    return errors


def _allocatable_overhead_errors(overhead: Mapping[str, Any], path: Path) -> list[FieldError]:
    per_pod = overhead.get("perPod")
    per_container = overhead.get("perContainer")
    if per_pod is None and per_container is None:
        return [invalid(path, "", "at least one of perPod or perContainer must be set")]
    errors: list[FieldError] = []
    for name, raw in (("perPod", per_pod), ("perContainer", per_container)):
        if raw is not None and go_quantity(raw).q.sign() < 0:
            errors.append(invalid(path.child(name), str(go_quantity(raw)), "must be non-negative"))
    return errors


# --- declarative -----------------------------------------------------------------------------------------


def device_declarative(device: Mapping[str, Any], path: Path, texts: bool = True) -> list[FieldError]:
    """`Validate_Device`'s enforced rules: each attribute's one-value union (at its whole key), the counter
    consumptions (at most 2, unique counter sets, names and counters), the taints' effects, the binding
    condition list sizes, the node allocatable mappings' union. `texts` off (1.36,
    `Validation.declarative_texts`): a repeated counter set shows its name, as the handwritten set does."""
    errors: list[FieldError] = []
    attributes = mapping(device.get("attributes"))
    for key in sorted(attributes):
        value = attributes[key]
        if not simple_attribute(value):
            errors.extend(_attribute_union(mapping(value), path.child("attributes").key(key)))
    consumptions = items(device.get("consumesCounters"))
    if consumptions:
        errors.extend(_consumptions_declarative(consumptions, path.child("consumesCounters"), texts))
    for i, taint in enumerate(items(device.get("taints"))):
        errors.extend(taint_declarative(mapping(taint), path.child("taints").index(i)))
    conditions = device.get("bindingConditions")
    failure_conditions = device.get("bindingFailureConditions")
    if conditions is not None or failure_conditions is not None:
        errors.extend(binding_parameter_declarative(conditions, failure_conditions, path))
    resources = mapping(device.get("nodeAllocatableResources"))
    for name in sorted(resources):
        resource_mapping = mapping(resources[name]).get("mapping")
        if resource_mapping is not None:
            errors.extend(
                _allocatable_mapping_union(
                    mapping(resource_mapping), path.child("nodeAllocatableResources").key(name)
                )
            )
    return errors


def _attribute_union(attribute: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`validate.Union` over DeviceAttribute: a scalar is set when non-null, a list when non-empty."""
    chosen = [f for f in SCALAR_ATTRIBUTE_FIELDS if attribute.get(f) is not None]
    chosen += [f for f in LIST_ATTRIBUTE_FIELDS if items(attribute.get(f))]
    if len(chosen) > 1:
        return [invalid(path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {_UNION_FIELDS}")]
    if not chosen:
        return [invalid(path, "", f"must specify one of: {_UNION_FIELDS}")]
    return []


def _allocatable_mapping_union(mapping: Mapping[str, Any], path: Path) -> list[FieldError]:
    chosen = [f for f in ("capacityKey", "deviceMultiplier") if mapping.get(f) is not None]
    path = path.child("mapping")
    if len(chosen) > 1:
        return [
            invalid(
                path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {NODE_ALLOCATABLE_FIELDS}"
            )
        ]
    if not chosen:
        return [invalid(path, "", f"must specify one of: {NODE_ALLOCATABLE_FIELDS}")]
    return []


def consumption_value(consumption: Mapping[str, Any]) -> GoJSON:
    """A v1 `DeviceCounterConsumption` as json.Marshal writes it (a declarative Duplicate shows it whole)."""
    out: dict[str, Any] = {"counterSet": text(consumption.get("counterSet"))}
    counters = counters_json(consumption.get("counters"))
    if counters:
        out["counters"] = counters
    groups = items(consumption.get("compatibilityGroups"))
    if groups:
        out["compatibilityGroups"] = [text(g) for g in groups]
    return marshal(out)


def _consumptions_declarative(consumptions: list[Any], path: Path, texts: bool = True) -> list[FieldError]:
    """`consumesCounters`: MaxItems 2 (nothing else then), unique `counterSet`, then each entry."""

    def check(entry: Mapping[str, Any], p: Path) -> list[FieldError]:
        errors = name_declarative(text(entry.get("counterSet")), p.child("counterSet"))
        errors += counters_declarative(entry.get("counters"), p.child("counters"))
        return errors + _compatibility_groups_declarative(entry.get("compatibilityGroups"), p)

    return validate_set(
        [mapping(c) for c in consumptions],
        RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
        check,
        lambda e: text(e.get("counterSet")),
        path,
        shown=consumption_value if texts else None,
        unique_first=True,
    )


def _compatibility_groups_declarative(value: Any, path: Path) -> list[FieldError]:
    """`compatibilityGroups` (DRADeviceCompatibilityGroups): at most 2, short names, unique."""
    names = [text(g) for g in items(value)]
    return validate_set(
        names, COMPATIBILITY_GROUPS_MAX_ITEMS, short_name_errors, None, path.child("compatibilityGroups")
    )


def short_name_errors(name: str, path: Path) -> list[FieldError]:
    """`validate.ShortName` (`content.IsDNS1123Label`: its length in bytes)."""
    long = max_len_error(DNS1123_LABEL_MAX_LENGTH)
    return [
        invalid(path, name, max_len_bytes_error(DNS1123_LABEL_MAX_LENGTH) if msg == long else msg)
        for msg in is_dns1123_label(name)
    ]


def name_declarative(name: str, path: Path) -> list[FieldError]:
    """`RequiredValue` then `ShortName`."""
    if not name:
        return [required(path)]
    return short_name_errors(name, path)


def counters_declarative(value: Any, path: Path) -> list[FieldError]:
    """`RequiredMap` then `EachMapKey(ShortName)` at the map's path (keys in sorted order)."""
    counters = mapping(value)
    if not counters:
        return [required(path)]
    return [e for key in sorted(counters) for e in short_name_errors(key, path)]
