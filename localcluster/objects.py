"""Chained builders of the Kubernetes objects the sandbox, the benches and the tests make, as JSON dicts.

In the style of kube-scheduler's `st.MakePod()...Obj()`:
`make_pod("p").namespace("ns").request(RES, 1).obj()`, `make_slice("node-1").devices(*gpus).obj()`,
`make_class("gpu").driver(DRIVER).extended_resource(RES).obj()`. Each `obj()` returns a fresh dict (nothing
is shared between two calls), the shape the API serves. The product code (the sandbox, `localcluster`) and
tests/support/ both build from here, so a test object has one home.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

API_RESOURCE = "resource.k8s.io/v1"
CAPACITY_ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
GPU_DRIVER = "gpu.nvidia.com"


class SliceBuilder:
    """A node-local ResourceSlice: its own pool named after the node, one slice, name `<node>-<driver>`."""

    def __init__(self, node: str, driver: str) -> None:
        self._name = f"{node}-{driver}"
        self._spec: dict[str, Any] = {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        }

    def name(self, name: str) -> SliceBuilder:
        self._name = name
        return self

    def pool(self, name: str, count: int = 1, generation: int = 1) -> SliceBuilder:
        self._spec["pool"] = {"name": name, "generation": generation, "resourceSliceCount": count}
        return self

    def devices(self, *devices: dict[str, Any]) -> SliceBuilder:
        self._spec["devices"] = list(devices)
        return self

    def counters(self, counters: list[dict[str, Any]] | None) -> SliceBuilder:
        if counters:
            self._spec["sharedCounters"] = counters
        return self

    def spec(self, **fields: Any) -> SliceBuilder:
        self._spec.update(fields)
        return self

    def obj(self) -> dict[str, Any]:
        return {
            "apiVersion": API_RESOURCE,
            "kind": "ResourceSlice",
            "metadata": {"name": self._name},
            "spec": copy.deepcopy(self._spec),
        }


class ClassBuilder:
    """A DeviceClass; `driver` adds the selector `device.driver == "<driver>"`."""

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name}
        self._spec: dict[str, Any] = {}

    def selector(self, *expressions: str) -> ClassBuilder:
        self._spec.setdefault("selectors", []).extend({"cel": {"expression": e}} for e in expressions)
        return self

    def driver(self, driver: str) -> ClassBuilder:
        return self.selector(f'device.driver == "{driver}"')

    def extended_resource(self, name: str | None) -> ClassBuilder:
        if name:
            self._spec["extendedResourceName"] = name
        return self

    def capacity_requests(self, requests: dict[str, str], *, annotation: bool = False) -> ClassBuilder:
        """KEP-6406's capacity requests: the field, or (`annotation`) dra-capacity's annotation."""
        if annotation:
            return self.annotation(CAPACITY_ANNOTATION, json.dumps({"requests": requests}))
        self._spec["extendedResourceCapacityRequests"] = {"requests": requests}
        return self

    def annotation(self, key: str, value: str) -> ClassBuilder:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def created(self, timestamp: str | None) -> ClassBuilder:
        if timestamp:
            self._meta["creationTimestamp"] = timestamp
        return self

    def spec(self, **fields: Any) -> ClassBuilder:
        self._spec.update(fields)
        return self

    def obj(self) -> dict[str, Any]:
        return {
            "apiVersion": API_RESOURCE,
            "kind": "DeviceClass",
            "metadata": copy.deepcopy(self._meta),
            "spec": copy.deepcopy(self._spec),
        }


class PodBuilder:
    """A Pod; `container` starts a container, `request` and `limit` go to the last one (made on first use)."""

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name, "namespace": "default"}
        self._spec: dict[str, Any] = {}
        self._status: dict[str, Any] | None = None

    def namespace(self, namespace: str) -> PodBuilder:
        self._meta["namespace"] = namespace
        return self

    def uid(self, uid: str | None) -> PodBuilder:
        if uid:
            self._meta["uid"] = uid
        return self

    def labels(self, labels: dict[str, str] | None) -> PodBuilder:
        if labels:
            self._meta.setdefault("labels", {}).update(labels)
        return self

    def meta(self, **fields: Any) -> PodBuilder:
        self._meta.update(fields)
        return self

    def container(self, name: str = "main", image: str = "registry.example.com/app:1") -> PodBuilder:
        self._spec.setdefault("containers", []).append({"name": name, "image": image, "resources": {}})
        return self

    def _resources(self) -> dict[str, Any]:
        if not self._spec.get("containers"):
            self.container()
        resources: dict[str, Any] = self._spec["containers"][-1]["resources"]
        return resources

    def request(self, resource: str, quantity: int | str) -> PodBuilder:
        self._resources().setdefault("requests", {})[resource] = str(quantity)
        return self

    def limit(self, resource: str, quantity: int | str) -> PodBuilder:
        self._resources().setdefault("limits", {})[resource] = str(quantity)
        return self

    def scheduler(self, name: str | None) -> PodBuilder:
        if name:
            self._spec["schedulerName"] = name
        return self

    def node(self, name: str | None) -> PodBuilder:
        if name:
            self._spec["nodeName"] = name
        return self

    def spec(self, **fields: Any) -> PodBuilder:
        self._spec.update(fields)
        return self

    def status(self, **fields: Any) -> PodBuilder:
        self._status = {**(self._status or {}), **fields}
        return self

    def obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": copy.deepcopy(self._meta),
            "spec": copy.deepcopy(self._spec),
        }
        if self._status is not None:
            out["status"] = copy.deepcopy(self._status)
        return out


class NodeBuilder:
    """A Node labelled `kubernetes.io/hostname`; status as `allocatable` and `capacity` set it."""

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/hostname": name}}
        self._spec: dict[str, Any] | None = None
        self._status: dict[str, Any] = {}

    def labels(self, labels: dict[str, str] | None) -> NodeBuilder:
        self._meta["labels"].update(labels or {})
        return self

    def annotations(self, annotations: dict[str, str]) -> NodeBuilder:
        self._meta.setdefault("annotations", {}).update(annotations)
        return self

    def allocatable(self, **resources: str) -> NodeBuilder:
        self._status["allocatable"] = dict(resources)
        return self

    def capacity(self, **resources: str) -> NodeBuilder:
        self._status["capacity"] = dict(resources)
        return self

    def spec(self, **fields: Any) -> NodeBuilder:
        self._spec = {**(self._spec or {}), **fields}
        return self

    def obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": copy.deepcopy(self._meta)}
        if self._spec is not None:
            out["spec"] = copy.deepcopy(self._spec)
        out["status"] = copy.deepcopy(self._status)
        return out


class ClaimBuilder:
    """A ResourceClaim; `request` adds an `exactly` request of a class, with capacity requests when given."""

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name, "namespace": "default"}
        self._requests: list[dict[str, Any]] = []

    def namespace(self, namespace: str) -> ClaimBuilder:
        self._meta["namespace"] = namespace
        return self

    def request(
        self, name: str, device_class: str, capacity: dict[str, str] | None = None, **exactly: Any
    ) -> ClaimBuilder:
        body: dict[str, Any] = {"deviceClassName": device_class}
        if capacity is not None:
            body["capacity"] = {"requests": capacity}
        self._requests.append({"name": name, "exactly": {**body, **exactly}})
        return self

    def obj(self) -> dict[str, Any]:
        return {
            "apiVersion": API_RESOURCE,
            "kind": "ResourceClaim",
            "metadata": copy.deepcopy(self._meta),
            "spec": {"devices": {"requests": copy.deepcopy(self._requests)}},
        }


def make_slice(node: str, driver: str = "gpu.nvidia.com") -> SliceBuilder:
    return SliceBuilder(node, driver)


def make_class(name: str) -> ClassBuilder:
    return ClassBuilder(name)


def make_claim(name: str) -> ClaimBuilder:
    return ClaimBuilder(name)


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


# --- storage (the volume plugins' objects) --------------------------------------------------------------


class PvcBuilder:
    """A PersistentVolumeClaim (ReadWriteOnce, 1Gi unless told); `bound` makes it bound to a PV as the PV
    controller leaves it."""

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-pvc-{name}"}
        self._spec: dict[str, Any] = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        }
        self._status: dict[str, Any] = {"phase": "Pending"}

    def namespace(self, namespace: str) -> PvcBuilder:
        self._meta["namespace"] = namespace
        return self

    def storage_class(self, name: str) -> PvcBuilder:
        self._spec["storageClassName"] = name
        return self

    def size(self, quantity: str) -> PvcBuilder:
        self._spec["resources"] = {"requests": {"storage": quantity}}
        return self

    def access_modes(self, *modes: str) -> PvcBuilder:
        self._spec["accessModes"] = list(modes)
        return self

    def annotation(self, key: str, value: str) -> PvcBuilder:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def selector(self, match_labels: dict[str, str]) -> PvcBuilder:
        """spec.selector: only PVs with these labels may bind the claim."""
        self._spec["selector"] = {"matchLabels": dict(match_labels)}
        return self

    def owner(self, kind: str, name: str, uid: str) -> PvcBuilder:
        ref = {"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, "controller": True}
        self._meta.setdefault("ownerReferences", []).append(ref)
        return self

    def bound(self, pv: str) -> PvcBuilder:
        self._spec["volumeName"] = pv
        self._status = {"phase": "Bound"}
        return self.annotation("pv.kubernetes.io/bind-completed", "yes")

    def volume_name(self, pv: str) -> PvcBuilder:
        self._spec["volumeName"] = pv
        return self

    def obj(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": copy.deepcopy(self._meta),
            "spec": copy.deepcopy(self._spec),
            "status": copy.deepcopy(self._status),
        }


class PvBuilder:
    """A PersistentVolume (hostPath, ReadWriteOnce, Available); `local_to` pins it to a node as a local PV."""

    def __init__(self, name: str) -> None:
        self._meta: dict[str, Any] = {"name": name}
        self._spec: dict[str, Any] = {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": f"/tmp/pv/{name}"},
        }
        self._status: dict[str, Any] = {"phase": "Available"}

    def storage_class(self, name: str) -> PvBuilder:
        self._spec["storageClassName"] = name
        return self

    def size(self, quantity: str) -> PvBuilder:
        self._spec["capacity"] = {"storage": quantity}
        return self

    def access_modes(self, *modes: str) -> PvBuilder:
        self._spec["accessModes"] = list(modes)
        return self

    def labels(self, labels: dict[str, str]) -> PvBuilder:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def node_affinity(self, key: str, *values: str) -> PvBuilder:
        term = {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
        self._spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        return self

    def local_to(self, node: str) -> PvBuilder:
        self._spec.pop("hostPath", None)
        self._spec["local"] = {"path": f"/mnt/disks/{self._meta['name']}"}
        return self.node_affinity("kubernetes.io/hostname", node)

    def csi(self, driver: str, handle: str) -> PvBuilder:
        self._spec.pop("hostPath", None)
        self._spec["csi"] = {"driver": driver, "volumeHandle": handle}
        return self

    def claim_ref(self, namespace: str, name: str, uid: str = "") -> PvBuilder:
        ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace, "name": name}
        if uid:
            ref["uid"] = uid
        self._spec["claimRef"] = ref
        return self

    def phase(self, phase: str) -> PvBuilder:
        self._status = {"phase": phase}
        return self

    def obj(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": copy.deepcopy(self._meta),
            "spec": copy.deepcopy(self._spec),
            "status": copy.deepcopy(self._status),
        }


def make_pvc(name: str) -> PvcBuilder:
    return PvcBuilder(name)


def make_pv(name: str) -> PvBuilder:
    return PvBuilder(name)


def make_storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str = "WaitForFirstConsumer",
    allowed_topologies: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A StorageClass (no provisioner and WaitForFirstConsumer: the local-PV class)."""
    out: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": "Delete",
    }
    if allowed_topologies is not None:
        out["allowedTopologies"] = allowed_topologies
    return out


