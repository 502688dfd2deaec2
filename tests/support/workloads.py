"""Builders of pods, nodes, GPU/NIC slices and extended-resource classes for placement and simulate tests."""

from __future__ import annotations

from typing import Any

from localcluster.objects import GpuSlices
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice

GPU_DRIVER = "gpu.nvidia.com"
GPU_SHARED = "nvidia.com/gpu.shared"
GPU_CLASS = "gpu.nvidia.com-shared-1"


def pod(
    name: str,
    requests: dict[str, Any] | None = None,
    *,
    namespace: str = "default",
    init: list[dict[str, Any]] | None = None,
    containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> Pod:
    """A pod with one container `main` requesting `requests` (or the given containers)."""
    if containers is None:
        containers = [container("main", requests or {})]
    body: dict[str, Any] = {"containers": containers, **spec}
    if init is not None:
        body["initContainers"] = init
    return Pod.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
            "spec": body,
        }
    )


def container(name: str, requests: dict[str, Any], restart_policy: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "resources": {"requests": {k: str(v) for k, v in requests.items()}}}
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def node(
    name: str,
    allocatable: dict[str, Any] | None = None,
    *,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
) -> Node:
    """A node with generous cpu/memory/pods unless `allocatable` says otherwise."""
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110", **(allocatable or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return Node.model_validate(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
            "spec": spec,
            "status": {"allocatable": {k: str(v) for k, v in alloc.items()}},
        }
    )


def gpu_class(
    name: str = GPU_CLASS,
    resource: str | None = GPU_SHARED,
    shares: str | None = "1",
    *,
    created: str = "2026-01-01T00:00:00Z",
    annotation: str | None = None,
) -> DeviceClass:
    """The KEP's Story 1 class: GPUs with a `shares` capacity, `shares` per synthesized request."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}
    if resource:
        spec["extendedResourceName"] = resource
    if shares is not None:
        spec["extendedResourceCapacityRequests"] = {"requests": {"shares": shares}}
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if annotation is not None:
        meta["annotations"] = {"dra-capacity.io/extended-resource-capacity-requests": annotation}
    return DeviceClass.model_validate({"metadata": meta, "spec": spec})


def gpu(index: int, node_name: str, shares: int = 4) -> dict[str, Any]:
    """One shareable GPU: allowMultipleAllocations, `shares` capacity with a step-1 range policy (no step for
    one share: kube-apiserver refuses a step whose first increment passes the capacity)."""
    return {
        "name": f"gpu-{index}",
        "allowMultipleAllocations": True,
        "attributes": {
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "uuid": {"string": f"GPU-{node_name}-{index:04d}"},
            "driverVersion": {"version": "550.54.15"},
            "index": {"int": index},
            "memory": {"int": 80 * 1024**3},
        },
        "capacity": {
            "shares": {
                "value": str(shares),
                "requestPolicy": {
                    "default": "1",
                    "validRange": {"min": "1", "max": str(shares), **({"step": "1"} if shares > 1 else {})},
                },
            },
        },
    }


# A node-local slice (its own pool) with `gpus` shareable GPUs, as a model.
gpu_slice = GpuSlices(gpu, gpus=8, driver=GPU_DRIVER, into=ResourceSlice.model_validate)


def share_claim(name: str, cls: str = GPU_CLASS, shares: str = "1", **status: Any) -> dict[str, Any]:
    """A ResourceClaim (plain dict, namespace `default`) asking for `shares` of one device of class `cls`."""
    out: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {"deviceClassName": cls, "capacity": {"requests": {"shares": shares}}},
                    }
                ]
            }
        },
    }
    if status:
        out["status"] = status
    return out
