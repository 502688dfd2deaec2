"""DeviceClass admission: `/mutate` (gate drop-on-disable as a JSONPatch) and `/validate` (upstream rules).

Both take an `AdmissionReview.request` (a dict, uid present; the server has checked the envelope) and
return an `AdmissionOutcome`. A review for anything but a resource.k8s.io DeviceClass CREATE/UPDATE is
allowed unhandled, so a misregistered webhook never locks a cluster. Neither method raises on any JSON-shaped
request, even one the envelope check would refuse: a member of the wrong type makes the review foreign.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resourceapi.cel import CelCache, CompileResult
from resourceapi.field import FieldError
from resourceapi.gates import FeatureGates
from resourceapi.objects import display_name
from webhook import warning_texts
from webhook.dropping import DropResult, drop_disabled_fields
from webhook.status import GROUP, KIND, internal_status, invalid_status
from webhook.validation import validate_device_class

log = logging.getLogger(__name__)

RESOURCE = "deviceclasses"
# resource.k8s.io versions whose DeviceClass has the v1 shape for every field we read.
VERSIONS = frozenset({"v1", "v1beta1", "v1beta2"})
HANDLED_OPERATIONS = frozenset({"CREATE", "UPDATE"})
FRONT_CACHE_SIZE = 4096


@dataclass
class AdmissionOutcome:
    """What the server needs: the AdmissionReview response, and facts for its logs and metrics."""

    response: dict[str, Any]
    handled: bool
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""


@dataclass(frozen=True)
class _Subject:
    obj: dict[str, Any]
    old: dict[str, Any] | None
    name: str
    operation: str


class DeviceClassAdmission:
    """The admission logic of one served cluster (its feature gates); stateless apart from the CEL cache."""

    def __init__(self, gates: FeatureGates) -> None:
        self.gates = gates
        self.cache = CelCache()
        self._compiled: dict[str, CompileResult] = {}

    def warm_up(self) -> None:
        """Build the CEL environment (and check it works) before /readyz reports ready."""
        self.cache.compile('device.driver == "warm-up.example.com"', self.gates)

    def mutate(self, request: dict[str, Any]) -> AdmissionOutcome:
        """Drop fields of disabled features, silently, as upstream's PrepareForCreate/PrepareForUpdate do."""
        uid = request.get("uid", "")
        operation = _operation(request)
        subject = _subject(request, operation)
        if subject is None:
            return _foreign(uid, request, operation)
        response: dict[str, Any] = {"uid": uid, "allowed": True}
        try:
            patch = drop_disabled_fields(subject.obj, subject.old, self.gates).patch
        except Exception as exc:  # a bug must not take the server down; report it as the apiserver would
            log.exception("mutating DeviceClass %r failed", subject.name)
            return _internal(uid, subject, exc)
        if patch:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch, separators=(",", ":")).encode()).decode()
        return AdmissionOutcome(response, True, [], subject.name, operation)

    def validate(self, request: dict[str, Any]) -> AdmissionOutcome:
        """Judge the object as stored after the drop; warn about fields the drop should have removed."""
        uid = request.get("uid", "")
        operation = _operation(request)
        subject = _subject(request, operation)
        if subject is None:
            return _foreign(uid, request, operation)
        try:
            drop: DropResult = drop_disabled_fields(subject.obj, subject.old, self.gates)
            result = validate_device_class(drop.obj, subject.old, self.gates, self._compile)
        except Exception as exc:
            log.exception("validating DeviceClass %r failed", subject.name)
            return _internal(uid, subject, exc)
        notes = [warning_texts.not_dropped(d.path, d.gate) for d in drop.dropped] + result.warnings
        return outcome(uid, subject.name, operation, result.errors, notes)

    def _compile(self, expression: str, gates: FeatureGates) -> CompileResult:
        """The shared CelCache behind a per-gates dict: the hot path skips key building and locking."""
        if gates is not self.gates:
            return self.cache.compile(expression, gates)
        hit = self._compiled.get(expression)
        if hit is None:
            hit = self.cache.compile(expression, gates)
            if len(self._compiled) >= FRONT_CACHE_SIZE:
                self._compiled.clear()
            self._compiled[expression] = hit
        return hit


def outcome(
    uid: Any, name: str, operation: str, errors: list[FieldError], notes: list[str]
) -> AdmissionOutcome:
    """An allowed response, or a 422 Invalid one carrying every error."""
    response: dict[str, Any] = {"uid": uid, "allowed": not errors}
    if errors:
        response["status"] = invalid_status(name, errors)
    if notes:
        response["warnings"] = notes
    return AdmissionOutcome(response, True, [e.type.cause_type for e in errors], name, operation)


def is_device_class(request: Mapping[str, Any]) -> bool:
    """resource.k8s.io DeviceClass (by `kind`, else by `resource`), any known version, no subresource.

    A member of the wrong JSON type simply does not match (the envelope check rejects such reviews first).
    """
    if request.get("subResource"):
        return False
    kind = request.get("kind")
    if isinstance(kind, dict):
        return _member(kind, "group") == GROUP and _member(kind, "kind") == KIND and _known_version(kind)
    resource = request.get("resource")
    if isinstance(resource, dict):
        return (
            _member(resource, "group") == GROUP
            and _member(resource, "resource") == RESOURCE
            and _known_version(resource)
        )
    return False


def _member(obj: Mapping[str, Any], key: str) -> str | None:
    """A string member, or None when absent or of another JSON type."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _known_version(gvk: Mapping[str, Any]) -> bool:
    version = _member(gvk, "version")
    return version is not None and version in VERSIONS


def _operation(request: Mapping[str, Any]) -> str:
    """`request.operation` when it is a string (logs and metrics), else ""."""
    return _member(request, "operation") or ""


def _subject(request: Mapping[str, Any], operation: str) -> _Subject | None:
    """The DeviceClass CREATE/UPDATE this review is about (`operation` as `_operation` reads it), or None
    when it is foreign to this webhook."""
    if operation not in HANDLED_OPERATIONS or not is_device_class(request):
        return None
    obj = request.get("object")
    if not isinstance(obj, dict):
        return None
    old = request.get("oldObject") if operation == "UPDATE" else None
    if not isinstance(old, dict):
        old = None
    name = display_name(obj) or _member(request, "name") or ""
    return _Subject(obj, old, name, operation)


def _foreign(uid: Any, request: Mapping[str, Any], operation: str) -> AdmissionOutcome:
    return AdmissionOutcome(
        {"uid": uid, "allowed": True}, False, [], _member(request, "name") or "", operation
    )


def _internal(uid: Any, subject: _Subject, exc: Exception) -> AdmissionOutcome:
    status = internal_status(f"{type(exc).__name__}: {exc}")
    return AdmissionOutcome(
        {"uid": uid, "allowed": False, "status": status},
        True,
        ["InternalError"],
        subject.name,
        subject.operation,
    )
