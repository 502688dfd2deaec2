"""The webhook's KEP-6406 admission rules: gates and ratcheting around the shared rules.

The rules of a CapacityRequirements and of its annotation carrier live in `resourceapi.capacity_requests`
(shared with the allocator). Here: with DRAConsumableCapacity off, a value that survives the gate drop is
Forbidden (it cannot have any effect); on update an unchanged value is not re-validated; when both the field
and the annotation are present the field wins and the annotation is ignored (with a warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resourceapi.capacity_requests import (
    ANNOTATION,
    ANNOTATION_PATH,
    CAPACITY_FIELD,
    FIELD_PATH,
    NAME_FIELD,
    parse_annotation,
    shown_annotation,
    validate_requirements,
)
from resourceapi.gates import DRA_CONSUMABLE_CAPACITY, FeatureGates
from resourceapi.machinery.field import FieldError, forbidden, required
from resourceapi.machinery.objects import annotations_of, spec_of
from webhook.deviceclass import warning_texts

FORBIDDEN_DETAIL = f"may only be set when the {DRA_CONSUMABLE_CAPACITY} feature gate is enabled"


@dataclass
class CapacityVerdict:
    """Errors and warnings for the KEP-6406 request of one DeviceClass (field or annotation)."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_capacity_requests(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, gates: FeatureGates, class_name: str
) -> CapacityVerdict:
    """All KEP-6406 rules for the object as stored (after the gate drop); `old` is None on create."""
    spec = spec_of(obj)
    annotations = annotations_of(obj)
    old_spec = spec_of(old)
    old_annotations = annotations_of(old)
    value = spec.get(CAPACITY_FIELD)
    verdict = CapacityVerdict()
    consumable = gates.enabled(DRA_CONSUMABLE_CAPACITY)
    if value is not None:
        if ANNOTATION in annotations:
            verdict.warnings.append(warning_texts.annotation_ignored(ANNOTATION))
        old_value = old_spec.get(CAPACITY_FIELD)
        if old is not None and old_value == value:
            pass  # unchanged: not re-validated
        elif not consumable:
            verdict.errors.append(forbidden(FIELD_PATH, FORBIDDEN_DETAIL))
        else:
            _judge_field(value, old_value, verdict)
    elif ANNOTATION in annotations:
        text = annotations[ANNOTATION]
        if old is not None and old_annotations.get(ANNOTATION) == text:
            pass
        elif not isinstance(text, str):
            pass  # reported with the other annotations: `metadata.annotations: ... must be of type string`
        elif not consumable:
            verdict.errors.append(forbidden(ANNOTATION_PATH, FORBIDDEN_DETAIL))
        else:
            _judge_annotation(text, verdict)
    else:
        return verdict
    if spec.get(NAME_FIELD) is None:
        verdict.warnings.append(warning_texts.implicit_name_only(class_name))
    return verdict


def check_escaped_capacity(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """The content rules for a KEP-6406 request that escaped the gate drop (the mutating webhook unreachable
    or not registered, its failurePolicy Ignore): whatever the gates, an invalid value is denied, because the
    API server stores what escaped and the binder would otherwise read it. The one that counts is judged: the
    field when set, else the annotation; an unchanged value on update is not re-validated (ratcheting)."""
    spec, old_spec = spec_of(obj), spec_of(old)
    verdict = CapacityVerdict()
    value = spec.get(CAPACITY_FIELD)
    if value is not None:
        old_value = old_spec.get(CAPACITY_FIELD)
        if old is None or old_value != value:
            _judge_field(value, old_value, verdict)
        return verdict.errors
    text = annotations_of(obj).get(ANNOTATION)
    if isinstance(text, str) and (old is None or annotations_of(old).get(ANNOTATION) != text):
        _judge_annotation(text, verdict)
    return verdict.errors


def _judge_field(value: Any, old_value: Any, verdict: CapacityVerdict) -> None:
    verdict.errors.extend(validate_requirements(value, FIELD_PATH, old_value))
    verdict.warnings.extend(_double_spellings(value))


def _judge_annotation(text: str, verdict: CapacityVerdict) -> None:
    parsed, errors = parse_annotation(text)
    verdict.errors.extend(errors)
    if errors:
        return
    if parsed is None:
        verdict.errors.append(required(ANNOTATION_PATH))
        return
    verdict.errors.extend(
        validate_requirements(parsed, ANNOTATION_PATH, flat=True, shown=shown_annotation(text))
    )
    verdict.warnings.extend(_double_spellings(parsed))


def _double_spellings(value: Any) -> list[str]:
    """`shares` and `<domain>/shares` both requested: the allocator decides (it knows the driver); we warn."""
    requests = value.get("requests") if isinstance(value, dict) else None
    if not isinstance(requests, dict):
        return []
    short = {k for k in requests if isinstance(k, str) and "/" not in k}
    out: list[str] = []
    for key in requests:
        if isinstance(key, str) and "/" in key:
            ident = key.rsplit("/", 1)[1]
            if ident in short:
                out.append(warning_texts.double_spelling(ident, key))
    return out
