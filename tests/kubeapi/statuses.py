"""metav1.Status errors built as `staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go` builds them.

Each constructor mirrors one upstream `New...` function: same code, reason, message and details.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from resourceapi.machinery.field import FieldError

from .resources import ResourceType


class ApiError(Exception):
    """An API error answered as a metav1.Status with `code`."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after: int | None = None
        self.status_override: str | None = None
        self.list_meta: dict[str, Any] = {}

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": self.status_override or "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        if self.reason == "":
            del out["reason"]
        return out


def _gr_details(rt: ResourceType | None, name: str, resource: str | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name} if name else {}
    if rt is not None and rt.group:
        d["group"] = rt.group
    d["kind"] = resource or (rt.plural if rt else "")
    return d


def _gr(rt: ResourceType, subresource: str = "") -> str:
    plural = f"{rt.plural}/{subresource}" if subresource else rt.plural
    return f"{plural}.{rt.group}" if rt.group else plural


def not_found(rt: ResourceType, name: str) -> ApiError:
    """errors.NewNotFound."""
    return ApiError(404, "NotFound", f'{rt.key} "{name}" not found', _gr_details(rt, name))


def namespace_not_found(namespace: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'namespaces "{namespace}" not found', {"name": namespace, "kind": "namespaces"}
    )


def already_exists(rt: ResourceType, name: str) -> ApiError:
    """errors.NewAlreadyExists."""
    return ApiError(409, "AlreadyExists", f'{rt.key} "{name}" already exists', _gr_details(rt, name))


def conflict(rt: ResourceType, name: str, err: str, subresource: str = "") -> ApiError:
    """errors.NewConflict: `Operation cannot be fulfilled on <resource> "<name>": <err>`."""
    res = f"{rt.plural}/{subresource}" if subresource else rt.plural
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_gr(rt, subresource)} "{name}": {err}',
        _gr_details(rt, name, res),
    )


OPTIMISTIC_LOCK_ERROR = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale(rt: ResourceType, name: str) -> ApiError:
    """The Conflict of an update with a stale resourceVersion (storage.NewResourceVersionConflictsError)."""
    return conflict(rt, name, OPTIMISTIC_LOCK_ERROR)


def invalid(rt: ResourceType, name: str, errors: Sequence[FieldError]) -> ApiError:
    """errors.NewInvalid: 422 with one cause per field error."""
    seen: set[str] = set()
    unique: list[FieldError] = []
    for e in errors:
        if str(e) not in seen:
            seen.add(str(e))
            unique.append(e)
    msgs = [str(e) for e in unique]
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    details: dict[str, Any] = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.kind
    details["causes"] = [e.cause() for e in errors]
    return ApiError(422, "Invalid", f'{rt.qualified_kind} "{name}" is invalid: {agg}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(rt: ResourceType, name: str, err: str) -> ApiError:
    """errors.NewForbidden."""
    return ApiError(403, "Forbidden", f'{rt.key} "{name}" is forbidden: {err}', _gr_details(rt, name))


def method_not_supported(rt: ResourceType, action: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"{action} is not supported on resources of kind {rt.key!r}",
        _gr_details(rt, ""),
    )


def internal(message: str) -> ApiError:
    """errors.NewInternalError."""
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def service_unavailable(message: str = "the server is currently unable to handle the request") -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def timeout(
    message: str = "request did not complete within requested timeout - context deadline exceeded",
) -> ApiError:
    """errors.NewTimeoutError as the timeout filter answers (504)."""
    return ApiError(504, "Timeout", f"Timeout: {message}")


def resource_expired(message: str) -> ApiError:
    """errors.NewResourceExpired: 410 Gone, reason Expired."""
    return ApiError(410, "Expired", message)


def too_large_resource_version(wanted: int, current: int) -> ApiError:
    """storage.NewTooLargeResourceVersionError: 504 Timeout with retryAfterSeconds 1."""
    return ApiError(
        504,
        "Timeout",
        f"Too large resource version: {wanted}, current: {current}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def success(details: dict[str, Any] | None = None, code: int = 200) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        out["details"] = details
    if code != 200:
        out["code"] = code
    return out