def device_conditions(claim: dict[str, Any], kind: str, reason: str, node: str) -> list[dict[str, Any]]:
    """A claim's `status.devices` as a DRA driver reports condition `kind` True on every allocated device
    (the binding conditions' stand-in driver of the tests)."""
    condition = {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": f"{kind} on {node}",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    return [
        {
            "driver": r["driver"],
            "pool": r["pool"],
            "device": r["device"],
            **({"shareID": r["shareID"]} if r.get("shareID") else {}),
            "conditions": [dict(condition)],
        }
        for r in claim["status"]["allocation"]["devices"]["results"]
    ]


def make_csinode(node: str, drivers: dict[str, int | None]) -> dict[str, Any]:
    """A CSINode naming each driver with its attach limit (None: no limit)."""
    entries = []
    for driver, count in drivers.items():
        entry: dict[str, Any] = {"name": driver, "nodeID": node, "topologyKeys": None}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": entries},
    }


def pvc_volume(name: str, claim: str) -> dict[str, Any]:
    """A pod volume that mounts the claim."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str, storage_class: str, size: str = "1Gi") -> dict[str, Any]:
    """A generic ephemeral volume (its claim: `<pod>-<name>`, made by the ephemeral-volume controller)."""
    template = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        }
    }
    return {"name": name, "ephemeral": {"volumeClaimTemplate": template}}


GpuShape = Callable[[int, str, "int | None"], dict[str, Any]]
_DEFAULT: Any = object()


def nvidia_gpu(index: int, node_name: str, shares: int | None = 4) -> dict[str, Any]:
    """An NVIDIA-shaped GPU (productName, uuid, driverVersion, index attributes). With `shares`, it is
    `allowMultipleAllocations` with a consumable `shares` capacity only (KEP-6406's Story 1); without, a
    whole device with an 80Gi memory capacity."""
    device: dict[str, Any] = {
        "name": f"gpu-{index}",
        "attributes": {
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "uuid": {"string": f"GPU-{node_name}-{index:04d}"},
            "driverVersion": {"version": "550.54.15"},
            "index": {"int": index},
            "type": {"string": "gpu"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    if shares is not None:
        # Only `shares` is consumable: a capacity without a requestPolicy is consumed whole by every
        # allocation (KEP-5075), so an 80Gi `memory` beside it would let each GPU hold one share only.
        device["allowMultipleAllocations"] = True
        device["capacity"] = {}
        device["capacity"]["shares"] = {
            "value": str(shares),
            # no step for one share: kube-apiserver refuses a step whose first increment passes the value
            "requestPolicy": {
                "default": "1",
                "validRange": {"min": "1", "max": str(shares), **({"step": "1"} if shares > 1 else {})},
            },
        }
    return device


@dataclass(frozen=True)
class GpuSlices:
    """The one builder of GPU ResourceSlices: `preset(node, gpus, shares, driver)` is a node-local slice (its
    own pool, one slice) of `gpus` devices `gpu(index, node, shares)`, or of `devices` when given. A preset
    (tests/support/) differs only in its device shape, its defaults and the slice name `<node>-<suffix>`
    (default `<node>-<driver>`); `into` turns the dict into what its callers read (a model)."""

    gpu: GpuShape = nvidia_gpu
    gpus: int = 2
    shares: int | None = 4
    driver: str = GPU_DRIVER
    suffix: str | None = None
    into: Callable[[dict[str, Any]], Any] | None = None

    def __call__(
        self,
        node: str,
        gpus: int | None = None,
        shares: int | None = _DEFAULT,
        driver: str | None = None,
        *,
        devices: Iterable[dict[str, Any]] | None = None,
        counters: list[dict[str, Any]] | None = None,
    ) -> Any:
        driver = driver or self.driver
        shares = self.shares if shares is _DEFAULT else shares
        made = list(devices) if devices is not None else []
        if devices is None:
            made = [self.gpu(i, node, shares) for i in range(self.gpus if gpus is None else gpus)]
        built = make_slice(node, driver).devices(*made).counters(counters)
        if self.suffix is not None:
            built.name(f"{node}-{self.suffix}")
        return self.into(built.obj()) if self.into is not None else built.obj()


gpu_slice = (
    GpuSlices()
)  # the sandbox's NVIDIA-shaped slices (localcluster/nodes.py, kube_scheduler_side_by_side)


class TaintRuleBuilder:
    """A DeviceTaintRule: one taint (`NoSchedule` unless told) on the devices its selector matches."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._selector: dict[str, str] | None = {}
        self._taint: dict[str, Any] = {"key": "example.com/unhealthy", "effect": "NoSchedule"}

    def select(
        self, *, driver: str | None = None, pool: str | None = None, device: str | None = None
    ) -> TaintRuleBuilder:
        given = {"driver": driver, "pool": pool, "device": device}
        self._selector = {k: v for k, v in given.items() if v is not None}
        return self

    def no_selector(self) -> TaintRuleBuilder:
        self._selector = None
        return self

    def taint(self, key: str, effect: str = "NoSchedule", value: str | None = None) -> TaintRuleBuilder:
        self._taint = {"key": key, "effect": effect, **({"value": value} if value is not None else {})}
        return self

    def obj(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"taint": dict(self._taint)}
        if self._selector is not None:
            spec["deviceSelector"] = dict(self._selector)
        return {
            "apiVersion": API_RESOURCE,
            "kind": "DeviceTaintRule",
            "metadata": {"name": self._name},
            "spec": spec,
        }


def make_taint_rule(name: str) -> TaintRuleBuilder:
    return TaintRuleBuilder(name)
