"""Builders of DRA test objects, mirroring upstream's allocatortesting helpers (names and defaults)."""

from __future__ import annotations

from typing import Any

from allocator.structured.cluster import Allocation, Cluster, NodeInfo
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3 = "pool-1", "pool-2", "pool-3"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3 = "slice-1", "slice-2", "slice-3"
DEVICE0, DEVICE1, DEVICE2, DEVICE3 = "device-0", "device-1", "device-2", "device-3"
SHARE = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"

ALL_NODES = "<allNodes>"
PER_DEVICE = "<perDevice>"


def node(name: str = NODE1, region: str = REGION1) -> NodeInfo:
    return NodeInfo(name, {"region": region, "planet": "earth"})


def device_class(name: str = CLASS_A, driver: str = DRIVER_A, **spec: Any) -> DeviceClass:
    body: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}], **spec}
    return DeviceClass.model_validate({"metadata": {"name": name}, "spec": body})


def opaque(driver: str, attribute: str) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def device(
    name: str, capacity: dict[str, Any] | None = None, attributes: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, **extra}
    if capacity is not None:
        out["capacity"] = {k: (v if isinstance(v, dict) else {"value": v}) for k, v in capacity.items()}
    if attributes is not None:
        out["attributes"] = attributes
    return out


def shared(name: str, capacity: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return device(name, capacity, allowMultipleAllocations=True, **extra)


def resource_slice(
    name: str,
    node_selection: Any,
    pool: str | dict[str, Any],
    driver: str,
    *devices: dict[str, Any],
    counter_sets: list[dict[str, Any]] | None = None,
) -> ResourceSlice:
    pool_obj = {"name": pool, "generation": 1, "resourceSliceCount": 1} if isinstance(pool, str) else pool
    spec: dict[str, Any] = {"driver": driver, "pool": pool_obj}
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == ALL_NODES:
        spec["allNodes"] = True
    elif node_selection == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    if devices:
        spec["devices"] = list(devices)
    if counter_sets:
        spec["sharedCounters"] = counter_sets
    return ResourceSlice.model_validate({"metadata": {"name": name}, "spec": spec})


def pool(name: str, count: int, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "generation": generation, "resourceSliceCount": count}


def one_device_slice(name: str, node_name: str, pool_name: str, driver: str) -> ResourceSlice:
    return resource_slice(name, node_name, pool_name, driver, device(DEVICE1))


def request(name: str, cls: str = CLASS_A, count: int = 1, **exactly: Any) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count, **exactly},
    }


def all_request(name: str, cls: str = CLASS_A, **exactly: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All", **exactly}}


def sub_request(name: str, cls: str = CLASS_A, count: int = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "deviceClassName": cls, "allocationMode": "ExactCount", "count": count, **fields}


def prioritized(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def capacity(**requests: Any) -> dict[str, Any]:
    return {"requests": dict(requests)}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
    namespace: str | None = None,
) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return ResourceClaim.model_validate({"metadata": meta, "spec": {"devices": devices}})


def simple_claim(name: str = CLAIM0, req: str = REQ0, cls: str = CLASS_A, **kw: Any) -> ResourceClaim:
    return claim(name, request(req, cls), **kw)


def allocated(claim_obj: ResourceClaim, *results: dict[str, Any]) -> ResourceClaim:
    """The claim with status.allocation holding `results` (as API dicts)."""
    data = claim_obj.to_api()
    data["status"] = {"allocation": {"devices": {"results": list(results)}}}
    return ResourceClaim.model_validate(data)


def result(req: str, driver: str, pool_name: str, dev: str, **extra: Any) -> dict[str, Any]:
    return {"request": req, "driver": driver, "pool": pool_name, "device": dev, **extra}


def local(node_name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def label_selector(key: str, *values: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]
    }


def gates(**overrides: bool) -> FeatureGates:
    return FeatureGates.defaults().with_overrides(**overrides)


def fixed_share_ids() -> str:
    return SHARE


def cluster(
    classes: list[DeviceClass],
    slices: list[ResourceSlice],
    allocated_claims: list[ResourceClaim] | None = None,
    feature_gates: FeatureGates | None = None,
    *,
    unique_shares: bool = False,
) -> Cluster:
    """A Cluster whose share IDs are all `SHARE` (as upstream's tests normalize them), or fresh UUIDs."""
    if unique_shares:
        return Cluster(feature_gates or gates(), classes, slices, allocated_claims or [])
    return Cluster(
        feature_gates or gates(), classes, slices, allocated_claims or [], share_ids=fixed_share_ids
    )


def run(
    claims: list[ResourceClaim],
    classes: list[DeviceClass],
    slices: list[ResourceSlice],
    *,
    on: NodeInfo | None = None,
    allocated_claims: list[ResourceClaim] | None = None,
    feature_gates: FeatureGates | None = None,
) -> Allocation:
    return cluster(classes, slices, allocated_claims, feature_gates).allocate(on or node(), claims)


def dump(allocation: Allocation) -> list[dict[str, Any]] | None:
    """Results as API dicts (for comparing with expectations)."""
    if allocation.results is None:
        return None
    return [r.to_api() for r in allocation.results]


def expect(
    node_selector: dict[str, Any] | None, *results: dict[str, Any], config: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """An expected AllocationResult as the API renders it."""
    devices: dict[str, Any] = {"results": list(results)}
    if config:
        devices["config"] = config
    out: dict[str, Any] = {"devices": devices}
    if node_selector is not None:
        out["nodeSelector"] = node_selector
    return out
