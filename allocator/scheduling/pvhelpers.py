"""The PV/PVC helpers kube-scheduler's volume plugins share, over raw API objects (decoded JSON).

Follows k8s.io/component-helpers v0.37.2 `storage/volume` (pv_helpers.go, helpers.go: the classes of PVs and
claims, `CheckNodeAffinity`, `FindMatchingVolume`, `GetBindVolumeToClaim`) and `storage/ephemeral` (the
claim of a generic ephemeral volume is `<pod>-<volume>`, owned by the pod).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from allocator.scheduling.labelselectors import selector_matches
from allocator.scheduling.predicates import node_selector_matches
from resourceapi.api.core_v1 import NodeSelector
from resourceapi.api.meta import LabelSelector
from resourceapi.machinery.objects import annotations_of, items, mapping, metadata_of, spec_of, text
from resourceapi.machinery.quantity import Quantity, QuantityError

Obj = Mapping[str, Any]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


def name_of(obj: Obj) -> str:
    return text(metadata_of(obj).get("name"))


def namespace_of(obj: Obj) -> str:
    return text(metadata_of(obj).get("namespace")) or "default"


def uid_of(obj: Obj) -> str:
    return text(metadata_of(obj).get("uid"))


def claim_class(pvc: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName ("": none)."""
    ann = annotations_of(pvc)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return text(ann[BETA_STORAGE_CLASS_ANNOTATION])
    return text(spec_of(pvc).get("storageClassName"))


def volume_class(pv: Obj) -> str:
    """GetPersistentVolumeClass: the beta annotation first, then spec.storageClassName."""
    ann = annotations_of(pv)
    if BETA_STORAGE_CLASS_ANNOTATION in ann:
        return text(ann[BETA_STORAGE_CLASS_ANNOTATION])
    return text(spec_of(pv).get("storageClassName"))


def storage_quantity(values: Any) -> Quantity:
    """`requests[storage]` or `capacity[storage]` (absent or malformed: zero, as an empty Quantity is)."""
    raw = mapping(values).get("storage")
    try:
        return Quantity.parse(str(raw)) if raw is not None else Quantity.parse("0")
    except QuantityError:
        return Quantity.parse("0")


def requested_storage(pvc: Obj) -> Quantity:
    return storage_quantity(mapping(spec_of(pvc).get("resources")).get("requests"))


def is_fully_bound(pvc: Obj) -> bool:
    """isPVCFullyBound: spec.volumeName set and the bind-completed annotation present."""
    return bool(text(spec_of(pvc).get("volumeName"))) and ANN_BIND_COMPLETED in annotations_of(pvc)


def check_node_affinity(pv: Obj, labels: Mapping[str, str]) -> bool:
    """CheckNodeAffinity: the PV's required node affinity matches a node with these labels (and no name, as
    upstream builds it)."""
    return _affinity_ok(pv_info(pv), labels)


def is_volume_bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    ref = mapping(spec_of(pv).get("claimRef"))
    if not ref:
        return False
    if text(ref.get("name")) != name_of(pvc) or (text(ref.get("namespace")) or "default") != namespace_of(
        pvc
    ):
        return False
    ref_uid = text(ref.get("uid"))
    return not ref_uid or ref_uid == uid_of(pvc)


def _volume_mode(spec: Mapping[str, Any]) -> str:
    return text(spec.get("volumeMode")) or "Filesystem"


@dataclass(frozen=True, slots=True)
class PvInfo:
    """What FindMatchingVolume reads of a PV, parsed once (`pv_info`): the loop over nodes and PVs then
    compares plain values."""

    pv: Obj
    name: str
    capacity: Fraction | int  # the exact value (an int when whole: faster to compare)
    volume_class: str
    mode: str
    attributes_class: str
    claim_ref: Mapping[str, Any]
    available: bool
    deleting: bool
    labels: Mapping[str, str]
    affinity: NodeSelector | None
    access_modes: frozenset[str]


_INFOS: dict[int, PvInfo] = {}
_MAX_INFOS = 65536


def pv_info(pv: Obj) -> PvInfo:
    """The PV's `PvInfo`, remembered by identity (an informer's or an input's object is not modified in
    place: a change is a new object)."""
    info = _INFOS.get(id(pv))
    if info is not None and info.pv is pv:
        return info
    spec = spec_of(pv)
    required = mapping(mapping(spec.get("nodeAffinity")).get("required"))
    info = PvInfo(
        pv=pv,
        name=name_of(pv),
        capacity=_exact(storage_quantity(spec.get("capacity"))),
        volume_class=volume_class(pv),
        mode=_volume_mode(spec),
        attributes_class=text(spec.get("volumeAttributesClassName")),
        claim_ref=mapping(spec.get("claimRef")),
        available=text(mapping(pv.get("status")).get("phase")) == "Available",
        deleting=bool(metadata_of(pv).get("deletionTimestamp")),
        labels={k: v for k, v in mapping(metadata_of(pv).get("labels")).items() if isinstance(v, str)},
        affinity=NodeSelector.model_validate(required) if required else None,
        access_modes=frozenset(m for m in items(spec.get("accessModes")) if isinstance(m, str)),
    )
    if len(_INFOS) >= _MAX_INFOS:
        _INFOS.clear()
    _INFOS[id(pv)] = info
    return info


