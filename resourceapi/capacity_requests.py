"""KEP-6406 vocabulary: `spec.extendedResourceCapacityRequests`, its annotation carrier, and their rules.

A CapacityRequirements is `{"requests": {<qualified name>: <quantity>}}`. Keys follow the DRA qualified-name
rules (errors at `...requests[<key>]`), values must parse as quantities and be greater than zero (the KEP's
stated rules: upstream validates no CapacityRequirements at all).

The annotation `dra-capacity.io/extended-resource-capacity-requests` carries the same JSON for API servers
that predate the field, with every error at the annotation's path. The webhook (admission) and the allocator
(which honors the carrier) both parse it here, so both report the same errors.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from pydantic import ValidationError

from resourceapi.api.resource_v1 import CapacityRequirements
from resourceapi.machinery.field import FieldError, Path, invalid, required
from resourceapi.machinery.names import validate_qualified_name
from resourceapi.machinery.quantity import QuantityError, coerce_quantity
from resourceapi.machinery.rawjson import GoJSONError, loads

CAPACITY_FIELD = "extendedResourceCapacityRequests"
NAME_FIELD = "extendedResourceName"
ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
FIELD_PATH = Path("spec").child(CAPACITY_FIELD)
ANNOTATION_PATH = Path("metadata").child("annotations").key(ANNOTATION)
OMITTED = "<value omitted>"
_PLACEHOLDER = Path("-")
# Annotation values up to this many characters are echoed in errors; longer ones show "<value omitted>".
ANNOTATION_ECHO_LIMIT = 64


def validate_requirements(
    value: Any, path: Path, old: Any = None, *, flat: bool = False, shown: Any = OMITTED
) -> list[FieldError]:
    """Check the JSON of a CapacityRequirements at `path`.

    `old` is the stored value on update: an entry with the same key and value is not re-validated.
    `flat` reports every error at `path` itself (the annotation); `shown` is the bad value of shape errors.
    """
    errors: list[FieldError] = []
    if not isinstance(value, dict):
        errors.append(invalid(path, shown, "must be a valid JSON object"))
        return errors
    for key in value:
        if key != "requests":
            errors.append(invalid(path, shown, f"unknown field {_quote_key(key)}"))
    requests = value.get("requests")
    if requests is None:
        return errors
    requests_path = path if flat else path.child("requests")
    if not isinstance(requests, dict):
        errors.append(invalid(requests_path, shown, "must be a valid JSON object"))
        return errors
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
            errors.extend(dataclasses.replace(e, field=str(entry_path)) for e in key_errors)
            if value_error:
                errors.append(invalid(entry_path, *value_error))
    return errors


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
        return ("null" if raw is None else raw), str(exc)  # a null reads as the text `null` (quoted)
    if quantity.sign() <= 0:
        return str(quantity), "must be greater than zero"
    return None


def parse_annotation(text: Any) -> tuple[Any, list[FieldError]]:
    """Decode the annotation value; a syntax error is Invalid at the annotation path, in Go's words."""
    shown = shown_annotation(text)
    if not isinstance(text, str):
        return None, [invalid(ANNOTATION_PATH, shown, "must be a string")]
    try:
        return loads(text), []
    except GoJSONError as exc:
        return None, [invalid(ANNOTATION_PATH, shown, f"error parsing data as JSON: {exc}")]


def parse_carrier(text: Any) -> tuple[CapacityRequirements | None, list[FieldError]]:
    """The annotation carrier as a CapacityRequirements, or the field errors that make it unusable.

    JSON `null` is a Required error at the annotation path, as the webhook reports it."""
    parsed, errors = parse_annotation(text)
    if errors:
        return None, errors
    if parsed is None:
        return None, [required(ANNOTATION_PATH)]
    errors = validate_requirements(parsed, ANNOTATION_PATH, flat=True, shown=shown_annotation(text))
    if errors:
        return None, errors
    try:
        return CapacityRequirements.model_validate(parsed), []
    except ValidationError as exc:  # unreachable after the checks above; kept as a typed failure
        return None, [invalid(ANNOTATION_PATH, shown_annotation(text), str(exc.errors()[0]["msg"]))]


def shown_annotation(text: Any) -> Any:
    if isinstance(text, str) and len(text) <= ANNOTATION_ECHO_LIMIT:
        return text
    return OMITTED


def _quote_key(key: Any) -> str:
    return '"' + str(key).replace("\\", "\\\\").replace('"', '\\"') + '"'
