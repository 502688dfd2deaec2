"""Field rules that claims, claim status and slices share (pkg/apis/resource/validation/validation.go, and the
1.37 declarative formats of k8s.io/apimachinery/pkg/api/validate): pool names, UIDs, device and driver names,
label keys and values, device tolerations and taints, binding conditions.

Most come in two halves, as kube-apiserver 1.37 runs them: `*_errors` is the handwritten rule minus the parts
a Beta declarative rule supersedes, and `*_declarative` is that declarative rule, which the caller reports in
its declarative pass, after every handwritten error (docs/validation.md). A rule with no enforced declarative
twin stays whole in the handwritten half.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from resourceapi.api.limits import (
    BINDING_CONDITIONS_MAX_SIZE,
    BINDING_FAILURE_CONDITIONS_MAX_SIZE,
    POOL_NAME_MAX_LENGTH,
)
from resourceapi.machinery.field import (
    FieldError,
    Path,
    duplicate,
    go_quote,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from resourceapi.machinery.gojson import NULL
from resourceapi.machinery.names import (
    go_len,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_dns1123_subdomain_content,
    is_qualified_name,
    validate_driver_name,
    validate_opaque_driver_name,
)
from resourceapi.machinery.objects import strings, text_at
from resourceapi.validation.common import relocated
from resourceapi.validation.lists import duplicates
from resourceapi.validation.meta import is_label_value

DEVICE_TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
DEVICE_TOLERATION_OPERATORS = ("Equal", "Exists")
UUID_MESSAGE = "must be a lowercase UUID in 8-4-4-4-12 format"
_RFC4122_MESSAGE = (
    "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase "
    "hexadecimal characters"
)
_HEX = frozenset("0123456789abcdefABCDEF")
_PLACEHOLDER = Path("-")


# --- names -----------------------------------------------------------------------------------------------


def pool_name_errors(name: str, path: Path) -> list[FieldError]:
    """`validatePoolName` (handwritten): Required when empty; else Too long over 253 bytes, then every
    `/`-separated part as a DNS subdomain (`IsDNS1123Subdomain`, whose empty-part text is its own)."""
    if not name:
        return [required(path)]
    errors: list[FieldError] = []
    if go_len(name) > POOL_NAME_MAX_LENGTH:
        errors.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        errors.extend(invalid(path, part, msg) for msg in is_dns1123_subdomain(part))
    return errors


def pool_name_declarative(name: str, path: Path) -> list[FieldError]:
    """`validate.RequiredValue` + `validate.ResourcePoolName` (format `k8s-resource-pool-name`): Too long over
    253, then per segment `segment i: must not be empty` or the LongName messages prefixed `segment i: `."""
    if not name:
        return [required(path)]
    errors: list[FieldError] = []
    if go_len(name) > POOL_NAME_MAX_LENGTH:
        errors.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for i, part in enumerate(name.split("/")):
        if not part:
            errors.append(invalid(path, name, f"segment {i}: must not be empty"))
            continue
        errors.extend(
            invalid(path, part, f"segment {i}: {msg}") for msg in is_dns1123_subdomain_content(part)
        )
    return errors


def device_name_errors(name: str, path: Path) -> list[FieldError]:
    """`corevalidation.ValidateDNS1123Label` (device, request, subrequest and counter names): one Invalid per
    label message, an empty name included (no Required of its own: measured on kube-apiserver 1.37.2)."""
    return [invalid(path, name, msg) for msg in is_dns1123_label(name)]


def driver_name_errors(name: str, path: Path) -> list[FieldError]:
    """`ValidateCSIDriverName` with nothing covered: Required, Too long (63 bytes), the subdomain rules on the
    lowercased name."""
    return validate_driver_name(name, path)


@functools.lru_cache(maxsize=4096)
def _driver_declarative(name: str) -> tuple[FieldError, ...]:
    return tuple(validate_opaque_driver_name(name, _PLACEHOLDER))


def driver_name_declarative(name: str, path: Path) -> list[FieldError]:
    """A driver under 1.37's declarative rules (RequiredValue, LongNameCaseless, MaxLength 63), where the
    handwritten `ValidateCSIDriverName` is fully covered (claim config, allocation results, slices)."""
    return relocated(_driver_declarative(name), path)


def uid_errors(uid: str, path: Path) -> list[FieldError]:
    """`validateUID` (handwritten): github.com/google/uuid's `Validate`, then the normalized lowercase
    form."""
    problem = _uuid_validate(uid)
    if problem is not None:
        return [invalid(path, uid, f"error validating uid: {problem}")]
    if len(uid) != 36 or uid != uid.lower():
        return [invalid(path, uid, _RFC4122_MESSAGE)]
    return []


def uid_declarative(uid: str, path: Path) -> list[FieldError]:
    """`validate.UUID` (format `k8s-uuid`): 36 characters, dashes at 8, 13, 18, 23, lowercase hex
    elsewhere."""
    if len(uid) != 36 or any(
        (c != "-") if i in (8, 13, 18, 23) else (c not in "0123456789abcdef") for i, c in enumerate(uid)
    ):
        return [invalid(path, uid, UUID_MESSAGE)]
    return []


def _uuid_validate(s: str) -> str | None:
    """github.com/google/uuid v1.6.0 `Validate`: the error text, or None. Go measures bytes."""
    raw = s.encode("utf-8", errors="surrogatepass")
    n = len(raw)
    if n == 36 + 9:
        if raw[:9].lower() != b"urn:uuid:":
            return f"invalid urn prefix: {_go_quote_bytes(raw[:9])}"
        raw = raw[9:]
    elif n == 36 + 2:
        if raw[:1] != b"{" or raw[-1:] != b"}":
            return "invalid bracketed UUID format"
        raw = raw[1:-1]
    elif n == 32:
        if not all(chr(b) in _HEX for b in raw):
            return "invalid UUID format"
    elif n != 36:
        return f"invalid UUID length: {n}"
    if len(raw) == 36:
        if any(raw[i : i + 1] != b"-" for i in (8, 13, 18, 23)):
            return "invalid UUID format"
        for x in (0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34):
            if chr(raw[x]) not in _HEX or chr(raw[x + 1]) not in _HEX:
                return "invalid UUID format"
    return None


def _go_quote_bytes(raw: bytes) -> str:
    return go_quote(raw.decode("utf-8", errors="replace"))


# --- labels ----------------------------------------------------------------------------------------------


def label_name_errors(name: str, path: Path) -> list[FieldError]:
    """`metav1validation.ValidateLabelName` (format `k8s-label-key`): the qualified-name messages."""
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def label_value_errors(value: str, path: Path) -> list[FieldError]:
    """`validateLabelValue`: the label-value messages (at most 63 bytes, label-shaped or empty)."""
    return [invalid(path, value, msg) for msg in is_label_value(value)]


# --- tolerations and taints ------------------------------------------------------------------------------


def toleration_errors(toleration: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`validateDeviceToleration`'s handwritten half: the value for the operator (`Exists`: empty; `Equal`: a
    label value). The key's format, the operator's Required / Unsupported and the effect's Unsupported are
    Beta declarative rules (`toleration_declarative`). The operator defaults to `Equal` (v1 defaults)."""
    operator = text_at(toleration, "operator") or "Equal"
    value = text_at(toleration, "value")
    if operator == "Exists" and value:
        return [invalid(path.child("value"), value, "must be empty for operator `Exists`")]
    if operator == "Equal":
        return label_value_errors(value, path.child("value"))
    return []


