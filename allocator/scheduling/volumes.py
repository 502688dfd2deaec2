"""kube-scheduler's volume plugins: VolumeRestrictions (ReadWriteOncePod), NodeVolumeLimits (CSI attach limits
from CSINode), VolumeBinding (bound PVs, WaitForFirstConsumer with static PVs or dynamic provisioning, the
storage-capacity score) and VolumeZone, over the cluster's storage objects (raw API objects).

Follows pkg/scheduler/framework/plugins/{volumerestrictions,nodevolumelimits,volumebinding,volumezone} of
v1.37.2: PreFilter (`prefilter`: the pod's claims sorted into bound, delayed and immediate, or the reason the
pod cannot be scheduled at all), Filter per node in the default profile's order (`VolumeCheck.filter`, with
`FindPodVolumes`' choice of PVs to bind and claims to provision), Score (`VolumeCheck.score`) and Reserve
(`Storage.assume`: the PVs and claims the choice changes, as the assume cache holds them until written).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from allocator.scheduling import pvhelpers as h
from allocator.scheduling.labelselectors import selector_matches
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.meta import LabelSelector
from resourceapi.machinery.objects import annotations_of, items, mapping, metadata_of, spec_of, text

Obj = Mapping[str, Any]
Key = tuple[str, str]  # (namespace, name)

VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"

# volumebinding/binder.go
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# volumezone/volume_zone.go, nodevolumelimits/csi.go, volumerestrictions/volume_restrictions.go
REASON_ZONE_CONFLICT = "node(s) had no available volume zone"
REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"
REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by "
    "another pod"
)
BIND_TIMEOUT_SECONDS = 600  # VolumeBindingArgs.bindTimeoutSeconds default (apis/config/v1/defaults.go)
MAX_UTILIZATION = 100
# the default shape with StorageCapacityScoring on (beta, on in 1.37): utilization 0 -> 100, 100 -> 0
_SHAPE = ((0, 100), (100, 0))
_TOPOLOGY_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
_GA_LABEL = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
_VOLUME_ID_PREFIX = "dra-capacity"  # csi.go's randomVolumeIDPrefix for volumes not yet provisioned


def not_found(resource: str, name: str) -> str:
    """apierrors.NewNotFound's message: `persistentvolumeclaim "x" not found`."""
    return f'{resource} "{name}" not found'


