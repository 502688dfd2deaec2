"""What dra-capacity says the API server answers to a create, as a library entry: the verdict, the HTTP code
(201, 400 for a body the server cannot decode, 422 with causes for a validation rule) and every cause.

Two checkers stand behind it, the ones the commands use (no copy of either here):

* DeviceClasses: `dra-capacity validate` (the webhook's mutation + validation, every rule an error), after
  strict decoding's unknown-field check (`validate --strict`). Only native causes count: the KEP-6406 field
  and its annotation carrier are dra-capacity's own rules, which the API server has nothing to say about.
* ResourceClaims, ResourceClaimTemplates and ResourceSlices: simulate's per-object input checks
  (`allocator.simulate.inputs.check_object`): every problem, by upstream's whole validation as ported
  (`resourceapi.validation.objects`: claims, templates and slices).
* A ResourceClaim status update (`status_update`): the body decoded as simulate decodes a claim, then
  `resourceapi.validation.claim_status`, upstream's status-update validation.

The differential harness (tests/differential/) compares these verdicts with a real kube-apiserver's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from allocator.simulate.inputs import DECODE, ObjectProblem, check_object
from dra_capacity.validate_cmd import evaluate, unknown_fields
from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import ErrorType
from resourceapi.manifests.apischema import check_fields
from resourceapi.manifests.documents import Document
from resourceapi.validation.claim_status import StatusGates, status_update_errors
from webhook.deviceclass.admission import DeviceClassAdmission
from webhook.deviceclass.native_rules import NativeRules

CREATED, BAD_REQUEST, INVALID = 201, 400, 422
QUANTITY_SYNTAX = "quantities must match the regular expression"
# resource.ParseQuantity's errors: the decoder reports them bare, naming neither the field nor the value.
QUANTITY_ERRORS = (
    QUANTITY_SYNTAX,
    "unable to parse numeric part of quantity",
    "unable to parse quantity's suffix",
)
DEVICE_CLASS = "DeviceClass"
SIMULATE_KINDS = ("ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")
_REASONS = sorted(
    ((t.text, t.cause_type) for t in ErrorType if t is not ErrorType.TYPE_INVALID), reverse=True
)


@dataclass(frozen=True)
class Cause:
    """One StatusCause: `field` path, `reason` (FieldValueInvalid ...) and `message` (without the field)."""

    field: str
    reason: str
    message: str


@dataclass(frozen=True)
class Verdict:
    """An answer to a create: allowed (`code` 201), refused undecoded (400, `message`, no causes) or invalid
    (422, `causes` in order)."""

    allowed: bool
    code: int
    causes: tuple[Cause, ...] = ()
    message: str = ""


ACCEPTED = Verdict(True, CREATED)


def decode_message(kind: str, version: str, detail: str) -> str:
    """The 400 message of a body the API server cannot decode into the kind (apimachinery's serializer)."""
    return f"{kind} in version {json.dumps(version)} cannot be handled as a {kind}: {detail}"


def strict_message(kind: str, version: str, unknown: list[str]) -> str:
    """Strict field validation's 400 message for unknown fields, in the order they appear."""
    fields = ", ".join(f'unknown field "{path}"' for path in unknown)
    return decode_message(kind, version, f"strict decoding error: {fields}")


def reason_of(message: str) -> str:
    """The StatusCause reason of a field error's text (`Invalid value: ...` -> FieldValueInvalid)."""
    for text, cause_type in _REASONS:
        if message.startswith(text):
            return cause_type
    return ErrorType.INVALID.cause_type


class Judge:
    """Verdicts for many objects of one served cluster (its feature gates), sharing one CEL cache."""

    def __init__(self, gates: FeatureGates | None = None) -> None:
        self.gates = gates or FeatureGates.defaults()
        self.admission = DeviceClassAdmission(self.gates, NativeRules.DENY)
        self._number = 0

    def judge(self, obj: dict[str, object]) -> Verdict:
        """The verdict on creating `obj` (a DeviceClass or a kind simulate checks)."""
        kind = obj.get("kind")
        if kind == DEVICE_CLASS:
            return self.device_class(obj)
        if kind in SIMULATE_KINDS:
            return simulate_object(str(kind), obj, self.gates)
        raise ValueError(f"no checker for kind {kind!r}")

    def device_class(self, obj: dict[str, object]) -> Verdict:
        self._number += 1
        doc = Document("differential", self._number, obj)
        version = doc.api_version.rpartition("/")[2]
        # The API server decodes first (a wrong JSON type ends it), then names the unknown fields.
        problem = check_fields(doc.api_version, DEVICE_CLASS, obj).problem
        if problem is not None and not problem.message.startswith("Required value"):
            detail = f"{problem.path}: {problem.message}"
            return Verdict(False, BAD_REQUEST, (), decode_message(DEVICE_CLASS, version, detail))
        unknown = unknown_fields(doc)
        if unknown:
            return Verdict(False, BAD_REQUEST, (), strict_message(DEVICE_CLASS, version, unknown))
        result = evaluate(self.admission, doc, None, self._number, self.gates)
        causes = tuple(Cause(c["field"], c["type"], c["message"]) for c in result.causes() if c["native"])
        wrong = next((c for c in causes if c.reason == ErrorType.TYPE_INVALID.cause_type), None)
        if wrong is not None:  # the API server cannot decode a wrong JSON type: a 400, not a cause
            detail = f"{wrong.field}: {wrong.message}"
            return Verdict(False, BAD_REQUEST, (), decode_message(DEVICE_CLASS, version, detail))
        return Verdict(False, INVALID, causes) if causes else ACCEPTED


def simulate_object(kind: str, obj: dict[str, object], gates: FeatureGates | None = None) -> Verdict:
    """Simulate's input checks on one object under `gates` (and their release), as the API server's answer
    to creating it would read (a create wipes a claim's status, so the status is decoded but not judged)."""
    problems = check_object(kind, dict(obj), judge_status=False, gates=gates)
    if not problems:
        return ACCEPTED
    if problems[0].stage == DECODE:
        return _undecodable(kind, obj, problems)
    return Verdict(False, INVALID, tuple(Cause(p.path, reason_of(p.message), p.message) for p in problems))


def _undecodable(kind: str, obj: dict[str, object], problems: list[ObjectProblem]) -> Verdict:
    """The 400 for a body the server cannot decode: unknown fields (strict), else the first decode error."""
    version = str(obj.get("apiVersion", "")).rpartition("/")[2]
    unknown = [p.path for p in problems if p.message == f'unknown field "{p.path}"']
    if unknown:
        return Verdict(False, BAD_REQUEST, (), strict_message(kind, version, unknown))
    first = problems[0]
    detail = f"{first.path}: {first.message}"
    for text in QUANTITY_ERRORS:
        if text in first.message:
            detail = first.message[first.message.index(text) :]
            break
    return Verdict(False, BAD_REQUEST, (), decode_message(kind, version, detail))


def status_update(
    new: dict[str, object],
    old: dict[str, object],
    gates: FeatureGates | None = None,
    admin_namespace: bool | None = None,
    status_gates: StatusGates | None = None,
) -> Verdict:
    """The verdict on updating stored claim `old`'s status to `new`'s (a PUT to `resourceclaims/status`):
    the body decoded as a ResourceClaim, then upstream's status-update validation. `status_gates` overrides
    the gates the status strategy reads (some, e.g. DRAOptionalNodeOperations, are not in FeatureGates)."""
    problems = check_object("ResourceClaim", dict(new), judge_status=False, gates=gates)
    if problems and problems[0].stage == DECODE:
        return _undecodable("ResourceClaim", new, problems)
    if status_gates is None:
        status_gates = StatusGates.of(gates or FeatureGates.defaults())
    errors = status_update_errors(new, old, status_gates, admin_namespace)
    if not errors:
        return ACCEPTED
    return Verdict(False, INVALID, tuple(Cause(e.field, e.type.cause_type, e.body()) for e in errors))
