"""A ResourceSlice of NVIDIA-shaped GPUs and a DeviceClass review with KEP-6406 capacity requests (the cluster
cache and the cluster-aware warnings tests)."""

from __future__ import annotations

from typing import Any

from localcluster.objects import GpuSlices

DRIVER = "gpu.nvidia.com"


def h100(index: int, node: str, shares: int | None = 4) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "allowMultipleAllocations": True,
        "attributes": {"productName": {"string": "NVIDIA H100"}},
        "capacity": {"memory": {"value": "80Gi"}, "shares": {"value": str(shares)}},
    }


gpu_slice = GpuSlices(h100, driver=DRIVER, suffix="gpus")


def review(requests: dict[str, str]) -> dict[str, Any]:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu-shared"},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            "extendedResourceName": "nvidia.com/gpu.shared",
            "extendedResourceCapacityRequests": {"requests": requests},
        },
    }
    return {
        "uid": "1",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "deviceclasses"},
        "operation": "CREATE",
        "object": obj,
    }
