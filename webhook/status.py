"""The 422 `metav1.Status` of a rejected DeviceClass, built exactly as apimachinery's `apierrors.NewInvalid`.

kubectl prints such a status like native validation (`The DeviceClass "x" is invalid: ...`), and
`kubectl edit` keeps the user's edits, so rejections read as if the API server itself refused the object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from resourceapi.field import ErrorList, FieldError, go_quote

GROUP = "resource.k8s.io"
KIND = "DeviceClass"


def invalid_status(
    name: str, errors: Sequence[FieldError], group: str = GROUP, kind: str = KIND
) -> dict[str, Any]:
    """`apierrors.NewInvalid(GroupKind{group, kind}, name, errors).Status()` as a JSON-ready dict.

    Causes keep every error in order; the message carries the de-duplicated aggregate (`ToAggregate`).
    """
    qualified = f"{kind}.{group}" if group else kind
    aggregate = ErrorList(list(errors)).aggregate_message()
    message = f"{qualified} {go_quote(name)} is invalid"
    if aggregate:
        message += f": {aggregate}"
    return {
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [e.cause() for e in errors],
        },
        "code": 422,
    }


def internal_status(message: str) -> dict[str, Any]:
    """A 500 `InternalError` status (`apierrors.NewInternalError`): a bug on our side, never bad input."""
    return {
        "status": "Failure",
        "message": f"Internal error occurred: {message}",
        "reason": "InternalError",
        "details": {"causes": [{"message": message}]},
        "code": 500,
    }
