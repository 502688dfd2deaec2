"""The fake nodes kwok manages and the ResourceSlices a GPU driver would publish for them, as JSON objects.

The slices are shaped like the NVIDIA driver's that the benches and simulate tests use
(tests/allocator/workloads.py): driver `gpu.nvidia.com`, one pool per node, GPUs with productName, uuid,
driverVersion and index attributes and a memory capacity. With `shares`, each GPU is
`allowMultipleAllocations` with a consumable `shares` capacity only (KEP-6406's Story 1, as
docs/examples/gpu-shared/cluster.yaml); without, a whole device with an 80Gi memory capacity.
"""

from __future__ import annotations

from typing import Any

from localcluster.objects import make_node, make_slice

DRIVER = "gpu.nvidia.com"
# kwok manages exactly the nodes carrying this annotation (`--manage-nodes-with-annotation-selector`).
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
NODE_PREFIX = "kwok-node-"


def node(
    name: str, cpu: str = "32", memory: str = "256Gi", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A fake node: kubelet-style labels, capacity and allocatable; kwok makes it Ready, keeps its Lease."""
    resources = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "1Ti"}
    gpu_node = {"type": "kwok", "nvidia.com/gpu.present": "true", **(labels or {})}
    return (
        make_node(name)
        .annotations({KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"})
        .labels({"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **gpu_node})
        .spec()
        .capacity(**resources)
        .allocatable(**resources)
        .obj()
    )


def gpu(index: int, node_name: str, shares: int | None = 4) -> dict[str, Any]:
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
            "requestPolicy": {"default": "1", "validRange": {"min": "1", "max": str(shares), "step": "1"}},
        }
    return device


def gpu_slice(node_name: str, gpus: int = 2, shares: int | None = 4, driver: str = DRIVER) -> dict[str, Any]:
    """A node-local ResourceSlice (its own pool, one slice) with `gpus` GPUs."""
    return make_slice(node_name, driver).devices(*(gpu(i, node_name, shares) for i in range(gpus))).obj()