@dataclass
class Storage:
    """The storage objects the plugins read, by key: PVCs (namespace, name), PVs, StorageClasses, CSINodes and
    CSIDrivers by name, CSIStorageCapacities. `assume` overlays what a Reserve chose, as the assume cache."""

    pvcs: dict[Key, Obj] = field(default_factory=dict)
    pvs: dict[str, Obj] = field(default_factory=dict)
    classes: dict[str, Obj] = field(default_factory=dict)
    csinodes: dict[str, Obj] = field(default_factory=dict)
    csidrivers: dict[str, Obj] = field(default_factory=dict)
    capacities: list[Obj] = field(default_factory=list)
    _by_class: tuple[dict[str, Obj], int, dict[str, list[h.PvInfo]]] | None = field(
        default=None, repr=False, compare=False
    )

    @classmethod
    def of(cls, objects: Iterable[Obj]) -> Storage:
        """From a list of API objects of any kinds (the storage kinds are kept)."""
        out = cls()
        for obj in objects:
            out.put(obj)
        return out

    def put(self, obj: Obj) -> None:
        kind = text(obj.get("kind"))
        if kind == "PersistentVolumeClaim":
            self.pvcs[(h.namespace_of(obj), h.name_of(obj))] = obj
        elif kind == "PersistentVolume":
            self.pvs[h.name_of(obj)] = obj
            self._pvs_changed()
        elif kind == "StorageClass":
            self.classes[h.name_of(obj)] = obj
        elif kind == "CSINode":
            self.csinodes[h.name_of(obj)] = obj
        elif kind == "CSIDriver":
            self.csidrivers[h.name_of(obj)] = obj
        elif kind == "CSIStorageCapacity":
            self.capacities.append(obj)

    def pvs_of_class(self, class_name: str) -> list[h.PvInfo]:
        """The PV cache's ListPVs(class), in name order (grouped once until the PVs change)."""
        if self._by_class is None or self._by_class[0] is not self.pvs or self._by_class[1] != len(self.pvs):
            groups: dict[str, list[h.PvInfo]] = {}
            for _, pv in sorted(self.pvs.items()):
                info = h.pv_info(pv)
                groups.setdefault(info.volume_class, []).append(info)
            self._by_class = (self.pvs, len(self.pvs), groups)
        return self._by_class[2].get(class_name, [])

    def _pvs_changed(self) -> None:
        self._by_class = None

    def assume(self, choice: PodVolumes) -> None:
        """AssumePodVolumes' cache side: each static PV now names its claim, each claim to provision names
        the node. The objects stored are the ones PreBind writes."""
        for b in choice.bindings:
            self.pvs[h.name_of(b.pv)] = b.pv
        for p in choice.provisions:
            self.pvcs[(h.namespace_of(p.pvc), h.name_of(p.pvc))] = p.pvc
        self._pvs_changed()

    def settle(self, choice: PodVolumes) -> None:
        """What the PV controller and a provisioner make of a written choice, for an offline run: claims bound
        to their static PVs (a claim to provision keeps its selected node; its PV is not invented)."""
        for b in choice.bindings:
            pv = copy.deepcopy(dict(b.pv))
            pv.setdefault("status", {})["phase"] = "Bound"
            self.pvs[h.name_of(pv)] = pv
            key = (h.namespace_of(b.pvc), h.name_of(b.pvc))
            pvc = copy.deepcopy(dict(self.pvcs.get(key, b.pvc)))
            pvc.setdefault("spec", {})["volumeName"] = h.name_of(pv)
            pvc.setdefault("metadata", {}).setdefault("annotations", {})[h.ANN_BIND_COMPLETED] = "yes"
            pvc.setdefault("status", {})["phase"] = "Bound"
            self.pvcs[key] = pvc
        self._pvs_changed()


@dataclass(frozen=True)
class Binding:
    """A static PV chosen for a claim: the PV as it will be written (claimRef set), and the claim."""

    pv: Obj
    pvc: Obj

    @property
    def pv_name(self) -> str:
        return h.name_of(self.pv)

    @property
    def claim_key(self) -> Key:
        return (h.namespace_of(self.pvc), h.name_of(self.pvc))


@dataclass(frozen=True)
class Provision:
    """A claim to provision on the node: the claim as it will be written (selected-node set), and the
    CSIStorageCapacity that showed room for it (None: capacity not tracked)."""

    pvc: Obj
    capacity: Obj | None = None

    @property
    def claim_key(self) -> Key:
        return (h.namespace_of(self.pvc), h.name_of(self.pvc))


