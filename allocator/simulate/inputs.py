"""Simulate's input: every object parsed and checked whole before anything runs.

`load_inputs` raises `InputError` naming file, document, object and field on the first problem, so nothing
is half-processed. The input objects are never modified afterwards: what a pod's claim entries resolve to
is recorded beside the pod (`Inputs.pod_claims`), and `scheduling_pod` gives placement its own copy.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from allocator.simulate.fieldpaths import error_message, field_path
from allocator.simulate.objectchecks import pod_problem, v1beta1_slice_problem
from allocator.simulate.templates import claim_from_template
from allocator.simulate.workload_pods import expand
from allocator.structured.devicetaints import patch_slices
from resourceapi.api.core_v1 import Namespace, Node, Pod, PodResourceClaim
from resourceapi.api.policy_v1 import PodDisruptionBudget
from resourceapi.api.resource_v1 import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from resourceapi.api.storage_v1 import NAMESPACED_STORAGE_KINDS, STORAGE_KINDS, StorageObject
from resourceapi.api.workloads_v1 import Deployment, Job, ReplicaSet, StatefulSet, Workload
from resourceapi.extended import CapacityCarrierError, class_capacity_requests, is_dra_extended_resource_name
from resourceapi.gates import FeatureGates
from resourceapi.machinery.field import FieldError, Path
from resourceapi.manifests.apischema import check_fields, known_kind
from resourceapi.manifests.documents import Document
from resourceapi.manifests.interning import json_key
from resourceapi.validation.claim import (
    ADMIN_ACCESS_LABEL,
    admin_access_errors,
    validate_resource_claim,
    validate_resource_claim_template,
)
from resourceapi.validation.claim_status import validate_status_update
from resourceapi.validation.device_fields import taint_declarative, taint_errors
from resourceapi.validation.objects import VALIDATORS, Validator, validate_create

RESOURCE_API = "resource.k8s.io/v1"
# Claims and templates in a namespace labeled for admin access (admin_namespaces) are judged with it allowed.
CLAIM_VALIDATORS: dict[str, Validator] = {
    "ResourceClaim": functools.partial(validate_resource_claim, admin_namespace=True),
    "ResourceClaimTemplate": functools.partial(validate_resource_claim_template, admin_namespace=True),
}
KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "DeviceClass": (RESOURCE_API, DeviceClass),
    "ResourceSlice": (RESOURCE_API, ResourceSlice),
    "DeviceTaintRule": (RESOURCE_API, DeviceTaintRule),
    "ResourceClaim": (RESOURCE_API, ResourceClaim),
    "Node": ("v1", Node),
    "Pod": ("v1", Pod),
    "Namespace": ("v1", Namespace),
    "ResourceClaimTemplate": (RESOURCE_API, ResourceClaimTemplate),
    "Deployment": ("apps/v1", Deployment),
    "ReplicaSet": ("apps/v1", ReplicaSet),
    "StatefulSet": ("apps/v1", StatefulSet),
    "Job": ("batch/v1", Job),
    "PodDisruptionBudget": ("policy/v1", PodDisruptionBudget),
    **{kind: (version, StorageObject) for kind, version in STORAGE_KINDS.items()},
}
_NAMESPACED = (
    "ResourceClaim",
    "Pod",
    "ResourceClaimTemplate",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "Job",
    "PodDisruptionBudget",
    *NAMESPACED_STORAGE_KINDS,
)
ClaimEntries = tuple[tuple[str, str | None], ...]
"""A pending pod's `spec.resourceClaims` resolved: (entry name, the ResourceClaim it stands for or None)."""


class InputError(ValueError):
    """Unusable simulate input; the message names file, document, object and field."""


class UsageError(ValueError):
    """A usage problem found only once the input is known (e.g. several Nodes and no --node)."""


