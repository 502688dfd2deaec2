"""DeviceClass admission: `/mutate` (gate drop-on-disable as a JSONPatch) and `/validate` (upstream rules).

Both take an `AdmissionReview.request` (a dict, uid present; the server has checked the envelope) and
return an `AdmissionOutcome`. A review for anything but a resource.k8s.io DeviceClass CREATE/UPDATE is
allowed unhandled, so a misregistered webhook never locks a cluster. Neither method raises on any JSON-shaped
request, even one the envelope check would refuse: a member of the wrong type makes the review foreign.
"""

from __future__ import annotations

import base64
import collections
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from resourceapi.cel import CelCache, CompileResult
from resourceapi.cel.cache import entry_bytes
from resourceapi.gates import DRA_EXTENDED_RESOURCE_CAPACITY, FeatureGates
from resourceapi.machinery.field import FieldError
from resourceapi.machinery.objects import display_name
from webhook.clusterview.cluster_view import ClusterView
from webhook.deviceclass import warning_texts
from webhook.deviceclass.capacity_requests import check_escaped_capacity
from webhook.deviceclass.cluster_warnings import cluster_warnings
from webhook.deviceclass.costing import FREE, Cost
from webhook.deviceclass.dropping import DroppedField, DropResult, drop_disabled_fields
from webhook.deviceclass.native_rules import MAX_NATIVE_WARNINGS, NativeRules, native_warnings, rule_field
from webhook.deviceclass.validation import validate_device_class
from webhook.server import logs
from webhook.server.status import GROUP, KIND, internal_status, invalid_status

log = logging.getLogger(__name__)

RESOURCE = "deviceclasses"
# resource.k8s.io versions whose DeviceClass has the v1 shape for every field we read.
VERSIONS = frozenset({"v1", "v1beta1", "v1beta2"})
HANDLED_OPERATIONS = frozenset({"CREATE", "UPDATE"})
# Estimated bytes (resourceapi/cel/cache.py); its entries are shared with the CelCache.
FRONT_CACHE_BYTES = 8 * 1024 * 1024

ClusterSource = Callable[[], "ClusterView | None"]
"""Where the cluster-aware warnings read the cluster from: an informer cache's `view` (None while cold)."""


@dataclass
class AdmissionOutcome:
    """What the server needs: the AdmissionReview response, and facts for its logs and metrics."""

    response: dict[str, Any]
    handled: bool
    cause_types: list[str] = field(default_factory=list)
    name: str = ""
    operation: str = ""
    native: list[FieldError] = field(default_factory=list)  # findings on natively validated fields
    # In warn mode, the findings answered with warnings, by (guarded field, cause type), for the metric.
    native_findings: dict[tuple[str, str], int] = field(default_factory=dict)
    cluster: str = ""  # cluster-aware warnings: "" (no cluster view configured), "used", "cold" (skipped)


@dataclass(frozen=True)
class _Subject:
    obj: dict[str, Any]
    old: dict[str, Any] | None
    name: str
    operation: str