def _exact(q: Quantity) -> Fraction | int:
    v = q.value
    return v.numerator if v.denominator == 1 else v


def _affinity_ok(info: PvInfo, labels: Mapping[str, str]) -> bool:
    return info.affinity is None or node_selector_matches(info.affinity, labels, "")


def _bound_to(ref: Mapping[str, Any], claim: tuple[str, str, str]) -> bool:
    """IsVolumeBoundToClaim for a claim's (namespace, name, uid)."""
    if not ref:
        return False
    if text(ref.get("name")) != claim[1] or (text(ref.get("namespace")) or "default") != claim[0]:
        return False
    ref_uid = text(ref.get("uid"))
    return not ref_uid or ref_uid == claim[2]


def find_matching_volume(
    pvc: Obj, volumes: Iterable[PvInfo], labels: Mapping[str, str], excluded: set[str]
) -> Obj | None:
    """FindMatchingVolume on the scheduler path (a node given, VolumeAttributesClass on: GA): the PV
    pre-bound to the claim if its node affinity fits, else the smallest available PV of the claim's class that
    fits the request, volume mode, attributes class, selector, node affinity and access modes. Candidates are
    taken in name order, so equal sizes resolve to the first name (upstream: the informer index's order).
    The node affinity, the costliest check, comes last, as upstream's comment asks; the outcome is the
    same."""
    spec = spec_of(pvc)
    requested = _exact(requested_storage(pvc))
    requested_class = claim_class(pvc)
    claim = (namespace_of(pvc), name_of(pvc), uid_of(pvc))
    modes = frozenset(m for m in items(spec.get("accessModes")) if isinstance(m, str))
    raw_selector = spec.get("selector")
    selector = LabelSelector.model_validate(raw_selector) if isinstance(raw_selector, dict) else None
    claim_vac = text(spec.get("volumeAttributesClassName"))
    claim_mode = _volume_mode(spec)
    smallest: PvInfo | None = None
    for info in volumes:
        if info.name in excluded:
            continue
        prebound = _bound_to(info.claim_ref, claim)
        if info.claim_ref and not prebound:
            continue
        if info.capacity < requested or claim_mode != info.mode or claim_vac != info.attributes_class:
            continue
        if info.deleting:
            continue
        if prebound:
            return info.pv if _affinity_ok(info, labels) else None
        if not info.available:
            continue
        if selector is not None and not selector_matches(selector, info.labels):
            continue
        if info.volume_class != requested_class or not modes <= info.access_modes:
            continue
        if smallest is not None and not info.capacity < smallest.capacity:
            continue
        if _affinity_ok(info, labels):
            smallest = info
    return smallest.pv if smallest is not None else None


def bind_volume_to_claim(pv: Obj, pvc: Obj) -> dict[str, Any]:
    """GetBindVolumeToClaim: a copy of the PV with claimRef naming the claim, and bound-by-controller set when
    the PV was not pre-bound to it."""
    out = copy.deepcopy(dict(pv))
    prebound = is_volume_bound_to_claim(pv, pvc)
    spec = out.setdefault("spec", {})
    ref = mapping(spec.get("claimRef"))
    if (
        text(ref.get("name")) != name_of(pvc)
        or (text(ref.get("namespace")) or "default") != namespace_of(pvc)
        or text(ref.get("uid")) != uid_of(pvc)
    ):
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace_of(pvc),
            "name": name_of(pvc),
            "uid": uid_of(pvc),
            "apiVersion": "v1",
            "resourceVersion": text(metadata_of(pvc).get("resourceVersion")),
        }
    if not prebound:
        out.setdefault("metadata", {}).setdefault("annotations", {}).setdefault(
            ANN_BOUND_BY_CONTROLLER, "yes"
        )
    return out


def ephemeral_claim_name(pod_name: str, volume_name: str) -> str:
    """ephemeral.VolumeClaimName: the PVC the ephemeral-volume controller creates for the volume."""
    return f"{pod_name}-{volume_name}"


def controlled_by(obj: Obj, uid: str) -> bool:
    """metav1.IsControlledBy: an owner reference with controller=true and this uid."""
    for ref in items(metadata_of(obj).get("ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True and text(ref.get("uid")) == uid:
            return True
    return False


def match_topology_selector_terms(terms: Any, labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms: no terms match everything; an empty term matches nothing; else some term
    whose every expression's key has one of its values."""
    terms = items(terms)
    if not terms:
        return True
    for term in terms:
        exprs = [mapping(e) for e in items(mapping(term).get("matchLabelExpressions"))]
        if exprs and all(labels.get(text(e.get("key"))) in items(e.get("values")) for e in exprs):
            return True
    return False
