"""ObjectMeta as `corevalidation.ValidateObjectMeta` judges it on create, all handwritten: ResourceClaims and
ResourceClaimTemplates (`NameIsDNSSubdomain`; their names have no declarative rule in 1.37) and ResourceSlices
(their type has no enforced declarative ObjectMeta rule in 1.37); `ValidateTemplateObjectMeta` (a template's
`spec.metadata`). DeviceClasses differ (a declarative name reported last, updates): meta.py.

`generateName` is judged as a name prefix (its trailing dash masked), then the name, labels, annotations,
owner references and finalizers. On create the API server has generated the name from `generateName` before
validating (the prefix cut to 58 bytes, then 5 random characters). That name's errors carry a random suffix,
so they are reported here at `metadata.generateName` with the prefix as the value (as
`meta.generate_name_errors` does; the differential puts the server's in the same terms). The namespace is the
request's (the API server sets it from the URL, or clears it for a cluster-scoped kind). Managed fields are
not judged here (the API server's field manager rebuilds them on create).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from resourceapi.machinery.field import FieldError, Path, forbidden, invalid, required
from resourceapi.machinery.gojson import marshal
from resourceapi.machinery.names import generated_name_base, is_dns1123_subdomain, is_qualified_name
from resourceapi.machinery.objects import text
from resourceapi.validation.common import type_invalid
from resourceapi.validation.meta import GENERATED_SUFFIX, METADATA, validate_annotations, validate_labels

GENERATE_NAME = str(METADATA.child("generateName"))
NameCheck = Callable[[str], list[str]]
FINALIZER_ORPHAN = "orphan"  # metav1.FinalizerOrphanDependents
FINALIZER_FOREGROUND = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
STANDARD_FINALIZERS = frozenset({"kubernetes", FINALIZER_ORPHAN, FINALIZER_FOREGROUND})
BANNED_OWNERS = frozenset({("", "v1", "Event")})  # apimachineryvalidation.BannedOwners


def object_meta_errors(
    meta: Mapping[str, Any],
    name_check: NameCheck = is_dns1123_subdomain,
    path: Path = METADATA,
    declarative_owners: bool = False,
    owners_1_36: bool = False,
) -> list[FieldError]:
    """`ValidateObjectMeta(meta, _, nameFn, path)` on create, without the namespace, for a kind whose name
    `name_check` judges (default `NameIsDNSSubdomain`): the generateName prefix, the name (generated when only
    a prefix is given), labels, annotations, owner references, finalizers."""
    errors: list[FieldError] = []
    generate_name = meta.get("generateName") or ""
    name = meta.get("name") or ""
    gen_path = path.child("generateName")
    if not isinstance(generate_name, str):
        return [type_invalid(gen_path, generate_name, "string")]
    if not isinstance(name, str):
        return [type_invalid(path.child("name"), name, "string")]
    if generate_name:
        errors.extend(
            invalid(gen_path, generate_name, m) for m in name_check(mask_trailing_dash(generate_name))
        )
    if name:
        errors.extend(invalid(path.child("name"), name, m) for m in name_check(name))
    elif generate_name:
        generated = generated_name_base(generate_name) + GENERATED_SUFFIX
        errors.extend(invalid(gen_path, generate_name, m) for m in name_check(generated))
    else:
        errors.append(required(path.child("name"), "name or generateName is required"))
    for key, check in (("labels", validate_labels), ("annotations", validate_annotations)):
        value = meta.get(key)
        if value is not None:
            errors.extend(check(value, path.child(key)))
    owners = meta.get("ownerReferences")
    if isinstance(owners, list):
        owner_path = path.child("ownerReferences")
        if owners_1_36:
            errors.extend(owner_references_errors_1_36(owners, owner_path))
        else:
            errors.extend(owner_references_errors(owners, owner_path, declarative_owners))
    finalizers = meta.get("finalizers")
    if isinstance(finalizers, list):
        names = [text(f) for f in finalizers]
        errors.extend(finalizers_errors(names, path.child("finalizers")))
        for i, finalizer in enumerate(names):  # corevalidation's own check, after the generic ones
            if "/" not in finalizer and finalizer not in STANDARD_FINALIZERS:
                errors.append(
                    invalid(
                        path.child("finalizers").index(i),
                        finalizer,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    )
                )
    return errors


def mask_trailing_dash(name: str) -> str:
    """`maskTrailingDash`: a prefix may end in `-` (its last two bytes become `a`)."""
    raw = name.encode("utf-8", "surrogatepass")
    if len(raw) > 1 and raw.endswith(b"-"):
        return (raw[:-2] + b"a").decode("utf-8", errors="replace")
    return name


def _group_version(api_version: str) -> tuple[str, str] | None:
    """`schema.ParseGroupVersion`: (group, version), or None for more than one slash."""
    if not api_version or api_version == "/":
        return "", ""
    if api_version.count("/") == 0:
        return "", api_version
    if api_version.count("/") == 1:
        group, version = api_version.split("/")
        return group, version
    return None


def _owner_json(ref: Mapping[str, Any]) -> dict[str, Any]:
    """A metav1.OwnerReference as json.Marshal writes it."""
    out: dict[str, Any] = {
        "apiVersion": text(ref.get("apiVersion")),
        "kind": text(ref.get("kind")),
        "name": text(ref.get("name")),
        "uid": text(ref.get("uid")),
    }
    for key in ("controller", "blockOwnerDeletion"):
        if isinstance(ref.get(key), bool):
            out[key] = ref[key]
    return out


def owner_references_declarative(meta: Mapping[str, Any], path: Path = METADATA) -> list[FieldError]:
    """1.38's declarative `Required value` of each empty owner-reference field (apiVersion, kind, name,
    uid), reported with the declarative errors after every handwritten one (`Validation.declarative_owner_
    references`)."""
    owners = meta.get("ownerReferences")
    if not isinstance(owners, list):
        return []
    errors: list[FieldError] = []
    refs: list[Mapping[str, Any]] = []
    for owner in owners:
        ref = owner if isinstance(owner, Mapping) else {}
        if all(_owner_json(r) != _owner_json(ref) for r in refs):
            refs.append(ref)
    for i, ref in enumerate(refs):
        for key in ("apiVersion", "kind", "name", "uid"):
            if not text(ref.get(key)):
                errors.append(required(path.child("ownerReferences").index(i).child(key)))
    return errors


def owner_references_errors(owners: list[Any], path: Path, declarative: bool = False) -> list[FieldError]:
    """`ValidateOwnerReferences` after the create handler's `dedupOwnerReferences`: each reference's four
    fields and its owner kind (not an Event), and one controller at most (its declarative twins are Alpha:
    these are the errors reported)."""
    errors: list[FieldError] = []
    first_controller = ""
    refs: list[Mapping[str, Any]] = []
    for owner in owners:  # the create handler drops a reference equal to an earlier one first
        ref = owner if isinstance(owner, Mapping) else {}
        if all(_owner_json(r) != _owner_json(ref) for r in refs):
            refs.append(ref)
    for i, ref in enumerate(refs):
        ref_path = path.index(i)
        api_version = text(ref.get("apiVersion"))
        gv = _group_version(api_version)
        if not api_version:
            if not declarative:  # 1.38: the declarative twin reports it, after the handwritten errors
                errors.append(required(ref_path.child("apiVersion"), "must not be empty"))
        elif gv is None or not gv[1]:
            errors.append(
                invalid(ref_path.child("apiVersion"), api_version, "must be <group>/<version> or <version>")
            )
        for key in ("kind", "name", "uid"):
            if not text(ref.get(key)) and not declarative:
                errors.append(required(ref_path.child(key), "must not be empty"))
        group, version = gv if gv is not None else ("", "")
        kind = text(ref.get("kind"))
        if (group, version, kind) in BANNED_OWNERS:
            errors.append(
                invalid(
                    ref_path,
                    marshal(_owner_json(ref)),
                    f"{group}/{version}, Kind={kind} is disallowed from being an owner",
                )
            )
        if ref.get("controller") is True:
            current = f"{kind}/{text(ref.get('name'))}"
            if first_controller:
                errors.append(
                    invalid(
                        path,
                        marshal([_owner_json(r) for r in refs]),
                        'Only one reference can have Controller set to true. Found "true" in references for '
                        f"{first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return errors


def owner_references_errors_1_36(owners: list[Any], path: Path) -> list[FieldError]:
    """`ValidateOwnerReferences` of apimachinery v0.36.3 (`Validation.declarative_texts` off): every
    reference's errors at the list's own path (no index), each an `Invalid value`, the version judged by
    `schema.FromAPIVersionAndKind` (`version must not be empty`); then the banned kinds and one controller,
    as in 1.37. References are deduplicated first, as the create handler does."""
    errors: list[FieldError] = []
    first_controller = ""
    refs: list[Mapping[str, Any]] = []
    for owner in owners:
        ref = owner if isinstance(owner, Mapping) else {}
        if all(_owner_json(r) != _owner_json(ref) for r in refs):
            refs.append(ref)
    for ref in refs:
        api_version = text(ref.get("apiVersion"))
        gv = _group_version(api_version) or ("", "")
        if not gv[1]:
            errors.append(invalid(path.child("apiVersion"), api_version, "version must not be empty"))
        for key in ("kind", "name", "uid"):
            if not text(ref.get(key)):
                errors.append(invalid(path.child(key), text(ref.get(key)), "must not be empty"))
        kind = text(ref.get("kind"))
        if (gv[0], gv[1], kind) in BANNED_OWNERS:
            message = f"{gv[0]}/{gv[1]}, Kind={kind} is disallowed from being an owner"
            errors.append(invalid(path, marshal(_owner_json(ref)), message))
        if ref.get("controller") is True:
            current = f"{kind}/{text(ref.get('name'))}"
            if first_controller:
                errors.append(
                    invalid(
                        path,
                        marshal([_owner_json(r) for r in refs]),
                        'Only one reference can have Controller set to true. Found "true" in references for '
                        f"{first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return errors


def finalizers_errors(finalizers: list[str], path: Path) -> list[FieldError]:
    """`ValidateFinalizers`: each a qualified name (reported at the list), and not both `orphan` and
    `foregroundDeletion`."""
    errors = [invalid(path, f, msg) for f in finalizers for msg in is_qualified_name(f)]
    if FINALIZER_ORPHAN in finalizers and FINALIZER_FOREGROUND in finalizers:
        errors.append(
            invalid(
                path,
                marshal(finalizers),
                f"finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set",
            )
        )
    return errors


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
