"""Device rules shared by DeviceClasses and ResourceClaims (pkg/apis/resource/validation/validation.go):
a selector's CEL expression (length, compile, cost), an opaque configuration (handwritten: `opaque`, the
parameters; 1.37 declarative: the driver), and an extended resource name.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from resourceapi.api.limits import CEL_SELECTOR_EXPRESSION_MAX_LENGTH, OPAQUE_PARAMETERS_MAX_LENGTH
from resourceapi.capacity_requests import OMITTED
from resourceapi.cel import CompileResult, compile_selector
from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import FieldError, Path, forbidden, internal, invalid, required, too_long
from resourceapi.machinery.names import (
    extended_resource_name_messages,
    validate_driver_name,
    validate_opaque_driver_name,
)
from resourceapi.machinery.rawjson import GoJSONError, compact_bytes, loads
from resourceapi.validation.common import relocated, type_invalid

# Compiles a selector expression for the served gates: `compile_selector`, or a `CelCache.compile`.
Compiler = Callable[[str, FeatureGates], CompileResult]
_PLACEHOLDER = Path("-")


def validate_selector(
    item: Any, path: Path, gates: FeatureGates, compiler: Compiler | None = None
) -> list[FieldError]:
    """`validateSelector`: `cel` required; the expression checked for length, then compiled (type, cost)."""
    if not isinstance(item, dict):
        return [type_invalid(path, item, "object")]
    cel = item.get("cel")
    if cel is None:
        return [required(path.child("cel"))]
    if not isinstance(cel, dict):
        return [type_invalid(path.child("cel"), cel, "object")]
    expression = cel.get("expression", "")
    if expression is None:
        expression = ""
    if not isinstance(expression, str):
        return [type_invalid(path.child("cel", "expression"), expression, "string")]
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


def validate_config(item: Any, path: Path, *, handwritten_driver: bool = False) -> list[FieldError]:
    """`validateDeviceConfiguration`'s handwritten rules: `opaque` required, then the parameters. The
    driver is 1.37's declarative rule, reported later (`config_driver_errors`); with `handwritten_driver`
    (1.36: `Validation.declarative_texts` off) it is `ValidateCSIDriverName`'s, before the parameters."""
    if not isinstance(item, dict):
        return [type_invalid(path, item, "object")]
    opaque = item.get("opaque")
    if opaque is None:
        return [required(path.child("opaque"))]
    if not isinstance(opaque, dict):
        return [type_invalid(path.child("opaque"), opaque, "object")]
    errors: list[FieldError] = []
    if handwritten_driver:
        driver = opaque.get("driver") or ""
        if not isinstance(driver, str):
            errors.append(type_invalid(path.child("opaque", "driver"), driver, "string"))
        else:
            errors.extend(validate_driver_name(driver, path.child("opaque", "driver")))
    parameters = opaque.get("parameters")
    if not _small_object(parameters):
        errors.extend(validate_parameters(parameters, path.child("opaque", "parameters")))
    return errors


def config_driver_errors(item: Any, path: Path) -> list[FieldError]:
    """An opaque configuration's `driver` (declarative in 1.37: Required, the case-insensitive subdomain
    format, at most 63 characters); nothing when the entry has no `opaque` object."""
    opaque = item.get("opaque") if isinstance(item, dict) else None
    if not isinstance(opaque, dict):
        return []
    driver = opaque.get("driver") or ""
    if not isinstance(driver, str):
        return [type_invalid(path.child("opaque", "driver"), driver, "string")]
    return relocated(driver_errors(driver), path.child("opaque", "driver"))


@functools.lru_cache(maxsize=4096)
def driver_errors(driver: str) -> tuple[FieldError, ...]:
    """`validate_opaque_driver_name` at a placeholder path, memoized: classes repeat the same few drivers."""
    return tuple(validate_opaque_driver_name(driver, _PLACEHOLDER))


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


def validate_extended_resource_name(value: Any, path: Path, *, handwritten: bool = False) -> list[FieldError]:
    """1.37's declarative format `k8s-extended-resource-name`: one error per reason (names.py). With
    `handwritten` (1.36, `Validation.declarative_texts` off), `validateDeviceClassSpec`'s one error,
    `must be a valid extended resource name` (v1.36.3 pkg/apis/resource/validation/validation.go:596)."""
    if not isinstance(value, str):
        return [type_invalid(path, value, "string")]
    messages = extended_resource_name_messages(value)
    if handwritten:
        return [invalid(path, value, "must be a valid extended resource name")] if messages else []
    return [invalid(path, value, msg) for msg in messages]