class DeviceClassAdmission:
    """The admission logic of one served cluster (its feature gates); stateless apart from the CEL cache.

    `native_rules` says what findings on natively validated fields do (webhook/deviceclass/native_rules.py):
    DENY (the offline `validate`, and `serve --native-rules deny`) or WARN (`serve`'s default), then the
    outcome lists each finding in `native_findings` for the server's metric.
    """

    def __init__(
        self,
        gates: FeatureGates,
        native_rules: NativeRules = NativeRules.DENY,
        cluster: ClusterSource | None = None,
    ) -> None:
        self.native_rules = native_rules
        self.cluster = cluster
        self.cache = CelCache()
        self._front = _Front(gates)
        self.followers: list[Callable[[FeatureGates], None]] = []  # told of each switch (class Events)

    @property
    def gates(self) -> FeatureGates:
        """The gates (and so the release) a review starting now is judged by."""
        return self._front.gates

    def switch(self, gates: FeatureGates) -> None:
        """Judge by `gates` from the next review on (the served cluster's release changed:
        kubeio/serverversion.py). One assignment swaps the gates and their front cache together, and each
        review reads them once at its start, so a review running meanwhile is judged wholly by the old ones.
        The shared CelCache keys its entries by release and gates, so nothing compiled for one serves the
        other."""
        if gates == self._front.gates:
            return
        self._front = _Front(gates)
        for follow in self.followers:
            follow(gates)

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
        gates = self.gates  # read once: the whole review is judged by one release
        response: dict[str, Any] = {"uid": uid, "allowed": True}
        try:
            patch = drop_disabled_fields(subject.obj, subject.old, gates).patch
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
        gates = self.gates  # read once: the whole review is judged by one release
        try:
            drop: DropResult = drop_disabled_fields(subject.obj, subject.old, gates)
            result = validate_device_class(drop.obj, subject.old, gates, self._compile)
        except Exception as exc:
            log.exception("validating DeviceClass %r failed", subject.name)
            return _internal(uid, subject, exc)
        notes = [_escaped(d) for d in drop.dropped] + result.warnings
        errors = result.errors
        if any(d.gate == DRA_EXTENDED_RESOURCE_CAPACITY for d in drop.dropped):
            # Escaped the drop: stored as sent, so its content is judged whatever the gates (DESIGN).
            errors = check_escaped_capacity(subject.obj, subject.old) + errors
        warned = result.native if self.native_rules is NativeRules.WARN else []
        if warned:
            warned_ids = {id(e) for e in warned}
            errors = [e for e in errors if id(e) not in warned_ids]
            notes = native_warnings(warned) + notes
            self._report_native(subject, warned)
        cluster = ""
        if self.cluster is not None:
            view = self.cluster()
            cluster = "cold" if view is None else "used"
            if view is not None:
                try:
                    notes += cluster_warnings(drop.obj, view, gates, self._compile)
                except Exception:  # warnings are advice: a bug in them never fails an admission
                    log.exception("cluster warnings for DeviceClass %r failed", subject.name)
        verdict = outcome(uid, subject.name, operation, errors, notes)
        verdict.cluster = cluster
        verdict.native = result.native
        verdict.native_findings = dict(
            collections.Counter((rule_field(e), e.type.cause_type) for e in warned)
        )
        return verdict

    def cost(self, endpoint: str, request: dict[str, Any]) -> Cost:
        """What judging `request` on `endpoint` would still cost this handler (webhook/deviceclass/costing.py
        `Cost`): the bytes of its selectors' CEL not compiled yet, and, with a cluster view, the selector
        evaluations on published devices not cached yet. `/mutate` drops fields and compiles nothing. Work
        linear in the body (metadata, config, capacity requests) is not counted: the server bounds it by the
        body's size."""
        if endpoint != "validate":
            return FREE
        expressions = _expressions(request)
        if not expressions:
            return FREE
        compiled = self._front.compiled
        compile_bytes = sum(len(e.encode("utf-8", "surrogatepass")) for e in expressions if e not in compiled)
        evaluations = 0
        view = self.cluster() if self.cluster is not None else None
        if view is not None:
            evaluations = sum(view.pending(e) for e in expressions)
        return Cost(compile_bytes, evaluations)

    def prepare(self, endpoint: str, request: dict[str, Any], evaluations: int) -> None:
        """Make about `evaluations` of the selector evaluations `request` still needs (its selectors already
        compiled or cheap to compile, the caller has checked `cost`), so a later review of the same class
        can be judged quickly: bounded steps towards a warm cluster view."""
        view = self.cluster() if self.cluster is not None and endpoint == "validate" else None
        if view is None:
            return
        gates = self.gates
        for expression in _expressions(request):
            if evaluations <= 0:
                return
            if not view.pending(expression):
                continue
            compiled = self._compile(expression, gates)
            if compiled.program is None:
                continue
            evaluations -= view.warm(expression, compiled.program, evaluations)

    def _report_native(self, subject: _Subject, findings: list[FieldError]) -> None:
        """A log line per finding, naming the rule: the first `MAX_NATIVE_WARNINGS`, then one line counting
        the rest (an object with 100,000 bad labels must not flood the log)."""
        for finding in findings[:MAX_NATIVE_WARNINGS]:
            logs.log_event(
                log,
                logging.WARNING,
                "native rule finding not enforced (--native-rules warn)",
                name=subject.name,
                operation=subject.operation,
                rule=rule_field(finding),
                field=finding.field,
                cause_type=finding.type.cause_type,
                message=finding.body().partition("\n")[0],
            )
        if len(findings) > MAX_NATIVE_WARNINGS:
            logs.log_event(
                log,
                logging.WARNING,
                "more native rule findings not enforced (--native-rules warn)",
                name=subject.name,
                operation=subject.operation,
                count=len(findings) - MAX_NATIVE_WARNINGS,
            )

    def _compile(self, expression: str, gates: FeatureGates) -> CompileResult:
        """The shared CelCache behind a per-gates dict: the hot path skips key building and locking. Gates
        other than the front's (a review begun before a switch) go to the CelCache itself."""
        front = self._front
        if gates is not front.gates:
            return self.cache.compile(expression, gates)
        hit = front.compiled.get(expression)
        if hit is None:
            hit = self.cache.compile(expression, gates)
            weight = entry_bytes(hit)
            if front.bytes + weight > FRONT_CACHE_BYTES:
                front.compiled.clear()
                front.bytes = 0
            front.compiled[expression] = hit
            front.bytes += weight
        return hit


@dataclass
class _Front:
    """The gates reviews are judged by and the compiled selectors of those gates, swapped together."""

    gates: FeatureGates
    compiled: dict[str, CompileResult] = field(default_factory=dict)
    bytes: int = 0


def _expressions(request: Mapping[str, Any]) -> list[str]:
    """The CEL expressions of `request.object`'s selectors (what validating it may compile), in order."""
    obj = request.get("object")
    spec = obj.get("spec") if isinstance(obj, dict) else None
    selectors = spec.get("selectors") if isinstance(spec, dict) else None
    if not isinstance(selectors, list):
        return []
    out = []
    for item in selectors:
        cel = item.get("cel") if isinstance(item, dict) else None
        expression = cel.get("expression") if isinstance(cel, dict) else None
        if isinstance(expression, str) and expression:
            out.append(expression)
    return out


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


def _escaped(dropped: DroppedField) -> str:
    if dropped.gate == DRA_EXTENDED_RESOURCE_CAPACITY:
        return warning_texts.escaped_drop(dropped.path, dropped.gate)
    return warning_texts.not_dropped(dropped.path, dropped.gate)


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
