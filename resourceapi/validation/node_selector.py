"""Node selection as pkg/apis/core/validation judges it: `ValidateNodeSelector` (its terms' label and field
requirements) and `ValidateNodeName`, over decoded JSON. ResourceSlices use both, for the slice and, with
`perDeviceNodeSelection`, for each device.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from resourceapi.field import FieldError, Path, forbidden, invalid, required
from resourceapi.names import is_dns1123_subdomain, is_qualified_name
from resourceapi.validation.gojson import NULL, GoJSON, marshal
from resourceapi.validation.meta import is_label_value

OBJECT_NAME_FIELD = "metadata.name"  # metav1.ObjectNameField, the one node field a selector may name


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def node_name_errors(name: str, path: Path) -> list[FieldError]:
    """`validateNodeName` (resource validation): `ValidateNodeName`, a DNS subdomain, each message
    Invalid."""
    return [invalid(path, name, msg) for msg in is_dns1123_subdomain(name)]


def node_selector_errors(selector: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`ValidateNodeSelector(selector, false, path)`: at least one term, then each term's requirements."""
    terms_path = path.child("nodeSelectorTerms")
    terms = _list(selector.get("nodeSelectorTerms"))
    if not terms:
        return [required(terms_path, "must have at least one node selector term")]
    errors: list[FieldError] = []
    for i, raw in enumerate(terms):
        term = _obj(raw)
        term_path = terms_path.index(i)
        for j, req in enumerate(_list(term.get("matchExpressions"))):
            errors.extend(_requirement_errors(_obj(req), term_path.child("matchExpressions").index(j)))
        for j, req in enumerate(_list(term.get("matchFields"))):
            errors.extend(_field_requirement_errors(_obj(req), term_path.child("matchFields").index(j)))
    return errors


def _requirement_errors(req: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`ValidateNodeSelectorRequirement` (label values checked: allowInvalidLabelValue is false)."""
    errors: list[FieldError] = []
    operator = _text(req.get("operator"))
    values = _list(req.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errors.append(
                required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(
                forbidden(
                    path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errors.append(
                required(
                    path.child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"
                )
            )
    else:
        errors.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    key = _text(req.get("key"))
    errors.extend(invalid(path.child("key"), key, msg) for msg in is_qualified_name(key))
    for i, raw in enumerate(values):
        value = _text(raw)
        errors.extend(invalid(path.child("values").index(i), value, msg) for msg in is_label_value(value))
    return errors


def _field_requirement_errors(req: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`ValidateNodeFieldSelectorRequirement`: `In`/`NotIn` with one value, on `metadata.name` only."""
    errors: list[FieldError] = []
    operator = _text(req.get("operator"))
    values = _list(req.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errors.append(
                required(
                    path.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        errors.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    key = _text(req.get("key"))
    if key != OBJECT_NAME_FIELD:
        errors.append(invalid(path.child("key"), key, "not a valid field selector key"))
    else:
        for i, raw in enumerate(values):
            value = _text(raw)
            errors.extend(
                invalid(path.child("values").index(i), value, m) for m in is_dns1123_subdomain(value)
            )
    return errors


def terms_value(selector: Mapping[str, Any]) -> GoJSON:
    """The internal `[]core.NodeSelectorTerm` as a bad value (no json tags: Go field names, nil as null)."""
    terms = selector.get("nodeSelectorTerms")
    if not isinstance(terms, list):
        return NULL
    return marshal([_term_json(_obj(t)) for t in terms])


def _term_json(term: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "MatchExpressions": _requirements_json(term.get("matchExpressions")),
        "MatchFields": _requirements_json(term.get("matchFields")),
    }


def _requirements_json(value: Any) -> list[dict[str, Any]] | None:
    if not isinstance(value, list):
        return None
    out = []
    for raw in value:
        req = _obj(raw)
        values = req.get("values")
        out.append(
            {
                "Key": _text(req.get("key")),
                "Operator": _text(req.get("operator")),
                "Values": [_text(v) for v in values] if isinstance(values, list) else None,
            }
        )
    return out
