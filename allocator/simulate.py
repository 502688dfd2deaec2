"""`dra-capacity simulate`: what-if allocation and placement, offline (shared/spec/cli-contract.md).

Input objects are loaded and checked whole first (`load_inputs`, raising `InputError` that names file,
document and field); only then does anything run. Claim mode allocates every unallocated claim together on one
node; pod mode places pending pods one at a time with the same `Placer` the binder uses.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from allocator.cluster import Cluster, NodeInfo
from allocator.ids import DeviceID
from allocator.placement import REASON_CANNOT_ALLOCATE, Placement, Placer, Strategy
from resourceapi.core_v1 import Node, Pod, PodResourceClaim
from resourceapi.documents import Document
from resourceapi.extended import (
    CapacityCarrierError,
    ExtendedResourceResolver,
    class_capacity_requests,
    is_dra_extended_resource_name,
)
from resourceapi.gates import FeatureGates
from resourceapi.jsontypes import json_type
from resourceapi.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimStatus, ResourceSlice

RESOURCE_API = "resource.k8s.io/v1"
_KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "DeviceClass": (RESOURCE_API, DeviceClass),
    "ResourceSlice": (RESOURCE_API, ResourceSlice),
    "ResourceClaim": (RESOURCE_API, ResourceClaim),
    "Node": ("v1", Node),
    "Pod": ("v1", Pod),
}


class InputError(ValueError):
    """Unusable simulate input; the message names file, document, object and field."""


class UsageError(ValueError):
    """A usage problem found only once the input is known (e.g. several Nodes and no --node)."""


@dataclass
class Inputs:
    """The checked input objects, in input order, each with where it came from."""

    classes: list[DeviceClass] = field(default_factory=list)
    slices: list[ResourceSlice] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    where: dict[int, str] = field(default_factory=dict)  # id(object) -> "file: document N"

    def pending_pods(self) -> list[Pod]:
        """Pods to place: no node yet, and not being deleted (the scheduler skips those, too)."""
        return [p for p in self.pods if not p.spec.node_name and not p.metadata.deletion_timestamp]

    def unallocated_claims(self) -> list[ResourceClaim]:
        return [c for c in self.claims if c.status is None or c.status.allocation is None]

    def allocated_claims(self) -> list[ResourceClaim]:
        return [c for c in self.claims if c.status is not None and c.status.allocation is not None]


def _field_path(model: type[BaseModel], loc: Sequence[int | str]) -> str:
    """A pydantic error location as a Kubernetes field path: `spec.containers[0].resources.requests[cpu]`."""
    out = ""
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(part, int) or origin is dict:
            out += f"[{part}]"
            args = typing.get_args(tp)
            tp = args[-1] if args else Any
        elif isinstance(tp, type) and issubclass(tp, BaseModel):
            out = f"{out}.{part}" if out else part
            info = next((f for name, f in tp.model_fields.items() if part in (f.alias, name)), None)
            tp = info.annotation if info else Any
        else:
            out = f"{out}.{part}" if out else part
            tp = Any
    return out


def _unwrap(tp: Any) -> Any:
    """Strip Optional / Annotated; lists become their item type only when indexed (handled by the caller)."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if args else Any
        elif origin is list:
            return tp
        else:
            return tp


# pydantic error types that mean "this JSON value has the wrong type", and the JSON type that was expected.
_EXPECTED_TYPES = {
    "string_type": "string",
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "list_type": "array",
}


def _message(err: Any) -> str:
    """A pydantic error in the webhook's (and the API server's) words: `Required value`, `Invalid value:
    "boolean": must be of type string`; other errors (a bad quantity) keep their own message."""
    if err["type"] == "missing":
        return "Required value"
    expected = _EXPECTED_TYPES.get(err["type"])
    if expected is not None:
        return f'Invalid value: "{json_type(err.get("input"))}": must be of type {expected}'
    msg = str(err["msg"]).removeprefix("Value error, ")
    value = err.get("input")
    if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return f'Invalid value: "{value}": {msg}'
    return msg


