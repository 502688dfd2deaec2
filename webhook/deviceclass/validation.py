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

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from resourceapi.capacity_requests import OMITTED
from resourceapi.cel import CompileResult, compile_selector
from resourceapi.field import (
    ErrorType,
    FieldError,
    Path,
    forbidden,
    internal,
    invalid,
    required,
    too_long,
    too_many,
)
from resourceapi.gates import FeatureGates
from resourceapi.jsontypes import json_type
from resourceapi.limits import (
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    DEVICE_CONFIG_MAX_SIZE,
    DEVICE_SELECTORS_MAX_SIZE,
    OPAQUE_PARAMETERS_MAX_LENGTH,
    TOTAL_ANNOTATION_SIZE_LIMIT_BYTES,
)
from resourceapi.names import (
    GENERATED_NAME_SUFFIX_LENGTH,
    extended_resource_name_messages,
    generated_name_base,
    is_qualified_name,
    max_len_bytes_error,
    regex_error,
    validate_object_name,
    validate_opaque_driver_name,
)
from resourceapi.objects import display_name, mapping
from resourceapi.rawjson import GoJSONError, compact_bytes, loads
from webhook.deviceclass.capacity_requests import check_capacity_requests

# Compiles a selector expression for the served gates: `compile_selector`, or a `CelCache.compile`.
Compiler = Callable[[str, FeatureGates], CompileResult]

LABEL_VALUE_MAX_LENGTH = 63
LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
LABEL_VALUE_ERR_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
# Any 5 of the name generator's random characters (lower-case consonants and digits) judge the same as these.
GENERATED_SUFFIX = "x" * GENERATED_NAME_SUFFIX_LENGTH

METADATA = Path("metadata")
_PLACEHOLDER = Path("-")
SPEC = Path("spec")
_NAME = METADATA.child("name")
_META_PATHS = {key: METADATA.child(key) for key in ("labels", "annotations")}
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
        errors.append(_type_invalid(METADATA, meta_raw, "object"))
    meta = mapping(meta_raw)
    old_meta = mapping(old.get("metadata")) if old is not None else None
    handwritten, declarative = metadata_errors(meta, old_meta)
    errors.extend(handwritten)

    spec_raw = obj.get("spec")
    if spec_raw is not None and not isinstance(spec_raw, dict):
        errors.append(_type_invalid(SPEC, spec_raw, "object"))
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
        spec, old_spec, "config", DEVICE_CONFIG_MAX_SIZE, validate_config
    )
    errors.extend(selector_items)
    errors.extend(config_items)
    # Then the rules 1.37 validates declaratively, which kube-apiserver appends after the handwritten ones.
    errors.extend(declarative)
    errors.extend(selector_count)
    errors.extend(config_count)
    if not config_count:
        errors.extend(
            _validate_list(spec, old_spec, "config", DEVICE_CONFIG_MAX_SIZE, config_driver_errors)[0]
        )
    name_value = spec.get("extendedResourceName")
    if name_value is not None and (old_spec is None or old_spec.get("extendedResourceName") != name_value):
        errors.extend(validate_extended_resource_name(name_value, SPEC.child("extendedResourceName")))

    result.native = list(errors)
    verdict = check_capacity_requests(obj, old, gates, display_name(obj))
    errors.extend(verdict.errors)
    result.warnings.extend(verdict.warnings)
    return result


def validate_metadata(meta: Mapping[str, Any], old_meta: Mapping[str, Any] | None) -> list[FieldError]:
    """ObjectMeta as the API server treats a cluster-scoped class: name (`validate.LongName`), labels,
    annotations, immutable name. A namespace is cleared before validation (and before webhooks), so it is
    no error; on create, a `generateName` without a name is judged as the name it will generate."""
    handwritten, declarative = metadata_errors(meta, old_meta)
    return handwritten + declarative


def metadata_errors(
    meta: Mapping[str, Any], old_meta: Mapping[str, Any] | None
) -> tuple[list[FieldError], list[FieldError]]:
    """`validate_metadata` in the two groups kube-apiserver 1.37 reports apart: the handwritten rules (a
    missing name, labels, annotations, the immutable name), reported first, and the name's format, which 1.37
    validates declaratively and reports after the spec's handwritten rules (measured: tests/differential)."""
    errors: list[FieldError] = []
    declarative: list[FieldError] = []
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    old_name = (old_meta.get("name") or "") if old_meta is not None else None
    if not isinstance(name, str):
        errors.append(_type_invalid(_NAME, name, "string"))
    elif not name:
        if old_meta is None and generate_name:
            declarative.extend(generate_name_errors(generate_name))
        else:
            errors.append(required(_NAME, "name or generateName is required"))
    elif old_name is None or name != old_name:
        declarative.extend(relocated(_object_name_errors(name), _NAME))
    namespace = meta.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        errors.append(_type_invalid(METADATA.child("namespace"), namespace, "string"))
    for key, check in (("labels", validate_labels), ("annotations", validate_annotations)):
        value = meta.get(key)
        if value is not None and (old_meta is None or old_meta.get(key) != value):
            errors.extend(check(value, _META_PATHS[key]))
    if old_name is not None and name != old_name:
        errors.append(invalid(_NAME, name, "field is immutable"))
    return errors, declarative


