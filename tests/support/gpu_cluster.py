"""Builders of the GPU-shares cluster of the binder tests and benchmarks: JSON objects as the API serves them.

A DeviceClass mapping `nvidia.com/gpu.shared` with KEP-6406 capacity `shares: 1`, nodes whose device plugin no
longer advertises the resource, and one ResourceSlice per node with GPUs of 4 consumable shares each.
"""

from __future__ import annotations

from typing import Any

from localcluster.objects import CAPACITY_ANNOTATION, GpuSlices, make_class, make_node, make_pod

RESOURCE = "nvidia.com/gpu.shared"
CLASS = "gpu.nvidia.com-shared-1"
DRIVER = "gpu.nvidia.com"
SCHEDULER = "dra-capacity"


def device_class(name: str = CLASS, *, carrier: str = "field", resource: str = RESOURCE) -> dict[str, Any]:
    built = make_class(name).driver(DRIVER).spec(extendedResourceName=resource)
    if carrier == "field":
        built.capacity_requests({"shares": "1"})
    elif carrier == "annotation":
        built.annotation(CAPACITY_ANNOTATION, '{"requests":{"shares":"1"}}')
    return built.obj()


def node(name: str, cpu: str = "32") -> dict[str, Any]:
    return make_node(name).allocatable(cpu=cpu, memory="256Gi", pods="110").capacity(cpu=cpu).obj()


def share_gpu(index: int, node_name: str, shares: int | None = 4) -> dict[str, Any]:
    """A GPU of `shares` consumable shares, nothing else."""
    return {
        "name": f"gpu-{index}",
        "allowMultipleAllocations": True,
        "capacity": {"shares": {"value": str(shares)}},
    }


gpu_slice = GpuSlices(share_gpu, gpus=1, driver=DRIVER)


def pod(
    name: str,
    namespace: str = "default",
    *,
    shares: int = 1,
    scheduler: str | None = SCHEDULER,
    uid: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    built = make_pod(name).namespace(namespace).container("server", "registry.example.com/web:1.4")
    built.limit(RESOURCE, shares).spec(**spec)
    if scheduler is not None:
        built.spec(schedulerName=scheduler)
    if uid is not None:
        built.meta(uid=uid)
    return built.labels(labels).obj()
