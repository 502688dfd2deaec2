"""KEP-6406 `spec.extendedResourceCapacityRequests` and its annotation carrier (DESIGN's decisions).

A CapacityRequirements is `{"requests": {<qualified name>: <quantity>}}`. Keys follow the DRA qualified-name
rules (errors at `...requests[<key>]`), values must parse as quantities and be greater than zero. With
DRAConsumableCapacity off, a value that survives the gate drop is Forbidden (it cannot have any effect).

The annotation `dra-capacity.io/extended-resource-capacity-requests` carries the same JSON for API servers
that predate the field; it gets the same rules and gates, with every error at the annotation's path. When
both are present the field wins and the annotation is ignored (with a warning).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resourceapi.field import FieldError, Path, forbidden, invalid, required
from resourceapi.gates import DRA_CONSUMABLE_CAPACITY, FeatureGates
from resourceapi.names import validate_qualified_name
from resourceapi.quantity import QuantityError, coerce_quantity
from webhook import warning_texts
from webhook.dropping import ANNOTATION, CAPACITY_FIELD, NAME_FIELD
from webhook.objects import annotations_of, spec_of
from webhook.rawjson import GoJSONError, loads

FIELD_PATH = Path("spec").child(CAPACITY_FIELD)
ANNOTATION_PATH = Path("metadata").child("annotations").key(ANNOTATION)
OMITTED = "<value omitted>"
_PLACEHOLDER = Path("-")
# Annotation values up to this many characters are echoed in errors; longer ones show "<value omitted>".
ANNOTATION_ECHO_LIMIT = 64
FORBIDDEN_DETAIL = f"may only be set when the {DRA_CONSUMABLE_CAPACITY} feature gate is enabled"


@dataclass
class CapacityVerdict:
    """Errors and warnings for the KEP-6406 request of one DeviceClass (field or annotation)."""

    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def validate_requirements(
    value: Any, path: Path, old: Any = None, *, flat: bool = False, shown: Any = OMITTED
) -> CapacityVerdict:
    """Check the JSON of a CapacityRequirements at `path`.

    `old` is the stored value on update: an entry with the same key and value is not re-validated.
    `flat` reports every error at `path` itself (the annotation); `shown` is the bad value of shape errors.
    """
    verdict = CapacityVerdict()
    if not isinstance(value, dict):
        verdict.errors.append(invalid(path, shown, "must be a valid JSON object"))
        return verdict
    for key in value:
        if key != "requests":
            verdict.errors.append(invalid(path, shown, f"unknown field {_quote_key(key)}"))
    requests = value.get("requests")
    if requests is None:
        return verdict
    requests_path = path if flat else path.child("requests")
    if not isinstance(requests, dict):
        verdict.errors.append(invalid(requests_path, shown, "must be a valid JSON object"))
        return verdict
    old_requests = old.get("requests") if isinstance(old, dict) else None
    if not isinstance(old_requests, dict):
        old_requests = {}
    for key in sorted(requests, key=str):
        raw = requests[key]
        if key in old_requests and old_requests[key] == raw:
            continue
        key_errors = _key_errors(str(key))
        value_error = _value_error(raw) if isinstance(raw, str) else _value_error_uncached(raw)
        if key_errors or value_error:
            entry_path = path if flat else requests_path.key(str(key))
            verdict.errors.extend(dataclasses.replace(e, field=str(entry_path)) for e in key_errors)
            if value_error:
                verdict.errors.append(invalid(entry_path, *value_error))
    verdict.warnings.extend(_double_spellings(requests))
    return verdict


@functools.lru_cache(maxsize=4096)
def _key_errors(key: str) -> tuple[FieldError, ...]:
    """Qualified-name errors of a request key at a placeholder path (memoized: keys repeat)."""
    return tuple(validate_qualified_name(key, _PLACEHOLDER))


@functools.lru_cache(maxsize=4096)
def _value_error(raw: str) -> tuple[Any, str] | None:
    return _value_error_uncached(raw)


def _value_error_uncached(raw: Any) -> tuple[Any, str] | None:
    """(bad value, detail) when `raw` is not a quantity greater than zero."""
    try:
        quantity = coerce_quantity(raw)
    except QuantityError as exc:
        return raw, str(exc)
    if quantity.sign() <= 0:
        return str(quantity), "must be greater than zero"
    return None


def parse_annotation(text: Any) -> tuple[Any, list[FieldError]]:
    """Decode the annotation value; a syntax error is Invalid at the annotation path, in Go's words."""
    shown = _shown(text)
    if not isinstance(text, str):
        return None, [invalid(ANNOTATION_PATH, shown, "must be a string")]
    try:
        return loads(text), []
    except GoJSONError as exc:
        return None, [invalid(ANNOTATION_PATH, shown, f"error parsing data as JSON: {exc}")]


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
            sub = validate_requirements(value, FIELD_PATH, old_value)
            verdict.errors.extend(sub.errors)
            verdict.warnings.extend(sub.warnings)
    elif ANNOTATION in annotations:
        text = annotations[ANNOTATION]
        if old is not None and old_annotations.get(ANNOTATION) == text:
            pass
        elif not isinstance(text, str):
            pass  # reported with the other annotations: `metadata.annotations: ... must be of type string`
        elif not consumable:
            verdict.errors.append(forbidden(ANNOTATION_PATH, FORBIDDEN_DETAIL))
        else:
            parsed, errors = parse_annotation(text)
            verdict.errors.extend(errors)
            if not errors:
                if parsed is None:
                    verdict.errors.append(required(ANNOTATION_PATH))
                else:
                    sub = validate_requirements(parsed, ANNOTATION_PATH, flat=True, shown=_shown(text))
                    verdict.errors.extend(sub.errors)
                    verdict.warnings.extend(sub.warnings)
    else:
        return verdict
    if spec.get(NAME_FIELD) is None:
        verdict.warnings.append(warning_texts.implicit_name_only(class_name))
    return verdict


def _double_spellings(requests: Mapping[Any, Any]) -> list[str]:
    """`shares` and `<domain>/shares` both requested: the allocator decides (it knows the driver); we warn."""
    short = {k for k in requests if isinstance(k, str) and "/" not in k}
    out: list[str] = []
    for key in requests:
        if isinstance(key, str) and "/" in key:
            ident = key.rsplit("/", 1)[1]
            if ident in short:
                out.append(warning_texts.double_spelling(ident, key))
    return out


def _shown(text: Any) -> Any:
    if isinstance(text, str) and len(text) <= ANNOTATION_ECHO_LIMIT:
        return text
    return OMITTED


def _quote_key(key: Any) -> str:
    return '"' + str(key).replace("\\", "\\\\").replace('"', '\\"') + '"'