def generate_name_errors(generate_name: Any) -> list[FieldError]:
    """The name the API server would generate (`SimpleNameGenerator`: the prefix cut to 58 bytes, then 5
    random lower-case alphanumerics), judged by `validate.LongName` and reported at `metadata.generateName`.

    Only `dra-capacity validate` needs this: the API server generates the name before validating webhooks run.
    """
    path = METADATA.child("generateName")
    if not isinstance(generate_name, str):
        return [_type_invalid(path, generate_name, "string")]
    base = generated_name_base(generate_name)
    return [_rebadge(e, generate_name) for e in validate_object_name(base + GENERATED_SUFFIX, path)]


def validate_labels(labels: Any, path: Path) -> list[FieldError]:
    """`ValidateLabels`: qualified-name keys and label values, reported at `metadata.labels` (keys sorted)."""
    if not isinstance(labels, dict):
        return [_type_invalid(path, labels, "object")]
    errors: list[FieldError] = []
    for key in sorted(labels, key=str):
        value = labels[key]
        errors.extend(invalid(path, key, msg) for msg in _qualified_name_messages(str(key)))
        if not isinstance(value, str):
            errors.append(_type_invalid(path, value, "string"))
        else:
            errors.extend(invalid(path, value, msg) for msg in is_label_value(value))
    return errors


@functools.lru_cache(maxsize=4096)
def _qualified_name_messages(key: str) -> tuple[str, ...]:
    """`is_qualified_name`, memoized: label and annotation keys repeat across requests."""
    return tuple(is_qualified_name(key))


@functools.lru_cache(maxsize=4096)
def is_label_value(value: str) -> tuple[str, ...]:
    """`validation.IsValidLabelValue` (`content.IsLabelValue`): at most 63 bytes, empty or label-shaped."""
    errs: list[str] = []
    if len(value.encode("utf-8")) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_bytes_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(LABEL_VALUE_ERR_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


def validate_annotations(annotations: Any, path: Path) -> list[FieldError]:
    """`ValidateAnnotations`: keys are qualified names once lowercased; keys + values at most 256 KiB.
    A value that is not a string (hand-written files only) is `must be of type string`."""
    if not isinstance(annotations, dict):
        return [_type_invalid(path, annotations, "object")]
    errors: list[FieldError] = []
    total = 0
    for key in sorted(annotations, key=str):
        value = annotations[key]
        errors.extend(invalid(path, key, msg) for msg in _qualified_name_messages(str(key).lower()))
        if isinstance(value, str):
            total += len(value.encode("utf-8"))
        else:
            errors.append(_type_invalid(path, value, "string"))
        total += len(str(key).encode("utf-8"))
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES:
        errors.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES))
    return errors


