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
from resourceapi.names import generated_name_base, is_dns1123_subdomain, is_qualified_name
from resourceapi.validation.common import type_invalid
from resourceapi.validation.govalue import go_json
from resourceapi.validation.meta import GENERATED_SUFFIX, validate_annotations, validate_labels

STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")

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
    errors.extend(owner_reference_errors(meta.get("ownerReferences"), path.child("ownerReferences")))
    errors.extend(finalizer_errors(meta.get("finalizers"), path.child("finalizers")))
    return errors


def owner_reference_errors(refs: Any, path: Path) -> list[FieldError]:
    """`ValidateOwnerReferences`: each reference's apiVersion (`<group>/<version>` or `<version>`), kind, name
    and uid, no Event owner, and one controller at most; after the create handler has dropped repeated
    references (`dedupOwnerReferences`: one equal to an earlier one)."""
    errors: list[FieldError] = []
    first_controller = ""
    kept: list[dict[str, Any]] = []
    for ref in refs if isinstance(refs, list) else []:
        if _owner_json(ref) not in kept:
            kept.append(_owner_json(ref))
    refs = kept
    for i, ref in enumerate(refs):
        p = path.index(i)
        api_version = _text(ref.get("apiVersion"))
        group, version, ok = _parse_group_version(api_version)
        if not api_version:
            errors.append(required(p.child("apiVersion"), "must not be empty"))
        elif not ok or not version:
            errors.append(
                invalid(p.child("apiVersion"), api_version, "must be <group>/<version> or <version>")
            )
        for key in ("kind", "name", "uid"):
            if not _text(ref.get(key)):
                errors.append(required(p.child(key), "must not be empty"))
        kind = _text(ref.get("kind"))
        if (group, version, kind) == ("", "v1", "Event"):
            errors.append(
                invalid(p, go_json(_owner_json(ref)), "/v1, Kind=Event is disallowed from being an owner")
            )
        if ref.get("controller") is True:
            current = f"{kind}/{_text(ref.get('name'))}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{first_controller} and {current}"
                )
                errors.append(invalid(path, go_json([_owner_json(r) for r in refs]), detail))
            else:
                first_controller = current
    return errors


def _parse_group_version(text: str) -> tuple[str, str, bool]:
    """`schema.ParseGroupVersion`: (group, version, ok)."""
    if not text or text == "/":
        return "", "", True
    parts = text.split("/")
    if len(parts) == 1:
        return "", text, True
    if len(parts) == 2:
        return parts[0], parts[1], True
    return "", "", False


def _owner_json(ref: Any) -> dict[str, Any]:
    """A `metav1.OwnerReference` in Go field order, `omitempty` honored."""
    ref = ref if isinstance(ref, dict) else {}
    out: dict[str, Any] = {key: _text(ref.get(key)) for key in ("apiVersion", "kind", "name", "uid")}
    for key in ("controller", "blockOwnerDeletion"):
        if isinstance(ref.get(key), bool):
            out[key] = ref[key]
    return out


def finalizer_errors(finalizers: Any, path: Path) -> list[FieldError]:
    """`ValidateFinalizers` (each a qualified name, reported at `metadata.finalizers`; not both `orphan` and
    `foregroundDeletion`), then core's check that an unqualified one is a standard finalizer."""
    names = [_text(f) for f in finalizers] if isinstance(finalizers, list) else []
    errors: list[FieldError] = []
    for name in names:
        errors.extend(invalid(path, name, msg) for msg in is_qualified_name(name))
    if "orphan" in names and "foregroundDeletion" in names:
        errors.append(
            invalid(path, go_json(names), "finalizer orphan and foregroundDeletion cannot be both set")
        )
    for i, name in enumerate(names):
        if "/" not in name and name not in STANDARD_FINALIZERS:
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            errors.append(invalid(path.index(i), name, detail))
    return errors


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


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
