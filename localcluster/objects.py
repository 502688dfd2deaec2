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
from typing import Any

API_RESOURCE = "resource.k8s.io/v1"
CAPACITY_ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"


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
