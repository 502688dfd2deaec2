"""`corevalidation.ValidateObjectMeta` with `NameIsDNSSubdomain`, the handwritten form kube-apiserver 1.37
runs on ResourceClaims and ResourceClaimTemplates (their names have no declarative rule), and
`ValidateTemplateObjectMeta` (a template's `spec.metadata`).

On create the API server has generated the name from `generateName` before validating: the prefix is judged
(its trailing dash masked) at `metadata.generateName`, then the generated name (the prefix cut to 58 bytes,
then 5 random characters). That name's errors carry a random suffix, so they are reported here at
`metadata.generateName` with the prefix as the value (as `meta.generate_name_errors` does; the differential
puts the server's in the same terms). The namespace is the request's: the API server sets it from the URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from resourceapi.field import FieldError, Path, forbidden, invalid, required
from resourceapi.names import generated_name_base, is_dns1123_subdomain
from resourceapi.validation.common import type_invalid
from resourceapi.validation.meta import GENERATED_SUFFIX, validate_annotations, validate_labels

# ObjectMeta's fields in Go order, as `validateFieldAllowList` visits them (Annotations, Labels allowed).
_TEMPLATE_FORBIDDEN = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def _mask_trailing_dash(name: str) -> str:
    """`maskTrailingDash`: a prefix ending in `-` loses its last two bytes and gains an `a`."""
    raw = name.encode("utf-8")
    if len(raw) > 1 and raw.endswith(b"-"):
        return (raw[:-2] + b"a").decode("utf-8", errors="replace")
    return name


def subdomain_name_errors(meta: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`ValidateObjectMeta(meta, _, NameIsDNSSubdomain, path)` on create, without the namespace: the
    generateName prefix, the name (generated when only a prefix is given), labels, annotations."""
    errors: list[FieldError] = []
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if not isinstance(generate_name, str):
        return [type_invalid(path.child("generateName"), generate_name, "string")]
    if not isinstance(name, str):
        return [type_invalid(path.child("name"), name, "string")]
    gen_path = path.child("generateName")
    if generate_name:
        errors.extend(
            invalid(gen_path, generate_name, msg)
            for msg in is_dns1123_subdomain(_mask_trailing_dash(generate_name))
        )
    if name:
        errors.extend(invalid(path.child("name"), name, msg) for msg in is_dns1123_subdomain(name))
    elif generate_name:
        generated = generated_name_base(generate_name) + GENERATED_SUFFIX
        errors.extend(invalid(gen_path, generate_name, msg) for msg in is_dns1123_subdomain(generated))
    else:
        errors.append(required(path.child("name"), "name or generateName is required"))
    for key, check in (("labels", validate_labels), ("annotations", validate_annotations)):
        value = meta.get(key)
        if value is not None:
            errors.extend(check(value, path.child(key)))
    return errors


def template_meta_errors(meta: Any, path: Path) -> list[FieldError]:
    """`ValidateTemplateObjectMeta`: annotations, labels, then every other ObjectMeta field that is set is
    Forbidden (`cannot be set`)."""
    if meta is None:
        return []
    if not isinstance(meta, dict):
        return [type_invalid(path, meta, "object")]
    errors: list[FieldError] = []
    annotations = meta.get("annotations")
    if annotations is not None:
        errors.extend(validate_annotations(annotations, path.child("annotations")))
    labels = meta.get("labels")
    if labels is not None:
        errors.extend(validate_labels(labels, path.child("labels")))
    for key in _TEMPLATE_FORBIDDEN:
        value = meta.get(key)
        if value is None or value == "" or (value == 0 and not isinstance(value, bool)):
            continue
        errors.append(forbidden(path.child(key), "cannot be set"))
    return errors