def toleration_errors_1_36(toleration: Mapping[str, Any], path: Path) -> list[FieldError]:
    """v1.36.3's `validateDeviceToleration`, nothing declarative enforced: the key (a label name, when set),
    the operator's value rule or its Required / Unsupported, then the effect's Unsupported."""
    errors: list[FieldError] = []
    key = text_at(toleration, "key")
    if key:
        errors.extend(label_name_errors(key, path.child("key")))
    operator = text_at(toleration, "operator")
    value = text_at(toleration, "value")
    if operator == "Exists":
        if value:
            errors.append(invalid(path.child("value"), value, "must be empty for operator `Exists`"))
    elif operator == "Equal":
        errors.extend(label_value_errors(value, path.child("value")))
    elif not operator:
        errors.append(required(path.child("operator")))
    else:
        errors.append(not_supported(path.child("operator"), operator, DEVICE_TOLERATION_OPERATORS))
    effect = text_at(toleration, "effect")
    if effect and effect not in DEVICE_TAINT_EFFECTS:
        errors.append(not_supported(path.child("effect"), effect, DEVICE_TAINT_EFFECTS))
    return errors


def toleration_declarative(toleration: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`Validate_DeviceToleration` (zz_generated, Beta): key LabelKey when set, operator Required then enum
    (after defaulting, empty cannot happen in v1), effect enum when set."""
    errors: list[FieldError] = []
    key = text_at(toleration, "key")
    if key:
        errors.extend(label_name_errors(key, path.child("key")))
    operator = text_at(toleration, "operator") or "Equal"
    if operator not in DEVICE_TOLERATION_OPERATORS:
        errors.append(not_supported(path.child("operator"), operator, DEVICE_TOLERATION_OPERATORS))
    effect = text_at(toleration, "effect")
    if effect and effect not in DEVICE_TAINT_EFFECTS:
        errors.append(not_supported(path.child("effect"), effect, DEVICE_TAINT_EFFECTS))
    return errors


def taint_errors(taint: Mapping[str, Any], path: Path, effect: bool = False) -> list[FieldError]:
    """`validateDeviceTaint`'s handwritten half on create: the key (`ValidateLabelName`, so an empty key is
    the qualified-name messages), the value when set. The effect's Required / Unsupported are Beta
    declarative rules (`taint_declarative`); `effect` (1.36, nothing declarative enforced): reported here."""
    errors = label_name_errors(text_at(taint, "key"), path.child("key"))
    value = text_at(taint, "value")
    if value:
        errors.extend(label_value_errors(value, path.child("value")))
    return errors + (taint_declarative(taint, path) if effect else [])


def taint_declarative(taint: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`Validate_DeviceTaint` (zz_generated, Beta): effect Required, then the enum."""
    effect = text_at(taint, "effect")
    if not effect:
        return [required(path.child("effect"))]
    if effect not in DEVICE_TAINT_EFFECTS:
        return [not_supported(path.child("effect"), effect, DEVICE_TAINT_EFFECTS)]
    return []


