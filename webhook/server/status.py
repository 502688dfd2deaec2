"""The 422 `metav1.Status` of a rejected DeviceClass, built as apimachinery's `apierrors.NewInvalid`, bounded.

kubectl prints such a status like native validation (`The DeviceClass "x" is invalid: ...`), and
`kubectl edit` keeps the user's edits, so rejections read as if the API server itself refused the object.

Unlike `NewInvalid`, the answer's size is capped (docs/divergences.md): at most `MAX_CAUSES` causes and
`MAX_CAUSE_BYTES` of cause text, the rest summed up in one final cause (`... and 99,900 more errors`), and a
message that names the first `MESSAGE_ERRORS` errors only, since kubectl prints the causes, not the message.
Any object, however hostile, gets an answer far below kube-apiserver's own 3 MiB request limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from resourceapi.machinery.field import FieldError, go_quote

GROUP = "resource.k8s.io"
KIND = "DeviceClass"

MAX_CAUSES = 100
MAX_CAUSE_BYTES = 256 * 1024
MESSAGE_ERRORS = 10
MESSAGE_BYTES = 32 * 1024


def _more(count: int) -> str:
    return f"... and {count:,} more error{'s' if count != 1 else ''}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


def unique(errors: Sequence[FieldError]) -> list[FieldError]:
    """The errors without repeats (same type, field and message), first occurrence kept: kube-apiserver
    v1.37.2 reports two labels with the same invalid value as one cause (measured by tests/differential)."""
    seen: set[tuple[str, str, str]] = set()
    out: list[FieldError] = []
    for error in errors:
        key = (error.type.cause_type, error.field, error.body())
        if key not in seen:
            seen.add(key)
            out.append(error)
    return out


def bounded_causes(errors: Sequence[FieldError]) -> list[dict[str, str]]:
    """The first errors as StatusCauses within `MAX_CAUSES` and `MAX_CAUSE_BYTES`, then one summary cause."""
    errors = unique(errors)
    causes: list[dict[str, str]] = []
    budget = MAX_CAUSE_BYTES
    for error in errors:
        if len(causes) == MAX_CAUSES or budget <= 0:
            break
        cause = error.cause()
        size = len(cause["field"]) + len(cause["message"])
        if size > budget:
            if causes:
                break
            cause["message"] = _clip(cause["message"], budget)  # one giant cause: keep its start
            size = budget
        causes.append(cause)
        budget -= size
    if len(causes) < len(errors):
        causes.append({"field": "", "message": _more(len(errors) - len(causes))})
    return causes


def bounded_aggregate(errors: Sequence[FieldError]) -> str:
    """`utilerrors.Aggregate.Error()` of the de-duplicated errors (one bare, several as `[a, b]`), naming
    at most `MESSAGE_ERRORS` of them in at most `MESSAGE_BYTES`, then how many more there are."""
    seen: set[str] = set()
    shown: list[str] = []
    size = 0
    index = 0
    for index, error in enumerate(errors):  # noqa: B007 (index is read after the loop)
        if len(shown) == MESSAGE_ERRORS or size >= MESSAGE_BYTES:
            break
        text = str(error)
        if text in seen:
            continue
        seen.add(text)
        text = _clip(text, MESSAGE_BYTES - size)
        shown.append(text)
        size += len(text) + 2
    else:
        index = len(errors)
    rest = errors[index:]
    more = len({str(e) for e in rest} - seen) if len(rest) <= MAX_CAUSES else len(rest)
    if not shown:
        return ""
    if len(shown) == 1 and not more:
        return shown[0]
    if more:
        shown.append(_more(more))
    return "[" + ", ".join(shown) + "]"


def invalid_status(
    name: str, errors: Sequence[FieldError], group: str = GROUP, kind: str = KIND
) -> dict[str, Any]:
    """`apierrors.NewInvalid(GroupKind{group, kind}, name, errors).Status()` as a JSON-ready dict, bounded.

    Causes keep the errors in order (up to the caps); the message carries the de-duplicated aggregate.
    """
    qualified = f"{kind}.{group}" if group else kind
    aggregate = bounded_aggregate(errors)
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
            "causes": bounded_causes(errors),
        },
        "code": 422,
    }


def timeout_status(name: str, seconds: float, group: str = GROUP, kind: str = KIND) -> dict[str, Any]:
    """A 504 `Timeout` status (`apierrors.NewTimeoutError`): the review could not be judged in the time the
    caller allows. An object not judged is refused: a webhook that runs out of time never admits."""
    qualified = f"{kind}.{group}" if group else kind
    return {
        "status": "Failure",
        "message": (
            f"{qualified} {go_quote(name)} was not admitted: the webhook could not judge it within "
            f"{seconds:.3g}s of the caller's deadline (the webhook is overloaded or the object is too costly "
            "to check); retry, or simplify the object"
        ),
        "reason": "Timeout",
        "details": {"name": name, "group": group, "kind": kind, "retryAfterSeconds": 1},
        "code": 504,
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