def validate_selector(
    item: Any, path: Path, gates: FeatureGates, compiler: Compiler | None = None
) -> list[FieldError]:
    """`validateSelector`: `cel` required; the expression checked for length, then compiled (type, cost)."""
    if not isinstance(item, dict):
        return [_type_invalid(path, item, "object")]
    cel = item.get("cel")
    if cel is None:
        return [required(path.child("cel"))]
    if not isinstance(cel, dict):
        return [_type_invalid(path.child("cel"), cel, "object")]
    expression = cel.get("expression", "")
    if expression is None:
        expression = ""
    if not isinstance(expression, str):
        return [_type_invalid(path.child("cel", "expression"), expression, "string")]
    # A character is at most 4 UTF-8 bytes: short expressions need no encoding to be measured.
    if (
        len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH // 4
        and len(expression.encode("utf-8")) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH
    ):
        return [too_long(path.child("cel", "expression"), CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    issues = (compiler or compile_selector)(expression, gates).issues
    if not issues:
        return []
    return compile_errors(expression, path.child("cel", "expression"), gates, compiler)


def compile_errors(
    expression: str, path: Path, gates: FeatureGates, compiler: Compiler | None = None
) -> list[FieldError]:
    """Compile (NewExpressions) and map CEL issues as `convertCELErrorToValidationError` does."""
    out: list[FieldError] = []
    for issue in (compiler or compile_selector)(expression, gates).issues:
        kind = issue.kind
        if kind == "invalid":
            out.append(invalid(path, expression, issue.detail))
        elif kind == "forbidden":
            out.append(forbidden(path, issue.detail))
        elif kind == "required":
            out.append(required(path, issue.detail))
        else:
            out.append(internal(path, issue.detail))
    return out


def validate_config(item: Any, path: Path) -> list[FieldError]:
    """`validateDeviceConfiguration`'s handwritten rules: `opaque` required, then the parameters. The
    driver is 1.37's declarative rule, reported later (`config_driver_errors`)."""
    if not isinstance(item, dict):
        return [_type_invalid(path, item, "object")]
    opaque = item.get("opaque")
    if opaque is None:
        return [required(path.child("opaque"))]
    if not isinstance(opaque, dict):
        return [_type_invalid(path.child("opaque"), opaque, "object")]
    parameters = opaque.get("parameters")
    if not _small_object(parameters):
        return validate_parameters(parameters, path.child("opaque", "parameters"))
    return []


def config_driver_errors(item: Any, path: Path) -> list[FieldError]:
    """An opaque configuration's `driver` (declarative in 1.37: Required, the case-insensitive subdomain
    format, at most 63 characters); nothing when the entry has no `opaque` object."""
    opaque = item.get("opaque") if isinstance(item, dict) else None
    if not isinstance(opaque, dict):
        return []
    driver = opaque.get("driver") or ""
    if not isinstance(driver, str):
        return [_type_invalid(path.child("opaque", "driver"), driver, "string")]
    return relocated(driver_errors(driver), path.child("opaque", "driver"))


@functools.lru_cache(maxsize=4096)
def _object_name_errors(name: str) -> tuple[FieldError, ...]:
    return tuple(validate_object_name(name, _PLACEHOLDER))


@functools.lru_cache(maxsize=4096)
def driver_errors(driver: str) -> tuple[FieldError, ...]:
    """`validate_opaque_driver_name` at a placeholder path, memoized: classes repeat the same few drivers."""
    return tuple(validate_opaque_driver_name(driver, _PLACEHOLDER))


def relocated(errors: tuple[FieldError, ...], path: Path) -> list[FieldError]:
    """Memoized errors moved to their real path."""
    return [dataclasses.replace(e, field=str(path)) for e in errors] if errors else []


def _small_object(value: Any) -> bool:
    """A parameters object that is certainly valid: a dict whose compact JSON is under the size limit."""
    if not isinstance(value, dict):
        return False
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return False
    # One character re-encodes to at most 6 bytes (`\u003c`); short texts need no exact count.
    if len(text) * 6 <= OPAQUE_PARAMETERS_MAX_LENGTH:
        return True
    return len(compact_bytes(value)) <= OPAQUE_PARAMETERS_MAX_LENGTH


def validate_parameters(value: Any, path: Path) -> list[FieldError]:
    """`validateRawExtension` on the decoded value: null Required, >10 KiB Too long, non-object Invalid.

    The size is that of the apiserver's compact re-encoding, which is what a webhook can measure.
    """
    if value is None:
        return [required(path)]
    try:
        raw = compact_bytes(value)
    except (TypeError, ValueError) as exc:
        return [invalid(path, OMITTED, f"error parsing data as JSON: {exc}")]
    if len(raw) > OPAQUE_PARAMETERS_MAX_LENGTH:
        return [too_long(path, OPAQUE_PARAMETERS_MAX_LENGTH)]
    if not isinstance(value, dict):
        return [invalid(path, OMITTED, "must be a valid JSON object")]
    return []


def validate_parameters_raw(raw: bytes, path: Path) -> list[FieldError]:
    """`validateRawExtension` on raw bytes, exactly as upstream orders it (used for raw JSON inputs)."""
    if not raw or raw == b"null":  # RawExtension.UnmarshalJSON keeps no bytes for a literal null
        return [required(path)]
    if len(raw) > OPAQUE_PARAMETERS_MAX_LENGTH:
        return [too_long(path, OPAQUE_PARAMETERS_MAX_LENGTH)]
    try:
        value = loads(raw.decode("utf-8", errors="replace"))
    except GoJSONError as exc:
        return [invalid(path, OMITTED, f"error parsing data as JSON: {exc}")]
    if value is None:
        return [required(path)]
    if not isinstance(value, dict):
        return [invalid(path, OMITTED, "must be a valid JSON object")]
    return []


def validate_extended_resource_name(value: Any, path: Path) -> list[FieldError]:
    """1.37's declarative format `k8s-extended-resource-name`: one error per reason (names.py)."""
    if not isinstance(value, str):
        return [_type_invalid(path, value, "string")]
    return [invalid(path, value, msg) for msg in extended_resource_name_messages(value)]


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
        return [], [_type_invalid(path, items, "array")]
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


def _type_invalid(path: Path, value: Any, expected: str) -> FieldError:
    """A value of the wrong JSON type (only from hand-written files: the apiserver decodes types)."""
    return FieldError(ErrorType.TYPE_INVALID, str(path), json_type(value), f"must be of type {expected}")


def _rebadge(error: FieldError, value: str) -> FieldError:
    """The same error with the unmasked value shown."""
    if error.type is ErrorType.INVALID:
        return FieldError(error.type, error.field, value, error.detail)
    return error