# --- binding conditions ----------------------------------------------------------------------------------


def binding_parameter_errors(
    conditions: Any, failure_conditions: Any, path: Path, sizes: bool = False
) -> list[FieldError]:
    """`validateDeviceBindingParameters`'s handwritten half: each condition a label name (the lists' sizes are
    Beta declarative: `binding_parameter_declarative`; an over-long list is not judged item by item), then
    duplicates, overlaps, and each list requiring the other (an absent list shows as `null`, an empty one
    `[]`). `sizes`: an over-long list is the handwritten Too many (1.36, where nothing declarative is
    enforced)."""
    conds = strings(conditions)
    failures = strings(failure_conditions)
    errors: list[FieldError] = []
    for key, items, limit in (
        ("bindingConditions", conds, BINDING_CONDITIONS_MAX_SIZE),
        ("bindingFailureConditions", failures, BINDING_FAILURE_CONDITIONS_MAX_SIZE),
    ):
        if len(items) <= limit:
            for i, item in enumerate(items):
                errors.extend(label_name_errors(item, path.child(key).index(i)))
        elif sizes:
            errors.append(too_many(path.child(key), len(items), limit))
    errors += duplicates(conds, path.child("bindingConditions"))
    seen_failures: set[str] = set()
    cond_set = set(conds)
    for i, cond in enumerate(failures):
        item_path = path.child("bindingFailureConditions").index(i)
        if cond in seen_failures:
            errors.append(duplicate(item_path, cond))
        seen_failures.add(cond)
        if cond in cond_set:
            errors.append(
                invalid(item_path, cond, "bindingFailureConditions must not overlap with bindingConditions")
            )
    if not conds and failures:
        errors.append(
            invalid(
                path.child("bindingConditions"),
                NULL if conditions is None else [],
                "bindingConditions are required to use bindingFailureConditions",
            )
        )
    if not failures and conds:
        errors.append(
            invalid(
                path.child("bindingFailureConditions"),
                NULL if failure_conditions is None else [],
                "bindingFailureConditions are required to use bindingConditions",
            )
        )
    return errors


def binding_parameter_declarative(conditions: Any, failure_conditions: Any, path: Path) -> list[FieldError]:
    """The Beta `MaxItems` rules of both lists (4 each)."""
    errors: list[FieldError] = []
    for key, items, limit in (
        ("bindingConditions", strings(conditions), BINDING_CONDITIONS_MAX_SIZE),
        ("bindingFailureConditions", strings(failure_conditions), BINDING_FAILURE_CONDITIONS_MAX_SIZE),
    ):
        if len(items) > limit:
            errors.append(too_many(path.child(key), len(items), limit))
    return errors
