"""The fake nodes kwok manages, as JSON objects; the ResourceSlices a GPU driver would publish for them are
`localcluster.objects.gpu_slice` (NVIDIA-shaped, as docs/examples/gpu-shared/cluster.yaml)."""

from __future__ import annotations

from typing import Any

from localcluster.objects import GPU_DRIVER, make_node

DRIVER = GPU_DRIVER
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
