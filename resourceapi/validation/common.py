"""Small pieces every resource.k8s.io validation uses: wrong JSON types, errors moved to their path."""

from __future__ import annotations

import dataclasses
from typing import Any

from resourceapi.machinery.field import ErrorType, FieldError, Path
from resourceapi.machinery.jsontypes import json_type


def relocated(errors: tuple[FieldError, ...], path: Path) -> list[FieldError]:
    """Memoized errors moved to their real path."""
    return [dataclasses.replace(e, field=str(path)) for e in errors] if errors else []


def type_invalid(path: Path, value: Any, expected: str) -> FieldError:
    """A value of the wrong JSON type (only from hand-written files: the apiserver decodes types)."""
    return FieldError(ErrorType.TYPE_INVALID, str(path), json_type(value), f"must be of type {expected}")


def rebadge(error: FieldError, value: str) -> FieldError:
    """The same error with the unmasked value shown."""
    if error.type is ErrorType.INVALID:
        return FieldError(error.type, error.field, value, error.detail)
    return error