@dataclass(frozen=True)
class PodVolumes:
    """VolumeBinding's choice for one node (upstream's PodVolumes)."""

    node: str
    bindings: tuple[Binding, ...] = ()
    provisions: tuple[Provision, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.bindings and not self.provisions

    def assumed(self) -> PodVolumes:
        """AssumePodVolumes: the PVs with their claimRef, the claims with the selected node."""
        provisions = []
        for p in self.provisions:
            pvc = copy.deepcopy(dict(p.pvc))
            pvc.setdefault("metadata", {}).setdefault("annotations", {})[h.ANN_SELECTED_NODE] = self.node
            provisions.append(Provision(pvc, p.capacity))
        return PodVolumes(
            self.node,
            tuple(Binding(h.bind_volume_to_claim(b.pv, b.pvc), b.pvc) for b in self.bindings),
            tuple(provisions),
        )


@dataclass(frozen=True)
class FilterOutcome:
    """One node: its reasons (none: it passes) or an error (the filter failed)."""

    reasons: tuple[str, ...] = ()
    error: str | None = None
    choice: PodVolumes | None = None


@dataclass(frozen=True)
class PreFilterFailure:
    """The pod cannot be scheduled on any node (`unschedulable`), or the plugin failed (`error`)."""

    message: str
    error: bool = False


def pod_claim_names(pod: Pod) -> list[tuple[str, bool]]:
    """The PVC of each volume that uses one, in volume order: (name, ephemeral)."""
    out: list[tuple[str, bool]] = []
    for vol in _volumes(pod):
        if isinstance(vol.get("persistentVolumeClaim"), dict):
            out.append((text(vol["persistentVolumeClaim"].get("claimName")), False))
        elif isinstance(vol.get("ephemeral"), dict):
            out.append((h.ephemeral_claim_name(pod.name, text(vol.get("name"))), True))
    return out


def uses_claims(pod: Pod) -> bool:
    return bool(pod_claim_names(pod))


def _volumes(pod: Pod) -> list[Mapping[str, Any]]:
    extra = pod.spec.model_extra or {}
    return [mapping(v) for v in items(extra.get("volumes"))]


def _not_for_pod(pod: Pod, pvc: Obj) -> str | None:
    """ephemeral.VolumeIsForPod."""
    if h.namespace_of(pvc) != pod.namespace or not h.controlled_by(pvc, pod.metadata.uid or ""):
        return (
            f"PVC {h.namespace_of(pvc)}/{h.name_of(pvc)} was not created for pod {pod.namespace}/{pod.name} "
            "(pod is not owner)"
        )
    return None


def _is_delay_binding(pvc: Obj, storage: Storage) -> bool:
    """IsDelayBindingMode (a class the API server defaulted: no volumeBindingMode is Immediate)."""
    name = h.claim_class(pvc)
    cls = storage.classes.get(name) if name else None
    return cls is not None and text(cls.get("volumeBindingMode")) == h.WAIT_FOR_FIRST_CONSUMER


@dataclass
class VolumeCheck:
    """One pod's volume plugins after PreFilter: `filter(node)` runs their Filters in order."""

    pod: Pod
    storage: Storage
    pods_on: Mapping[str, Sequence[Pod]]
    bound: list[Obj] = field(default_factory=list)
    delayed: list[Obj] = field(default_factory=list)
    rwop_conflict: bool = False
    zones: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)  # (pv, label key, values)
    _choices: dict[str, PodVolumes] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        """VolumeBinding's score can tell nodes apart: some claim is still to bind or provision."""
        return bool(self.delayed)

    def filter(self, node: Node) -> FilterOutcome:
        if self.rwop_conflict:
            return FilterOutcome((REASON_RWOP_CONFLICT,))
        limit = self._csi_limits(node)
        if limit is not None:
            return limit
        outcome = self._binding(node)
        if outcome.reasons or outcome.error:
            return outcome
        if self.zones and not self._zone_ok(node):
            return FilterOutcome((REASON_ZONE_CONFLICT,))
        return outcome

    def choice(self, node_name: str) -> PodVolumes | None:
        """What Filter chose for the node (None: nothing to bind or provision)."""
        c = self._choices.get(node_name)
        return None if c is None or c.empty else c

    # --- VolumeBinding ----------------------------------------------------------------------------------

    def _binding(self, node: Node) -> FilterOutcome:
        """FindPodVolumes: the bound claims' PVs must fit the node; the delayed ones need a PV that fits, or a
        class that can provision there."""
        labels = node.labels
        reasons: list[str] = []
        bound_ok, pvs_found = True, True
        for pvc in self.bound:
            pv = self.storage.pvs.get(text(spec_of(pvc).get("volumeName")))
            if pv is None:
                pvs_found = False
                break
            if not h.check_node_affinity(pv, labels):
                bound_ok = False
                break
        unbound_ok, enough = True, True
        bindings: list[Binding] = []
        provisions: list[Provision] = []
        if self.delayed:
            to_match, to_provision = [], []
            for pvc in self.delayed:
                selected = annotations_of(pvc).get(h.ANN_SELECTED_NODE)
                if selected is not None:
                    if selected != node.name:
                        unbound_ok = False
                        break
                    to_provision.append(pvc)
                else:
                    to_match.append(pvc)
            else:
                if to_match:
                    chosen: set[str] = set()
                    for pvc in sorted(to_match, key=h.requested_storage):
                        pv = h.find_matching_volume(
                            pvc, self.storage.pvs_of_class(h.claim_class(pvc)), labels, chosen
                        )
                        if pv is None:
                            unbound_ok = False
                            to_provision.append(pvc)
                            continue
                        chosen.add(h.name_of(pv))
                        bindings.append(Binding(pv, pvc))
                if to_provision:
                    outcome = self._provisions(to_provision, node)
                    if isinstance(outcome, str):
                        return FilterOutcome(error=f'running "{VOLUME_BINDING}" filter plugin: {outcome}')
                    unbound_ok, enough, provisions = outcome
        if not bound_ok:
            reasons.append(REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(REASON_BIND_CONFLICT)
        if not enough:
            reasons.append(REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(REASON_PV_NOT_EXIST)
        if reasons:
            return FilterOutcome(tuple(reasons))
        choice = PodVolumes(node.name, tuple(bindings), tuple(provisions))
        self._choices[node.name] = choice
        return FilterOutcome(choice=choice)

    def _provisions(self, claims: list[Obj], node: Node) -> tuple[bool, bool, list[Provision]] | str:
        """checkVolumeProvisions: (satisfied, enough storage, provisions), or an error message."""
        out: list[Provision] = []
        for pvc in claims:
            class_name = h.claim_class(pvc)
            if not class_name:
                return f'no class for claim "{h.namespace_of(pvc)}/{h.name_of(pvc)}"'
            cls = self.storage.classes.get(class_name)
            if cls is None:
                return f'failed to find storage class "{class_name}"'
            provisioner = text(cls.get("provisioner"))
            if not provisioner or provisioner == h.NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not h.match_topology_selector_terms(cls.get("allowedTopologies"), node.labels):
                return False, True, []
            sufficient, capacity = self._capacity(provisioner, pvc, class_name, node)
            if not sufficient:
                return True, False, []
            out.append(Provision(pvc, capacity))
        return True, True, out

    def _capacity(self, provisioner: str, pvc: Obj, class_name: str, node: Node) -> tuple[bool, Obj | None]:
        """hasEnoughCapacity: only for a CSIDriver with storageCapacity: true; then some CSIStorageCapacity
        of the class whose maximumVolumeSize (else capacity) holds the request and whose topology has the
        node."""
        spec = spec_of(pvc)
        if "storage" not in mapping(mapping(spec.get("resources")).get("requests")):
            return True, None
        driver = self.storage.csidrivers.get(provisioner)
        if driver is None or spec_of(driver).get("storageCapacity") is not True:
            return True, None
        size = h.requested_storage(pvc)
        for cap in self.storage.capacities:
            if text(cap.get("storageClassName")) != class_name:
                continue
            limit = (
                cap.get("maximumVolumeSize")
                if cap.get("maximumVolumeSize") is not None
                else cap.get("capacity")
            )
            if limit is None or h.storage_quantity({"storage": limit}) < size:
                continue
            topology = cap.get("nodeTopology")
            if not isinstance(topology, dict):
                continue
            if selector_matches(LabelSelector.model_validate(topology), node.labels):
                return True, cap
        return False, None

    def score(self, node_name: str) -> int:
        """VolumeBinding Score: per class, the requested share of the chosen static PVs' capacity (or, with
        only dynamic provisions, of the chosen CSIStorageCapacity), through the default shape, averaged."""
        choice = self._choices.get(node_name)
        if choice is None:
            return 0
        classes: dict[str, list[int]] = {}
        if choice.bindings:
            for b in choice.bindings:
                r = classes.setdefault(text(spec_of(b.pv).get("storageClassName")), [0, 0])
                r[0] += h.requested_storage(b.pvc).value_ceil()
                r[1] += h.storage_quantity(spec_of(b.pv).get("capacity")).value_ceil()
        else:
            for p in choice.provisions:
                if p.capacity is None:
                    continue
                r = classes.setdefault(text(spec_of(p.pvc).get("storageClassName")), [0, 0])
                r[1] = h.storage_quantity({"storage": p.capacity.get("capacity")}).value_ceil()
                r[0] += h.requested_storage(p.pvc).value_ceil()
        if not classes:
            return 0
        total = sum(
            _shape(req * MAX_UTILIZATION // cap if cap and req <= cap else MAX_UTILIZATION)
            for req, cap in classes.values()
        )
        return int(round(total / len(classes)))  # noqa: RUF046 (Go's math.Round: half away from zero)

    # --- NodeVolumeLimits ---------------------------------------------------------------------------------

    def _csi_limits(self, node: Node) -> FilterOutcome | None:
        """CSILimits Filter: the node's CSINode limits per driver against the unique volumes of its pods and
        this pod's new ones (VolumeAttachments are not read: docs/divergences.md)."""
        csinode = self.storage.csinodes.get(node.name)
        new = self._attachable(self.pod, csinode)
        if not new:
            return None
        installed = {text(mapping(d).get("name")) for d in items(spec_of(csinode).get("drivers"))}
        for driver in sorted(set(new.values())):  # VolumeLimitScaling (beta, on in 1.37)
            opted_in = spec_of(self.storage.csidrivers.get(driver)).get("preventPodSchedulingIfMissing")
            if opted_in is True and (csinode is None or driver not in installed):
                return FilterOutcome((f"{driver} CSI driver is not installed on the node",))
        limits: dict[str, int] = {}
        for d in items(spec_of(csinode).get("drivers")) if csinode is not None else []:
            count = mapping(mapping(d).get("allocatable")).get("count")
            if isinstance(count, int):
                limits[text(mapping(d).get("name"))] = count
        if not limits:
            return None
        attached: dict[str, str] = {}
        for p in self.pods_on.get(node.name, ()):
            attached.update(self._attachable(p, csinode, existing=True))
        used: dict[str, int] = {}
        for unique, driver in attached.items():
            new.pop(unique, None)
            used[driver] = used.get(driver, 0) + 1
        wanted: dict[str, int] = {}
        for driver in new.values():
            wanted[driver] = wanted.get(driver, 0) + 1
        for driver, count in wanted.items():
            if driver in limits and used.get(driver, 0) + count > limits[driver]:
                return FilterOutcome((REASON_MAX_VOLUME_COUNT,))
        return None

    def _attachable(self, pod: Pod, csinode: Obj | None, existing: bool = False) -> dict[str, str]:
        """filterAttachableVolumes: `driver/volumeHandle` -> driver of the pod's CSI volumes (a claim not yet
        provisioned counts under its class's provisioner with a made-up handle)."""
        out: dict[str, str] = {}
        for name, _ephemeral in pod_claim_names(pod):
            pvc = self.storage.pvcs.get((pod.namespace, name))
            if pvc is None:
                continue
            driver, handle = self._driver_info(pvc)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return out

    def _driver_info(self, pvc: Obj) -> tuple[str, str]:
        pv_name = text(spec_of(pvc).get("volumeName"))
        pv = self.storage.pvs.get(pv_name) if pv_name else None
        if pv is not None:
            csi = mapping(spec_of(pv).get("csi"))
            return text(csi.get("driver")), text(csi.get("volumeHandle"))
        class_name = h.claim_class(pvc)
        cls = self.storage.classes.get(class_name) if class_name else None
        if cls is None:
            return "", ""
        return text(cls.get("provisioner")), f"{_VOLUME_ID_PREFIX}-{h.namespace_of(pvc)}/{h.name_of(pvc)}"

    # --- VolumeZone ---------------------------------------------------------------------------------------

    def _zone_ok(self, node: Node) -> bool:
        labels = node.labels
        if not any(k in labels for k in _TOPOLOGY_LABELS):
            return True  # a single-zone cluster's nodes may carry no topology label
        for _pv, key, values in self.zones:
            value = labels.get(key)
            if value is None:
                value = labels.get(_GA_LABEL.get(key, key))
            if value is None or value not in values:
                return False
        return True


def _shape(utilization: int) -> int:
    """helper.BuildBrokenLinearFunction over the default shape."""
    (u0, s0), (u1, s1) = _SHAPE
    if utilization <= u0:
        return s0
    if utilization >= u1:
        return s1
    return s0 + (s1 - s0) * (utilization - u0) // (u1 - u0)


def prefilter(
    pod: Pod, storage: Storage, pods_on: Mapping[str, Sequence[Pod]]
) -> VolumeCheck | PreFilterFailure | None:
    """The PreFilters of VolumeRestrictions, VolumeBinding and VolumeZone, in the default profile's order
    (None: the pod uses no PVC, every volume plugin skips)."""
    claims = pod_claim_names(pod)
    if not claims:
        return None
    ns = pod.namespace
    # VolumeRestrictions: ReadWriteOncePod claims already used by a scheduled pod
    rwop: set[str] = set()
    for name, ephemeral in claims:
        if ephemeral:
            continue
        pvc = storage.pvcs.get((ns, name))
        if pvc is None:
            return PreFilterFailure(not_found("persistentvolumeclaim", name))
        if h.READ_WRITE_ONCE_POD in items(spec_of(pvc).get("accessModes")):
            rwop.add(name)
    conflict = bool(rwop) and any(
        p.namespace == ns and any(n in rwop for n, _ in pod_claim_names(p))
        for pods in pods_on.values()
        for p in pods
        if not _same(p, pod)
    )
    # VolumeBinding: podHasPVCs, then GetPodVolumeClaims
    check = VolumeCheck(pod, storage, pods_on, rwop_conflict=conflict)
    for name, ephemeral in claims:
        pvc = storage.pvcs.get((ns, name))
        if pvc is None:
            if ephemeral:
                return PreFilterFailure(
                    f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                )
            return PreFilterFailure(not_found("persistentvolumeclaim", name))
        if text(mapping(pvc.get("status")).get("phase")) == "Lost":
            volume = text(spec_of(pvc).get("volumeName"))
            return PreFilterFailure(
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
            )
        if metadata_of(pvc).get("deletionTimestamp"):
            return PreFilterFailure(f'persistentvolumeclaim "{name}" is being deleted')
        if ephemeral:
            problem = _not_for_pod(pod, pvc)
            if problem is not None:
                return PreFilterFailure(problem)
    immediate = False
    for name, _ephemeral in claims:
        pvc = storage.pvcs[(ns, name)]
        if h.is_fully_bound(pvc):
            check.bound.append(pvc)
        elif _is_delay_binding(pvc, storage) and not text(spec_of(pvc).get("volumeName")):
            check.delayed.append(pvc)
        else:
            immediate = True
    if immediate:
        return PreFilterFailure(UNBOUND_IMMEDIATE)
    # VolumeZone: the zone labels of the bound PVs (persistentVolumeClaim volumes only)
    for name, ephemeral in claims:
        if ephemeral:
            continue
        if not name:
            return PreFilterFailure("PersistentVolumeClaim had no name")
        pvc = storage.pvcs[(ns, name)]
        pv_name = text(spec_of(pvc).get("volumeName"))
        if not pv_name:
            continue  # a delayed claim (an immediate one failed above)
        pv = storage.pvs.get(pv_name)
        if pv is None:
            return PreFilterFailure(not_found("persistentvolume", pv_name))
        labels = mapping(metadata_of(pv).get("labels"))
        for key in _TOPOLOGY_LABELS:
            if key in labels:
                check.zones.append((pv_name, key, frozenset(text(labels[key]).split("__"))))
    return check


def _same(a: Pod, b: Pod) -> bool:
    if a.metadata.uid and b.metadata.uid:
        return a.metadata.uid == b.metadata.uid
    return (a.namespace, a.name) == (b.namespace, b.name)
