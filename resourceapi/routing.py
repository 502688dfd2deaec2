"""Which pods go to the capacity binder: the routing rule shared by `/mutate-pods` and the binder's audit.

A pod is routed when it asks for an extended resource that a DeviceClass with KEP-6406 capacity requests (the
field `spec.extendedResourceCapacityRequests` or the annotation carrier) maps (with `whole_devices`, the
opt-in `--route-whole-device-classes`: any DeviceClass that maps it, capacity requests or not), it is opted
in (namespace or object label), and it names no scheduler of its own. A pod that uses what the binder cannot
place yet (volumes that need volume binding, gang scheduling, its own ResourceClaims) is routed too, and waits
with an Event naming the feature: handed back to kube-scheduler, it would be allocated from the same devices
without the class's capacity (one allocator per device, DESIGN). A pod created with `spec.nodeName` is pinned
as DaemonSet pods are: the name becomes a required node affinity on `metadata.name`, so the binder allocates
its share before the kubelet sees it. Everything works on the raw JSON objects: this runs on every pod create
in an opted-in namespace.

The name -> class rule is resourceapi.extended's (the scheduler's ExtendedResourceCache).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from resourceapi.api.resource_v1 import DeviceClass
from resourceapi.extended import IMPLICIT_PREFIX, ExtendedResourceResolver
from resourceapi.gates import DRA_EXTENDED_RESOURCE, FeatureGates
from resourceapi.scheduling_fields import UNSUPPORTED_SPEC_FIELDS, UNSUPPORTED_VOLUMES

ROUTING_LABEL = "dra-capacity.io/pod-routing"
ROUTING_ENABLED = "enabled"
ROUTING_DISABLED = "disabled"
# Which namespaces route (`--pod-routing-namespaces`, the chart's webhook.podRouting.namespaces): `all` but
# those labelled `disabled` (the product default), or only those labelled `enabled`.
NAMESPACES_ALL = "all"
NAMESPACES_LABELLED = "labelled"
NAMESPACE_MODES = (NAMESPACES_ALL, NAMESPACES_LABELLED)
# One allocator per device: the chart's DeviceTaintRules taint the devices the binder serves with this
# NoSchedule taint, and only the claims the binder writes tolerate it (allocator/scheduling/synthesis.py), so
# kube-scheduler allocates none of them, even for a pod admitted while /mutate-pods was down (KEP-5055).
SERVED_TAINT_KEY = "dra-capacity.io/binder-served"
SERVED_TAINT_EFFECT = "NoSchedule"
DEFAULT_SCHEDULER = "default-scheduler"
_GATES = FeatureGates.parse(
    f"{DRA_EXTENDED_RESOURCE}=true"
)  # routing only happens where the binder maps names


class Verdict(enum.Enum):
    """What routing does with a pod."""

    ROUTE = "route"  # set spec.schedulerName to the binder's
    NOT_OPTED_IN = "not-opted-in"
    NO_CAPACITY_RESOURCE = "no-capacity-resource"  # asks for nothing a capacity class maps
    OWN_SCHEDULER = "own-scheduler"  # names a scheduler other than the default (or is already routed)
    UNSUPPORTED = "unsupported"  # uses something the binder cannot place yet: routed, waits with an Event


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    resources: tuple[str, ...] = ()  # the capacity-mapped extended resources the pod asks for
    unsupported: tuple[str, ...] = ()  # what the binder cannot place yet (Verdict.UNSUPPORTED), a phrase each
    scheduler: str = ""  # the pod's own scheduler (Verdict.OWN_SCHEDULER)
    node: str = ""  # the pod's spec.nodeName, turned into a required node affinity when routed

    @property
    def routed(self) -> bool:
        """The pod goes to the binder (spec.schedulerName set to the binder's)."""
        return self.verdict in (Verdict.ROUTE, Verdict.UNSUPPORTED)

    def warning(self, scheduler_name: str) -> str | None:
        """The admission warning, if any: a routed pod that will wait, a pod pinned by spec.nodeName, or a
        pod that names another scheduler for a resource the binder serves."""
        asks = ", ".join(self.resources)
        if self.verdict is Verdict.UNSUPPORTED:
            return (
                f"dra-capacity: pod routed to scheduler {scheduler_name!r} for {asks}, but it uses "
                f"{', '.join(self.unsupported)}, which the capacity binder does not support yet: it stays "
                "Pending with a FailedScheduling Event naming it, rather than have the default scheduler "
                "allocate the same devices without the class's capacity requests"
            )
        if self.verdict is Verdict.OWN_SCHEDULER and self.scheduler != scheduler_name:
            return (
                f"dra-capacity: pod names scheduler {self.scheduler!r} and requests {asks}, which the "
                f"capacity binder {scheduler_name!r} serves: that scheduler allocates it without the class's "
                "capacity requests (each pod takes the request policy's default or a whole device), or not "
                "at all where it lacks KEP-5004 (DRAExtendedResource)"
            )
        if self.routed and self.node:
            return (
                f"dra-capacity: spec.nodeName {self.node!r} turned into a required node affinity on "
                "metadata.name, as for DaemonSet pods, so that the binder allocates the pod's share on that "
                "node before the kubelet runs it"
            )
        return None


NODE_NAME_FIELD = "metadata.name"  # metav1.ObjectNameField


def pin_to_node(pod: Mapping[str, Any], node: str) -> list[dict[str, Any]]:
    """JSONPatch operations that move `spec.nodeName` into a required node affinity on `metadata.name`, as
    the DaemonSet controller's ReplaceDaemonSetPodNodeNameNodeAffinity does
    (pkg/controller/daemon/util/daemonset_util.go): the required terms are replaced by that one term. And a
    toleration of every NoSchedule taint: the kubelet admits a pod named to it whatever its NoSchedule
    taints and cordon say, so the pod as written would have run there (docs/divergences.md)."""
    term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}
    required = {"nodeSelectorTerms": [term]}
    ops: list[dict[str, Any]] = [{"op": "remove", "path": "/spec/nodeName"}]
    spec = pod.get("spec")
    affinity = spec.get("affinity") if isinstance(spec, dict) else None
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if not isinstance(affinity, dict):
        ops.append({"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {_REQUIRED: required}}})
    elif not isinstance(node_affinity, dict):
        ops.append({"op": "add", "path": "/spec/affinity/nodeAffinity", "value": {_REQUIRED: required}})
    else:
        ops.append({"op": "add", "path": f"/spec/affinity/nodeAffinity/{_REQUIRED}", "value": required})
    tolerations = spec.get("tolerations") if isinstance(spec, dict) else None
    if not isinstance(tolerations, list):
        ops.append({"op": "add", "path": "/spec/tolerations", "value": [dict(NODE_NAME_TOLERATION)]})
    elif NODE_NAME_TOLERATION not in tolerations:
        ops.append({"op": "add", "path": "/spec/tolerations/-", "value": dict(NODE_NAME_TOLERATION)})
    return ops


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
# what spec.nodeName skipped: TaintToleration's and NodeUnschedulable's NoSchedule checks
NODE_NAME_TOLERATION: Mapping[str, str] = {"operator": "Exists", "effect": "NoSchedule"}


def routed_resource_names(
    classes: Iterable[Mapping[str, Any]], whole_devices: bool = False
) -> frozenset[str]:
    """The extended-resource names that resolve (resourceapi.extended's rule) to a DeviceClass with capacity
    requests. A class whose annotation carrier is malformed counts too: the binder reports why its pods cannot
    be placed, where the default scheduler would silently hand out whole devices. With `whole_devices` (off
    by default), every name that resolves to a class counts, KEP-5004 whole-device classes included: the
    binder is then the only allocator for those devices too."""
    models: list[DeviceClass] = []
    for dc in classes:
        try:
            models.append(DeviceClass.model_validate(dc))
        except ValidationError:
            continue  # not a class the API server would have stored; nothing routes to it
    resolver = ExtendedResourceResolver(models, _GATES)
    out: set[str] = set()
    names = {IMPLICIT_PREFIX + m.metadata.name for m in models}
    names.update(m.spec.extended_resource_name for m in models if m.spec.extended_resource_name)
    for name in names:
        resolved = resolver.resolve(name)
        if resolved is not None and (
            whole_devices or resolved.capacity is not None or resolved.carrier_error is not None
        ):
            out.add(name)
    return frozenset(out)


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if isinstance(items, list):
            out.extend(c for c in items if isinstance(c, dict))
    return out


def requested_resources(pod: Mapping[str, Any], names: frozenset[str]) -> tuple[str, ...]:
    """The resources among `names` that any container requests or limits (sorted)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not names:
        return ()
    found: set[str] = set()
    for c in _containers(spec):
        resources = c.get("resources")
        if not isinstance(resources, dict):
            continue
        for part in ("requests", "limits"):
            values = resources.get(part)
            if isinstance(values, dict):
                found.update(k for k in values if k in names)
    return tuple(sorted(found))


_VOLUME_WORDS = {
    "persistentVolumeClaim": "PersistentVolumeClaim volume",
    "ephemeral": "generic ephemeral volume",
}


def unsupported_features(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """What the binder cannot place, in the words of the admission warning: the fields that placement does
    not model (resourceapi.scheduling_fields: volumes that need volume binding or volume limits, gang
    scheduling), and the pod's own ResourceClaims, which the binder does not allocate. Inter-pod
    (anti-)affinity and topology spread are placed as the scheduler's filters place them."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return ()
    out: list[str] = []
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        for v in volumes:
            if not isinstance(v, dict):
                continue
            for kind in UNSUPPORTED_VOLUMES:
                if v.get(kind) is not None:
                    words = _VOLUME_WORDS.get(kind, f"{kind} volume")
                    out.append(f"{words} {v.get('name', '')!s}".rstrip())
    out.extend(f"spec.{name}" for name in UNSUPPORTED_SPEC_FIELDS if spec.get(name) is not None)
    if spec.get("resourceClaims"):
        out.append("spec.resourceClaims")
    return tuple(out)


def opted_in(
    pod: Mapping[str, Any], namespace_labels: Mapping[str, str] | None, all_namespaces: bool = False
) -> bool:
    """Object label `enabled` opts in, `disabled` opts out; otherwise the namespace label decides: with
    `all_namespaces` every namespace not labelled `disabled`, else only those labelled `enabled`."""
    meta = pod.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    value = labels.get(ROUTING_LABEL) if isinstance(labels, dict) else None
    if value == ROUTING_ENABLED:
        return True
    if value == ROUTING_DISABLED:
        return False
    namespace_value = (namespace_labels or {}).get(ROUTING_LABEL)
    if all_namespaces:
        return namespace_value != ROUTING_DISABLED
    return namespace_value == ROUTING_ENABLED


def decide(
    pod: Mapping[str, Any],
    names: frozenset[str],
    namespace_labels: Mapping[str, str] | None,
    scheduler_name: str,
    all_namespaces: bool = False,
) -> Decision:
    """The routing decision for a pod as created (before any scheduler saw it); `all_namespaces`: see
    `opted_in`."""
    if not opted_in(pod, namespace_labels, all_namespaces):
        return Decision(Verdict.NOT_OPTED_IN)
    resources = requested_resources(pod, names)
    if not resources:
        return Decision(Verdict.NO_CAPACITY_RESOURCE)
    spec = pod.get("spec")
    current = spec.get("schedulerName") if isinstance(spec, dict) else None
    if current not in (None, "", DEFAULT_SCHEDULER):
        return Decision(Verdict.OWN_SCHEDULER, resources, scheduler=str(current))
    node = spec.get("nodeName") if isinstance(spec, dict) else None
    pinned = node if isinstance(node, str) else ""
    unsupported = unsupported_features(pod)
    if unsupported:
        return Decision(Verdict.UNSUPPORTED, resources, unsupported, node=pinned)
    return Decision(Verdict.ROUTE, resources, node=pinned)