def _label(kind: str, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    ns = meta.get("namespace") or "default"  # where the object would be created, as the rest of the output
    return f'{kind} "{ns}/{name}"' if kind in ("ResourceClaim", "Pod") else f'{kind} "{name}"'


def load_inputs(docs: Sequence[Document]) -> Inputs:
    """Parse and cross-check every object; the first problem raises InputError (nothing is half-processed)."""
    inputs = Inputs()
    seen: dict[tuple[str, str, str], str] = {}
    for doc in docs:
        kind = doc.kind
        if kind not in _KINDS:
            raise InputError(f"{doc.where}: unsupported kind {kind!r} (simulate reads {', '.join(_KINDS)})")
        api_version, model = _KINDS[kind]
        label = _label(kind, doc.obj)
        if doc.api_version != api_version:
            raise InputError(
                f"{doc.where}: {label}: apiVersion {doc.api_version!r} is not supported (use {api_version})"
            )
        try:
            obj = model.model_validate(doc.obj)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(
                f"{doc.where}: {label}: {_field_path(model, err['loc'])}: {_message(err)}"
            ) from None
        meta = getattr(obj, "metadata")  # noqa: B009 - every model here has metadata
        if not meta.name:
            raise InputError(f"{doc.where}: {label}: metadata.name: Required value")
        ns = (meta.namespace or "default") if kind in ("ResourceClaim", "Pod") else ""
        key = (kind, ns, meta.name)
        if key in seen:
            raise InputError(f"{doc.where}: {label}: duplicate object (first defined at {seen[key]})")
        seen[key] = doc.where
        inputs.where[id(obj)] = f"{doc.where}: {label}"
        if isinstance(obj, DeviceClass):
            inputs.classes.append(obj)
        elif isinstance(obj, ResourceSlice):
            inputs.slices.append(obj)
        elif isinstance(obj, ResourceClaim):
            inputs.claims.append(obj)
        elif isinstance(obj, Node):
            inputs.nodes.append(obj)
        elif isinstance(obj, Pod):
            inputs.pods.append(obj)
    _check_references(inputs)
    return inputs


def _check_references(inputs: Inputs) -> None:
    """Cross-object checks: carriers, duplicate devices per pool, class and claim references."""
    for dc in inputs.classes:
        try:
            class_capacity_requests(dc)
        except CapacityCarrierError as exc:
            raise InputError(f"{inputs.where[id(dc)]}: {exc}") from None
    devices: dict[tuple[str, str, int], dict[str, str]] = {}
    for s in inputs.slices:
        pool = (s.spec.driver, s.spec.pool.name, s.spec.pool.generation)
        names = devices.setdefault(pool, {})
        for i, d in enumerate(s.spec.devices or []):
            if d.name in names:
                raise InputError(
                    f'{inputs.where[id(s)]}: spec.devices[{i}].name: Duplicate value: "{d.name}" '
                    f"(pool {s.spec.driver}/{s.spec.pool.name} already has it, from {names[d.name]})"
                )
            names[d.name] = f"ResourceSlice {s.metadata.name}"
    class_names = {c.metadata.name for c in inputs.classes}
    for c in inputs.claims:
        for i, r in enumerate(c.spec.devices.requests or []):
            subs = [("exactly", r.exactly.device_class_name)] if r.exactly else []
            subs += [
                (f"firstAvailable[{j}]", s.device_class_name) for j, s in enumerate(r.first_available or [])
            ]
            for path, cls in subs:
                if cls not in class_names:
                    raise InputError(
                        f"{inputs.where[id(c)]}: spec.devices.requests[{i}].{path}.deviceClassName: "
                        f'Not found: "{cls}" (no DeviceClass of that name in the input)'
                    )
    claims = {(c.metadata.namespace or "default", c.metadata.name) for c in inputs.claims}
    for p in inputs.pods:
        _check_pod_resources(inputs.where[id(p)], p)
        if p.spec.node_name:
            continue  # running: it holds node resources; its claims count only through their allocations
        for i, rc in enumerate(p.spec.resource_claims or []):
            name = _claim_name(inputs.where[id(p)], i, p, rc)
            if name is not None and (p.namespace, name) not in claims:
                field = "resourceClaimName" if rc.resource_claim_name else "resourceClaimTemplateName"
                raise InputError(
                    f"{inputs.where[id(p)]}: spec.resourceClaims[{i}].{field}: Not found: "
                    f'"{name}" (no ResourceClaim of that name in namespace {p.namespace})'
                )
        _resolve_templates(p)


def _claim_name(where: str, index: int, pod: Pod, rc: PodResourceClaim) -> str | None:
    """The ResourceClaim a pod's entry stands for, as upstream's resourceclaim.Name: its `resourceClaimName`,
    or for a template the claim the controller generated, named in `status.resourceClaimStatuses` (None: the
    template needs no claim)."""
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
    raise InputError(
        f"{path}.resourceClaimTemplateName: Not found: the claim generated from template "
        f'"{rc.resource_claim_template_name}" (status.resourceClaimStatuses has no entry "{rc.name}"; '
        "simulate reads ResourceClaims, not templates: give the generated claim and the pod's status, as "
        "kubectl get prints them, or reference a claim by resourceClaimName)"
    )


def _claim_statuses(pod: Pod) -> list[dict[str, Any]]:
    extra = (pod.status.model_extra or {}) if pod.status is not None else {}
    raw = extra.get("resourceClaimStatuses")
    return [s for s in raw if isinstance(s, dict)] if isinstance(raw, list) else []


def _resolve_templates(pod: Pod) -> None:
    """Point template entries at their generated claims (dropping the ones that need none), so that placement
    sees only ResourceClaim references, as the scheduler does once the controller has made the claims."""
    if not any(rc.resource_claim_template_name for rc in pod.spec.resource_claims or []):
        return
    resolved: list[PodResourceClaim] = []
    for i, rc in enumerate(pod.spec.resource_claims or []):
        name = _claim_name("", i, pod, rc)
        if name is not None:
            resolved.append(PodResourceClaim(name=rc.name, resource_claim_name=name))
    pod.spec.resource_claims = resolved


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
                    path = f"{where}: spec.{kind}[{i}].resources.{part}[{name}]"
                    if q.sign() < 0:
                        raise InputError(f'{path}: Invalid value: "{q}": must be greater than or equal to 0')
                    if is_dra_extended_resource_name(name) and not q.is_integer():
                        raise InputError(f'{path}: Invalid value: "{q}": must be an integer')


def pod_claims(inputs: Inputs, pod: Pod) -> list[ResourceClaim]:
    """The pod's own ResourceClaims, in spec.resourceClaims order."""
    by_key = {(c.metadata.namespace or "default", c.metadata.name): c for c in inputs.claims}
    return [
        by_key[(pod.namespace, rc.resource_claim_name)]
        for rc in pod.spec.resource_claims or []
        if rc.resource_claim_name
    ]


def _claim_entry(claim: ResourceClaim) -> dict[str, Any]:
    allocation = claim.status.allocation if claim.status else None
    return {
        "namespace": claim.metadata.namespace or "default",
        "name": claim.metadata.name,
        "allocation": allocation.to_api() if allocation else None,
    }


def run_claims(inputs: Inputs, gates: FeatureGates, node_name: str | None) -> tuple[dict[str, Any], Cluster]:
    """Claim mode: every unallocated claim, together, all-or-nothing, on one node."""
    if node_name is None:
        if len(inputs.nodes) != 1:
            raise UsageError(
                f"claim mode needs a node: the input has {len(inputs.nodes)} Nodes; pick one with --node NAME"
            )
        node_name = inputs.nodes[0].name
    node = next((n for n in inputs.nodes if n.name == node_name), None)
    info = NodeInfo(node_name, dict(node.labels) if node else {})
    cluster = Cluster(gates, inputs.classes, inputs.slices, inputs.allocated_claims())
    claims = [c.model_copy(deep=True) for c in inputs.unallocated_claims()]
    for c in claims:
        c.metadata.namespace = c.metadata.namespace or "default"
    alloc = cluster.allocate(info, claims)
    out: dict[str, Any] = {"mode": "claims", "node": node_name}
    if alloc.error is not None:
        out.update(result="error" if not alloc.node_failure else "unschedulable", reason=alloc.error)
        results = None
    elif alloc.results is None:
        out.update(result="unschedulable", reason=REASON_CANNOT_ALLOCATE)
        results = None
    else:
        out.update(result="allocated", reason="")
        results = alloc.results
    entries = []
    for i, c in enumerate(claims):
        if results is not None:
            c.status = ResourceClaimStatus(allocation=results[i])
            cluster.commit(c, results[i])
        entries.append(_claim_entry(c))
    out["claims"] = entries
    return out, cluster


def run_pods(
    inputs: Inputs, gates: FeatureGates, strategy: Strategy, node_name: str | None = None
) -> tuple[dict[str, Any], Cluster]:
    """Pod mode: pending pods placed one at a time, in input order, each seeing the ones before it."""
    nodes = [n for n in inputs.nodes if node_name is None or n.name == node_name]
    if node_name is not None and not nodes:
        raise UsageError(f"--node {node_name}: pod mode needs a Node of that name in the input")
    cluster = Cluster(gates, inputs.classes, inputs.slices, inputs.allocated_claims())
    resolver = ExtendedResourceResolver(inputs.classes, gates)
    running = [p for p in inputs.pods if p.spec.node_name]
    placer = Placer(cluster, gates, resolver, nodes, inputs.slices, running, strategy)
    entries = []
    for pod in inputs.pending_pods():
        placement = placer.place(pod, pod_claims(inputs, pod))
        placer.commit(placement)
        entries.append(_pod_entry(placement))
    return {"mode": "pods", "pods": entries}, cluster


def _pod_entry(p: Placement) -> dict[str, Any]:
    status = p.extended_status
    entry: dict[str, Any] = {
        "namespace": p.pod.namespace,
        "name": p.pod.name,
        "result": p.result,
        "reason": p.reason,
        "node": p.node,
        "claim": p.claim.to_api() if p.claim is not None and p.result == "bound" else None,
        "extendedResourceClaimStatus": status.to_api()
        if status is not None and p.result == "bound"
        else None,
    }
    if p.user_claims:
        entry["claims"] = [_claim_entry(c) for c in p.user_claims]
    return entry


# --- table output -------------------------------------------------------------------------------------------


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["   ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _share_rows(owner: str, result: str, node: str, allocation: dict[str, Any] | None) -> list[list[str]]:
    rows: list[list[str]] = []
    for d in ((allocation or {}).get("devices") or {}).get("results") or []:
        consumed = ",".join(f"{k}={v}" for k, v in sorted((d.get("consumedCapacity") or {}).items()))
        share = d.get("shareID")
        rows.append(
            [
                owner,
                result,
                node,
                d["request"],
                f"{d['driver']}/{d['pool']}/{d['device']}",
                share[:8] if share else "-",
                consumed or "-",
            ]
        )
    return rows


def render_table(out: dict[str, Any], cluster: Cluster, slices: Sequence[ResourceSlice]) -> str:
    """People's view: a row per allocated device share, then capacity used/total per device after the run."""
    lines: list[str] = []
    rows = [
        [
            "POD" if out["mode"] == "pods" else "CLAIM",
            "RESULT",
            "NODE",
            "REQUEST",
            "DEVICE",
            "SHARE",
            "CONSUMED",
        ]
    ]
    notes: list[str] = []
    if out["mode"] == "claims":
        for c in out["claims"]:
            owner = f"{c['namespace']}/{c['name']}"
            share_rows = _share_rows(owner, out["result"], out["node"], c["allocation"])
            rows.extend(share_rows or [[owner, out["result"], out["node"], "-", "-", "-", "-"]])
        if out["result"] != "allocated":
            notes.append(f"{out['result']}: {out['reason']}")
    else:
        for p in out["pods"]:
            owner = f"{p['namespace']}/{p['name']}"
            node = p["node"] or "-"
            pod_rows: list[list[str]] = []
            for c in p.get("claims") or []:
                pod_rows.extend(_share_rows(owner, p["result"], node, c["allocation"]))
            if p["claim"] is not None:
                pod_rows.extend(
                    _share_rows(owner, p["result"], node, (p["claim"].get("status") or {}).get("allocation"))
                )
            rows.extend(pod_rows or [[owner, p["result"], node, "-", "-", "-", "-"]])
            if p["result"] != "bound":
                notes.append(f"{owner}: {p['result']}: {p['reason']}")
    lines.extend(_table(rows))
    if notes:
        lines.append("")
        lines.extend(notes)
    summary = [["DEVICE", "CAPACITY", "USED", "TOTAL"]]
    for s in sorted(slices, key=lambda s: (s.spec.driver, s.spec.pool.name, s.metadata.name)):
        for d in s.spec.devices or []:
            if not d.capacity:
                continue
            device = DeviceID(s.spec.driver, s.spec.pool.name, d.name)
            for cap, (used, total) in sorted(cluster.device_capacity(device).items()):
                summary.append([str(device), cap, str(used), str(total)])
    if len(summary) > 1:
        lines.append("")
        lines.extend(_table(summary))
    return "\n".join(lines) + "\n"
