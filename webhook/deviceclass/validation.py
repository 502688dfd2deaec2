"""DeviceClass validation: upstream's `ValidateDeviceClass` / `ValidateDeviceClassUpdate` as field errors.

Order, paths and messages follow `pkg/apis/resource/validation/validation.go` (newest): metadata, then
`spec.selectors`, `spec.config`, `spec.extendedResourceName`; the KEP-6406 field and its annotation carrier
come last. All errors are collected (only an over-long list skips its items). Metadata is judged as the API
server hands it over: a namespace is cleared (the class is cluster-scoped) and a name has been generated.

UPDATE ratchets, as upstream's declarative ratcheting (docs/divergences.md): a value equal to the stored one
is not re-validated. For the atomic lists the comparison is per item: an item equal to any item of the old
list is skipped, and an unchanged list is skipped whole (count included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from resourceapi.api.limits import DEVICE_CONFIG_MAX_SIZE, DEVICE_SELECTORS_MAX_SIZE
from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import FieldError, Path, too_many
from resourceapi.machinery.objects import display_name, mapping
from resourceapi.releases import release
from resourceapi.validation.common import type_invalid
from resourceapi.validation.device import (
    Compiler,
    config_driver_errors,
    validate_config,
    validate_extended_resource_name,
    validate_parameters_raw,
    validate_selector,
)
from resourceapi.validation.meta import METADATA, metadata_errors, validate_metadata
from webhook.deviceclass.capacity_requests import check_capacity_requests

__all__ = ["Validation", "validate_device_class", "validate_metadata", "validate_parameters_raw"]

SPEC = Path("spec")
_SPEC_PATHS = {key: SPEC.child(key) for key in ("selectors", "config")}


@dataclass
class Validation:
    """The verdict on one DeviceClass: errors in upstream order, and warnings for the user. `native` holds the
    errors on fields the API server validates itself (metadata, selectors, config, extendedResourceName):
    every error except those of the KEP-6406 field and its annotation carrier
    (webhook/deviceclass/native_rules.py)."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    native: list[FieldError] = field(default_factory=list)


def validate_device_class(
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    gates: FeatureGates,
    compiler: Compiler | None = None,
) -> Validation:
    """Validate `obj` as it will be stored (disabled fields already dropped); `old` is None on create."""
    result = Validation()
    errors = result.errors
    meta_raw = obj.get("metadata")
    if meta_raw is not None and not isinstance(meta_raw, dict):
        errors.append(type_invalid(METADATA, meta_raw, "object"))
    meta = mapping(meta_raw)
    old_meta = mapping(old.get("metadata")) if old is not None else None
    handwritten, declarative = metadata_errors(meta, old_meta)
    texts = release(gates.release).validation.declarative_texts  # 1.36: handwritten texts and order
    if not texts:  # the name's format is handwritten in 1.36, judged first (ValidateObjectMeta)
        handwritten, declarative = declarative + handwritten, []
    errors.extend(handwritten)

    spec_raw = obj.get("spec")
    if spec_raw is not None and not isinstance(spec_raw, dict):
        errors.append(type_invalid(SPEC, spec_raw, "object"))
        spec: Mapping[str, Any] = {}
    else:
        spec = spec_raw or {}
    old_spec = mapping(old.get("spec")) if old is not None else None

    selector_items, selector_count = _validate_list(
        spec,
        old_spec,
        "selectors",
        DEVICE_SELECTORS_MAX_SIZE,
        lambda item, p: validate_selector(item, p, gates, compiler),
    )
    config_items, config_count = _validate_list(
        spec,
        old_spec,
        "config",
        DEVICE_CONFIG_MAX_SIZE,
        lambda item, p: validate_config(item, p, handwritten_driver=not texts),
    )
    if texts:
        errors.extend(selector_items)
        errors.extend(config_items)
        # Then the rules 1.37 validates declaratively, which kube-apiserver appends after the handwritten.
        errors.extend(declarative)
        errors.extend(selector_count)
        errors.extend(config_count)
    else:  # 1.36: each list's Too many is handwritten, in place (v1.36.3 validateDeviceClassSpec)
        errors.extend(selector_items + selector_count + config_items + config_count)
    if not config_count and texts:
        errors.extend(
            _validate_list(spec, old_spec, "config", DEVICE_CONFIG_MAX_SIZE, config_driver_errors)[0]
        )
    name_value = spec.get("extendedResourceName")
    if name_value is not None and (old_spec is None or old_spec.get("extendedResourceName") != name_value):
        path = SPEC.child("extendedResourceName")
        errors.extend(validate_extended_resource_name(name_value, path, handwritten=not texts))

    result.native = list(errors)
    verdict = check_capacity_requests(obj, old, gates, display_name(obj))
    errors.extend(verdict.errors)
    result.warnings.extend(verdict.warnings)
    return result


def _validate_list(
    spec: Mapping[str, Any],
    old_spec: Mapping[str, Any] | None,
    key: str,
    max_items: int,
    check: Callable[[Any, Path], list[FieldError]],
) -> tuple[list[FieldError], list[FieldError]]:
    """`validateSlice` with item-level ratcheting against the old list (see module docstring): the items'
    errors, and the list's own (a wrong type, Too many: declarative in 1.37, so reported apart)."""
    path = _SPEC_PATHS[key]
    items = spec.get(key)
    if items is None:
        return [], []
    if not isinstance(items, list):
        return [], [type_invalid(path, items, "array")]
    old_items: Sequence[Any] = ()
    if old_spec is not None:
        old_raw = old_spec.get(key)
        old_items = old_raw if isinstance(old_raw, list) else ()
        if items == old_items:
            return [], []
    if len(items) > max_items:
        return [], [too_many(path, len(items), max_items)]
    errors: list[FieldError] = []
    for i, item in enumerate(items):
        if old_items and item in old_items:
            continue
        errors.extend(check(item, path.index(i)))
    return errors, []