@dataclass
class Inputs:
    """The checked input objects, in input order, each with where it came from."""

    classes: list[DeviceClass] = field(default_factory=list)
    slices: list[ResourceSlice] = field(default_factory=list)
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    templates: dict[tuple[str, str], ResourceClaimTemplate] = field(default_factory=dict)  # (namespace, name)
    workloads: list[Workload] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)  # what preemption tries not to violate
    where: dict[int, str] = field(default_factory=dict)  # id(object) -> "file: document N: Kind "name""
    claim_names: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id(pending pod) -> its claims
    entries: dict[int, ClaimEntries] = field(default_factory=dict)  # id(pending pod) -> resolved entries
    generated: dict[int, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # (entry, claim) per pod
    claims_by_key: dict[tuple[str, str], ResourceClaim] = field(default_factory=dict)  # (namespace, name)
    notes: list[str] = field(default_factory=list)  # for stderr: skipped objects, warnings
    storage: list[dict[str, Any]] = field(default_factory=list)  # PVCs, PVs, StorageClasses, CSINodes, ...

    def tainted_slices(self, gates: FeatureGates) -> list[ResourceSlice]:
        """The slices as the scheduler allocates from them: with the DeviceTaintRules' taints when the gates
        apply them (allocator/structured/devicetaints.py)."""
        return patch_slices(self.slices, self.taint_rules, gates)

    def pending_pods(self) -> list[Pod]:
        """Pods to place: no node yet, and not being deleted (the scheduler skips those, too)."""
        return [p for p in self.pods if not p.spec.node_name and not p.metadata.deletion_timestamp]

    def unallocated_claims(self) -> list[ResourceClaim]:
        return [c for c in self.claims if c.status is None or c.status.allocation is None]

    def allocated_claims(self) -> list[ResourceClaim]:
        return [c for c in self.claims if c.status is not None and c.status.allocation is not None]


def _label(kind: str, obj: dict[str, Any]) -> str:
    """The object named in messages, from its raw fields (before, or instead of, its model)."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    return _named(kind, meta.get("namespace") or "", name)


def _named(kind: str, namespace: str, name: str) -> str:
    """`Pod "ns/name"` or `Node "name"`; an unset namespace is `default`, where the object would be created,
    as the rest of the output says."""
    return f'{kind} "{namespace or "default"}/{name}"' if kind in _NAMESPACED else f'{kind} "{name}"'


def load_inputs(
    docs: Sequence[Document],
    warn_unknown: bool = True,
    seed: int | None = None,
    gates: FeatureGates | None = None,
) -> Inputs:
    """Parse and check every object; the first problem raises InputError (nothing is half-processed).

    Workloads (Deployments, ReplicaSets, StatefulSets, Jobs) become the pods their controllers would create,
    and template entries of pending pods without a generated claim get the claim the resourceclaim
    controller would generate; names and uids drawn from `random.Random(seed)` (reproducible with a seed).

    Within one object, what the API server would refuse (a wrong type, a missing required field, a rule of
    its validation) is an InputError naming the object. Unknown fields are warnings in `Inputs.notes`
    (`warn_unknown=False`: the caller has checked them, as `simulate --strict` does). `gates`: the served
    cluster's gates (simulate's `--feature-gates`; the product defaults without), which the ported validation
    honours as the API server does (a ResourceSlice's list attributes need DRAListTypeAttributes).
    """
    inputs = Inputs()
    seen: dict[tuple[str, str, str], str] = {}
    valid_specs: set[int] = set()
    admin = admin_namespaces(docs)
    for doc in docs:
        kind = doc.kind
        where = doc.where
        if kind not in KINDS:
            reads = ", ".join(KINDS)
            inputs.notes.append(f"{where}: skipping {kind} {doc.name!r}: simulate reads {reads}")
            continue
        api_version, model = KINDS[kind]
        if doc.api_version != api_version:
            raise InputError(
                f"{where}: {_label(kind, doc.obj)}: apiVersion {doc.api_version!r} is not supported "
                f"(use {api_version})"
            )
        parts = _shared_parts(kind, doc.obj, doc.finite)
        known = known_kind(api_version, kind)
        release_name = (gates or FeatureGates.defaults()).release
        report = check_fields(api_version, kind, doc.obj, parts, release_name) if known else None
        if report is not None and report.unknown and warn_unknown:
            label = _label(kind, doc.obj)
            inputs.notes.extend(f'{where}: {label}: warning: unknown field "{p}"' for p in report.unknown)
        problem_at = report.problem if report is not None else None
        ported = kind in VALIDATORS
        if problem_at is not None and not (ported and problem_at.message.startswith("Required value")):
            raise InputError(f"{where}: {_label(kind, doc.obj)}: {problem_at.path}: {problem_at.message}")
        if ported:  # upstream's validation judges what decodes, a missing field included
            namespace = _namespace(doc.obj)
            problem = ported_problem(kind, doc.obj, admin.allows(namespace), gates)
            if (
                namespace not in admin.given
                and kind in CLAIM_VALIDATORS
                and _asks_admin_access(kind, doc.obj)
            ):
                inputs.notes.append(
                    f"{where}: {_label(kind, doc.obj)}: warning: asks for admin access, but namespace "
                    f'"{namespace}" is not in the input: its `{ADMIN_ACCESS_LABEL}: true` label, which the '
                    "API server requires, is not checked"
                )
            if problem is not None:
                raise InputError(f"{where}: {_label(kind, doc.obj)}: {problem[0]}: {problem[1]}")
            if problem_at is not None:
                raise InputError(f"{where}: {_label(kind, doc.obj)}: {problem_at.path}: {problem_at.message}")
        try:
            obj = _validate(model, kind, doc.obj, parts)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(
                f"{where}: {_label(kind, doc.obj)}: {field_path(model, err['loc'])}: {error_message(err)}"
            ) from None
        meta = getattr(obj, "metadata")  # noqa: B009 - every model here has metadata
        if not meta.name:
            raise InputError(f"{where}: {_label(kind, doc.obj)}: metadata.name: Required value")
        ns = (meta.namespace or "default") if kind in _NAMESPACED else ""
        label = _named(kind, ns, meta.name)
        key = (kind, ns, meta.name)
        if key in seen:
            raise InputError(f"{where}: {label}: duplicate object (first defined at {seen[key]})")
        seen[key] = where
        problem = None if ported else object_problem(obj, doc.obj, valid_specs)
        if problem is None and kind == "ResourceClaim":
            problem = claim_status_problem(doc.obj, gates)
        if problem is not None:
            raise InputError(f"{where}: {label}: {problem[0]}: {problem[1]}")
        inputs.where[id(obj)] = f"{where}: {label}"
        # by kind (one model each, KINDS), the most numerous first: a dump's pods, nodes and slices
        if kind == "Pod":
            inputs.pods.append(obj)
        elif kind == "Node":
            inputs.nodes.append(obj)
        elif kind == "ResourceSlice":
            inputs.slices.append(obj)
        elif kind == "DeviceClass":
            inputs.classes.append(obj)
        elif kind == "ResourceClaim":
            inputs.claims.append(obj)
        elif kind == "Namespace":
            inputs.namespaces.append(obj)
        elif kind == "ResourceClaimTemplate":
            inputs.templates[(ns, meta.name)] = obj
        elif kind == "PodDisruptionBudget":
            inputs.pdbs.append(obj)
        elif kind in STORAGE_KINDS:
            inputs.storage.append(_defaulted_storage(kind, doc.obj))
        elif kind == "DeviceTaintRule":
            inputs.taint_rules.append(obj)
        else:  # Deployment, ReplicaSet, StatefulSet, Job
            inputs.workloads.append(obj)
    rng = random.Random(seed)
    _expand_workloads(inputs, rng)
    _check_references(inputs, rng)
    return inputs


def _defaulted_storage(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A storage object with `kind` and the API server's defaults the volume plugins read: a StorageClass's
    volumeBindingMode (Immediate), a namespaced object's namespace (default)."""
    out = {**raw, "kind": kind}
    meta = dict(out.get("metadata") or {})
    if kind in NAMESPACED_STORAGE_KINDS and not meta.get("namespace"):
        meta["namespace"] = "default"
    out["metadata"] = meta
    if kind == "StorageClass" and not out.get("volumeBindingMode"):
        out["volumeBindingMode"] = "Immediate"
    return out


# Top-level fields that the objects of a kind repeat verbatim: the pods of one ReplicaSet, Job or
# StatefulSet share their spec and, while pending, their status. Each distinct one is checked and validated
# once, and the pods share its model (input objects are never modified).
SHARED_PARTS: dict[str, tuple[str, ...]] = {"Pod": ("spec", "status")}
_SHARED_MAX = 4096  # distinct parts remembered; starts over when full
_shared: dict[tuple[str, str, bytes], BaseModel] = {}


def _shared_parts(kind: str, raw: dict[str, Any], finite: bool = False) -> dict[str, bytes] | None:
    """The JSON text of each of the object's repeated parts (resourceapi.manifests.interning.json_key), None
    if none;
    `finite`: the object holds finite numbers and lists and dicts only
    (resourceapi.manifests.documents.Document)."""
    names = SHARED_PARTS.get(kind)
    if names is None:
        return None
    parts: dict[str, bytes] = {}
    for name in names:
        value = raw.get(name)
        key = json_key(value, finite) if value.__class__ is dict else None
        if key is not None:
            parts[name] = key
    return parts or None


def _validate(model: type[BaseModel], kind: str, raw: dict[str, Any], parts: dict[str, bytes] | None) -> Any:
    """`model.model_validate(raw)`, with the repeated parts' models shared: when every part was validated
    before, the rest is validated with the parts' models in their place (their errors, if any, were raised
    then)."""
    if parts is None:
        return model.model_validate(raw)
    known = {name: _shared.get((kind, name, key)) for name, key in parts.items()}
    if all(m is not None for m in known.values()):
        return model.model_validate({**raw, **known})  # a model instance is taken as it is
    obj = model.model_validate(raw)
    if len(_shared) + len(parts) > _SHARED_MAX:
        _shared.clear()
    for name, key in parts.items():
        _shared[(kind, name, key)] = getattr(obj, name)
    return obj


def _expand_workloads(inputs: Inputs, rng: random.Random) -> None:
    """Each workload's pods join the input's pods, after the input's own, in workload order."""
    for w in inputs.workloads:
        for i, pod in enumerate(expand(w, rng)):
            problem = pod_problem(pod)
            if problem is not None:
                raise InputError(f"{inputs.where[id(w)]}: spec.template.{problem[0]}: {problem[1]}")
            inputs.where[id(pod)] = f'{inputs.where[id(w)]}: replica {i}: Pod "{pod.namespace}/{pod.name}"'
            inputs.pods.append(pod)


@dataclass(frozen=True)
class AdminNamespaces:
    """The input's namespaces (`given`) and those of them labeled for admin access to devices
    (`resource.kubernetes.io/admin-access: "true"`, `labeled`)."""

    given: frozenset[str]
    labeled: frozenset[str]

    def allows(self, namespace: str) -> bool:
        """Whether a claim in `namespace` is judged with admin access allowed: the namespace is labeled, or
        it is not in the input (simulate judges only what it is given; the caller warns)."""
        return namespace in self.labeled or namespace not in self.given


def admin_namespaces(docs: Sequence[Document]) -> AdminNamespaces:
    """The input's namespaces and which are labeled for admin access: claims there may ask for it, as the
    API server's claim strategy allows."""
    given: set[str] = set()
    labeled: set[str] = set()
    for doc in docs:
        meta = doc.obj.get("metadata") if doc.kind == "Namespace" else None
        if not isinstance(meta, dict):
            continue
        name = str(meta.get("name") or "")
        given.add(name)
        labels = meta.get("labels")
        if isinstance(labels, dict) and labels.get(ADMIN_ACCESS_LABEL) == "true":
            labeled.add(name)
    return AdminNamespaces(frozenset(given), frozenset(labeled))


def _asks_admin_access(kind: str, raw: dict[str, Any]) -> bool:
    """Whether a claim's (or a template's claim's) request asks for admin access."""
    spec = raw.get("spec")
    if kind == "ResourceClaimTemplate" and isinstance(spec, dict):
        spec = spec.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    return isinstance(devices, dict) and bool(admin_access_errors(devices, False))


def _namespace(raw: dict[str, Any]) -> str:
    meta = raw.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


def object_problem(
    obj: BaseModel, raw: dict[str, Any], valid_specs: set[int] | None = None
) -> tuple[str, str] | None:
    """The first within-object rule the API server would refuse `obj` for: upstream's whole validation
    where it is ported (resourceapi.validation.objects), else simulate's subset (objectchecks).
    `valid_specs`: the ids of pod specs found valid so far in this run (the pods of one ReplicaSet share
    theirs: _validate), each checked once; the caller holds the specs, so their ids are not reused."""
    kind = type(obj).__name__
    if kind in VALIDATORS:
        return ported_problem(kind, raw)
    if isinstance(obj, DeviceTaintRule):
        return taint_rule_problem(raw)
    if isinstance(obj, Pod):
        if valid_specs is not None and id(obj.spec) in valid_specs:
            return None
        problem = pod_problem(obj)  # which reads the spec alone
        if problem is None and valid_specs is not None:
            valid_specs.add(id(obj.spec))
        return problem
    return None


def taint_rule_problem(raw: dict[str, Any]) -> tuple[str, str] | None:
    """A DeviceTaintRule's taint as the API server judges a device taint (`validateDeviceTaint`: the key, the
    value, then the effect's declarative rules)."""
    spec = raw.get("spec") if isinstance(raw.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    taint = spec.get("taint") if isinstance(spec.get("taint"), dict) else {}
    assert isinstance(taint, dict)
    path = Path("spec").child("taint")
    errors = taint_errors(taint, path) + taint_declarative(taint, path)
    return (errors[0].field, errors[0].body()) if errors else None


def ported_problem(
    kind: str, raw: dict[str, Any], admin_namespace: bool = False, gates: FeatureGates | None = None
) -> tuple[str, str] | None:
    """The first error of upstream's validation of a kind it ports (resourceapi.validation.objects); for a
    slice in the v1beta1 shape, simulate's guidance first (the API server drops, or strictly refuses, `basic`,
    and would then report the device's missing fields). `admin_namespace`: a claim's or template's namespace
    is labeled for admin access. `gates`: the served cluster's (the product defaults when None)."""
    if kind == "ResourceSlice":
        problem = v1beta1_slice_problem(raw)
        if problem is not None:
            return problem
    if admin_namespace and kind in CLAIM_VALIDATORS:
        errors: list[FieldError] | None = CLAIM_VALIDATORS[kind](raw, gates or FeatureGates.defaults())
    else:
        errors = validate_create(kind, raw, gates)
    return (errors[0].field, errors[0].body()) if errors else None


def claim_status_errors(raw: dict[str, Any], gates: FeatureGates | None = None) -> list[FieldError]:
    """A claim's status judged as the API server judges writing it to the same claim unallocated (a status
    update from an empty status): what simulate reads as committed state must be a status the server could
    have accepted. [] without a status.

    The claim is taken as it was before any deletion began (its reservations were written then), and the
    namespace's admin-access label is not checked (a label removed since does not undo an allocation)."""
    if raw.get("status") is None:
        return []
    unallocated = {key: value for key, value in raw.items() if key != "status"}
    meta = raw.get("metadata")
    if isinstance(meta, dict) and "deletionTimestamp" in meta:
        unallocated["metadata"] = {k: v for k, v in meta.items() if k != "deletionTimestamp"}
    return validate_status_update(raw, unallocated, gates)


def claim_status_problem(raw: dict[str, Any], gates: FeatureGates | None = None) -> tuple[str, str] | None:
    """The first of `claim_status_errors`, as (field path, message)."""
    errors = claim_status_errors(raw, gates)
    return (errors[0].field, errors[0].body()) if errors else None


def _check_references(inputs: Inputs, rng: random.Random) -> None:
    """Cross-object checks that stand in for admission: the capacity carrier, and pod claim references
    (the scheduler never sees a pod whose claims cannot be resolved). What a cluster can hold across objects
    (pools inconsistent across slices, a claim naming a missing DeviceClass) is reported per claim."""
    for dc in inputs.classes:
        try:
            class_capacity_requests(dc)
        except CapacityCarrierError as exc:
            raise InputError(f"{inputs.where[id(dc)]}: {exc}") from None
    inputs.claims_by_key = {(c.metadata.namespace or "default", c.metadata.name): c for c in inputs.claims}
    claims = inputs.claims_by_key
    checked: set[int] = set()  # specs found valid (pods of one ReplicaSet share theirs: _validate)
    for p in inputs.pods:
        if id(p.spec) not in checked:
            _check_pod_resources(inputs.where[id(p)], p)
            checked.add(id(p.spec))
        if p.spec.node_name:
            continue  # running: it holds node resources; its claims count only through their allocations
        claim_names: list[str] = []
        entries: list[tuple[str, str | None]] = []
        generated: list[tuple[str, str]] = []
        for i, rc in enumerate(p.spec.resource_claims or []):
            name = _claim_name(inputs.where[id(p)], i, p, rc, inputs.templates)
            if name is _GENERATE:
                claim = _generate(inputs, p, i, rc, rng)
                name = claim.metadata.name
                generated.append((rc.name, name))
            entries.append((rc.name, name))
            if name is None:
                continue
            if (p.namespace, name) not in claims:
                field = "resourceClaimName" if rc.resource_claim_name else "resourceClaimTemplateName"
                raise InputError(
                    f"{inputs.where[id(p)]}: spec.resourceClaims[{i}].{field}: Not found: "
                    f'"{name}" (no ResourceClaim of that name in namespace {p.namespace})'
                )
            claim_names.append(name)
        inputs.claim_names[id(p)] = tuple(claim_names)
        inputs.entries[id(p)] = tuple(entries)
        if generated:
            inputs.generated[id(p)] = tuple(generated)


_GENERATE = "\0generate"  # _claim_name's answer for a template entry whose claim is to be generated


def _generate(
    inputs: Inputs, pod: Pod, index: int, rc: PodResourceClaim, rng: random.Random
) -> ResourceClaim:
    """The claim the resourceclaim controller would create for the pod's template entry, added to input."""
    template = inputs.templates[(pod.namespace, rc.resource_claim_template_name or "")]
    claim = claim_from_template(pod, rc.name, template, rng)
    where = inputs.where[id(pod)]  # the template's spec was validated as a claim's (spec.spec) when read
    inputs.claims.append(claim)
    inputs.claims_by_key[(pod.namespace, claim.metadata.name)] = claim
    inputs.where[id(claim)] = f'{where}: ResourceClaim "{pod.namespace}/{claim.metadata.name}" (generated)'
    return claim


def _claim_name(
    where: str,
    index: int,
    pod: Pod,
    rc: PodResourceClaim,
    templates: dict[tuple[str, str], ResourceClaimTemplate],
) -> str | None:
    """The ResourceClaim a pod's entry stands for, as upstream's resourceclaim.Name: its `resourceClaimName`,
    or for a template the claim the controller generated, named in `status.resourceClaimStatuses` (None: the
    template needs no claim), or `_GENERATE` when the controller has yet to generate it from a template in
    the input."""
    if rc.resource_claim_name:
        return rc.resource_claim_name
    path = f"{where}: spec.resourceClaims[{index}]"
    if not rc.resource_claim_template_name:
        raise InputError(
            f'{path}: Invalid value: "{rc.name}": must specify one of: `resourceClaimName`, '
            "`resourceClaimTemplateName`"
        )
    for status in _claim_statuses(pod):
        if status.get("name") == rc.name:
            generated = status.get("resourceClaimName")
            return generated if isinstance(generated, str) and generated else None
    if (pod.namespace, rc.resource_claim_template_name) in templates:
        return _GENERATE
    raise InputError(
        f"{path}.resourceClaimTemplateName: Not found: "
        f'"{rc.resource_claim_template_name}" (no ResourceClaimTemplate of that name in namespace '
        f'{pod.namespace}, and status.resourceClaimStatuses has no entry "{rc.name}")'
    )


def _claim_statuses(pod: Pod) -> list[dict[str, Any]]:
    extra = (pod.status.model_extra or {}) if pod.status is not None else {}
    raw = extra.get("resourceClaimStatuses")
    return [s for s in raw if isinstance(s, dict)] if isinstance(raw, list) else []


def _check_pod_resources(where: str, pod: Pod) -> None:
    """What the API server's pod validation guarantees the scheduler: quantities are not negative, and
    extended resources (counted in whole devices) are integers. Limits first: a request defaulted from a
    limit is reported where the user wrote it."""
    for kind, containers in (
        ("initContainers", pod.spec.init_containers or []),
        ("containers", pod.spec.containers),
    ):
        for i, c in enumerate(containers):
            for part, values in (("limits", c.resources.limits), ("requests", c.resources.requests)):
                for name, q in (values or {}).items():
                    if q.sign() < 0:
                        message = "must be greater than or equal to 0"
                    elif is_dra_extended_resource_name(name) and not q.is_integer():
                        message = "must be an integer"
                    else:
                        continue
                    path = f"{where}: spec.{kind}[{i}].resources.{part}[{name}]"
                    raise InputError(f'{path}: Invalid value: "{q}": {message}')


def pod_claims(inputs: Inputs, pod: Pod) -> list[ResourceClaim]:
    """A pending pod's own ResourceClaims, in spec.resourceClaims order (templates: the generated claims)."""
    by_key = inputs.claims_by_key
    return [by_key[(pod.namespace, name)] for name in inputs.claim_names.get(id(pod), ())]


def scheduling_pod(inputs: Inputs, pod: Pod) -> Pod:
    """The pod as the scheduler sees it once the claim controller has made its claims: template entries
    point at their generated claims (entries that need none are gone). A copy; the input pod is unchanged."""
    entries = pod.spec.resource_claims or []
    if not any(rc.resource_claim_template_name for rc in entries):
        return pod
    resolved: list[PodResourceClaim] = []
    for entry, name in inputs.entries.get(id(pod), ()):
        if name is not None:
            resolved.append(PodResourceClaim(name=entry, resource_claim_name=name))
    return pod.model_copy(update={"spec": pod.spec.model_copy(update={"resource_claims": resolved})})


@dataclass(frozen=True)
class ObjectProblem:
    """Why simulate's input checks refuse one object, staged as the API server refuses it: `decode` (the
    request body cannot become the object: an unknown field under strict field validation, a wrong JSON type,
    a bad quantity; HTTP 400) or `validate` (a validation rule; HTTP 422 with this cause)."""

    stage: str
    path: str
    message: str


DECODE, VALIDATE = "decode", "validate"


def check_object(
    kind: str,
    raw: dict[str, Any],
    strict: bool = True,
    judge_status: bool = True,
    gates: FeatureGates | None = None,
) -> list[ObjectProblem]:
    """Simulate's per-object input checks (`load_inputs`, in its order) on one raw object of a kind simulate
    reads, as a library entry, staged as the API server answers: the first wrong type or bad quantity, then
    the unknown fields (each a problem when `strict`), then, for a kind whose validation is ported
    (resourceapi.validation.objects), every error upstream's validation reports (a null there is Go's zero
    value, not a decode error); for another kind, the first missing required field, then the first
    within-object rule (objectchecks). [] when simulate accepts the object. References between objects are
    not checked here (they need the whole input). A ResourceClaim's status is judged as a status update
    (`claim_status_errors`) unless `judge_status` is false (a create: the API server wipes the status)."""
    if kind not in KINDS:
        raise ValueError(f"simulate does not read {kind}")
    api_version, model = KINDS[kind]
    release_name = (gates or FeatureGates.defaults()).release
    report = (
        check_fields(api_version, kind, raw, None, release_name) if known_kind(api_version, kind) else None
    )
    # The API server decodes first (a wrong type or a bad quantity ends it), then names unknown fields.
    problem = report.problem if report is not None else None
    if problem is not None and not problem.message.startswith("Required value"):
        return [ObjectProblem(DECODE, problem.path, problem.message)]
    missing: ObjectProblem | None = None
    try:
        obj = model.model_validate(raw)
    except ValidationError as exc:
        errs = exc.errors()
        if kind in VALIDATORS:  # Go decodes a null into the zero value, which the validation judges
            errs = [e for e in errs if e["type"] != "missing" and e.get("input") is not None] or errs
        err = errs[0]
        if err["type"] != "missing" and (kind not in VALIDATORS or err.get("input") is not None):
            return [ObjectProblem(DECODE, field_path(model, err["loc"]), error_message(err))]
        missing = ObjectProblem(VALIDATE, field_path(model, err["loc"]), error_message(err))
    if strict and report is not None and report.unknown:
        return [ObjectProblem(DECODE, p, f'unknown field "{p}"') for p in report.unknown]
    status = claim_status_errors(raw) if judge_status and kind == "ResourceClaim" else []
    ported = validate_create(kind, raw, gates)  # upstream judges a missing field and generateName too
    if ported is not None:
        return [ObjectProblem(VALIDATE, e.field, e.body()) for e in ported or status]
    if problem is not None:
        return [ObjectProblem(VALIDATE, problem.path, problem.message)]
    if missing is not None:
        return [missing]
    if not getattr(obj, "metadata").name:  # noqa: B009 - every model here has metadata
        return [ObjectProblem(VALIDATE, "metadata.name", "Required value: name or generateName is required")]
    rule = object_problem(obj, raw)
    if rule is None:
        return [ObjectProblem(VALIDATE, e.field, e.body()) for e in status]
    return [ObjectProblem(VALIDATE, rule[0], rule[1])]
