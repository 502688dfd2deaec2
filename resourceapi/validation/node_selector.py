"""`corevalidation.ValidateNodeSelector` (pkg/apis/core/validation/validation.go) over decoded JSON: a
ResourceClaim's `status.allocation.nodeSelector` and a ResourceSlice's node selectors are judged by it; and
resource validation's `validateNodeName`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from resourceapi.machinery.field import FieldError, Path, forbidden, invalid, required
from resourceapi.machinery.gojson import NULL, GoJSON, marshal
from resourceapi.machinery.names import is_dns1123_subdomain
from resourceapi.machinery.objects import mapping, strings, text_at
from resourceapi.validation.device_fields import label_name_errors
from resourceapi.validation.meta import is_label_value

_NODE_NAME_FIELD = "metadata.name"  # the one node field selector key (nodeFieldSelectorValidators)


def node_selector_errors(
    selector: Mapping[str, Any], path: Path, allow_invalid_label_value: bool = False
) -> list[FieldError]:
    """`ValidateNodeSelector`: at least one term, then each term's expressions and field selectors."""
    terms_path = path.child("nodeSelectorTerms")
    terms = selector.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return [required(terms_path, "must have at least one node selector term")]
    errors: list[FieldError] = []
    for i, term in enumerate(terms):
        errors.extend(
            node_selector_term_errors(mapping(term), allow_invalid_label_value, terms_path.index(i))
        )
    return errors


def node_selector_term_errors(
    term: Mapping[str, Any], allow_invalid_label_value: bool, path: Path
) -> list[FieldError]:
    """`ValidateNodeSelectorTerm`: matchExpressions, then matchFields."""
    errors: list[FieldError] = []
    expressions = term.get("matchExpressions")
    for j, req in enumerate(expressions if isinstance(expressions, list) else []):
        errors.extend(
            requirement_errors(
                mapping(req), allow_invalid_label_value, path.child("matchExpressions").index(j)
            )
        )
    fields = term.get("matchFields")
    for j, req in enumerate(fields if isinstance(fields, list) else []):
        errors.extend(field_requirement_errors(mapping(req), path.child("matchFields").index(j)))
    return errors


def requirement_errors(
    req: Mapping[str, Any], allow_invalid_label_value: bool, path: Path
) -> list[FieldError]:
    """`ValidateNodeSelectorRequirement`: the values the operator needs, the key as a label name, each value
    as a label value."""
    errors: list[FieldError] = []
    operator = text_at(req, "operator")
    values = strings(req.get("values"))
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
    errors.extend(label_name_errors(text_at(req, "key"), path.child("key")))
    if not allow_invalid_label_value:
        for i, value in enumerate(values):
            errors.extend(invalid(path.child("values").index(i), value, msg) for msg in is_label_value(value))
    return errors


def field_requirement_errors(req: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`ValidateNodeFieldSelectorRequirement`: `In`/`NotIn` with one value, key `metadata.name`, each value a
    node name (a DNS subdomain)."""
    errors: list[FieldError] = []
    operator = text_at(req, "operator")
    values = strings(req.get("values"))
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
    key = text_at(req, "key")
    if key != _NODE_NAME_FIELD:
        errors.append(invalid(path.child("key"), key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errors.extend(
                invalid(path.child("values").index(i), value, msg) for msg in is_dns1123_subdomain(value)
            )
    return errors


def node_name_errors(name: str, path: Path) -> list[FieldError]:
    """`validateNodeName` (resource validation): `ValidateNodeName`, a DNS subdomain, each message
    Invalid."""
    return [invalid(path, name, msg) for msg in is_dns1123_subdomain(name)]


def terms_value(selector: Mapping[str, Any]) -> GoJSON:
    """The internal `[]core.NodeSelectorTerm` as a bad value (no json tags: Go field names, nil as null)."""
    terms = selector.get("nodeSelectorTerms")
    if not isinstance(terms, list):
        return NULL
    return marshal([_term_json(mapping(t)) for t in terms])


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
        req = mapping(raw)
        values = req.get("values")
        out.append(
            {
                "Key": text_at(req, "key"),
                "Operator": text_at(req, "operator"),
                "Values": [v if isinstance(v, str) else "" for v in values]
                if isinstance(values, list)
                else None,
            }
        )
    return out
