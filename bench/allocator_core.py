"""Cost of the allocator core alone: `Cluster.allocate` + `commit` per pod, on N nodes x 8 shared GPUs.

Each pod's claim asks for 1 of the 4 `shares` of a GPU; every node is filled (32 pods) and then must refuse a
33rd. Placement is not involved (the node is given), so this measures what placement pays per node it tries.
Prints µs per allocate+commit, pods/s and the ratio of per-pod cost at the largest N to the smallest, which
must stay near 1: the cost depends on the node's devices, not on the cluster's size.

    .venv/bin/python bench/allocator_core.py [N ...]     (default: 100 500 2000)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allocator.structured.cluster import Cluster, NodeInfo
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.gates import FeatureGates

DRIVER = "gpu.nvidia.com"
CLASS = "gpu.nvidia.com-shared-1"


def gpu_class() -> DeviceClass:
    expression = f'device.driver == "{DRIVER}" && device.allowMultipleAllocations'
    return DeviceClass.model_validate(
        {"metadata": {"name": CLASS}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}
    )


def node_slice(n: int) -> ResourceSlice:
    devices = [
        {
            "name": f"gpu-{i}",
            "allowMultipleAllocations": True,
            "attributes": {
                "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                "index": {"int": i},
                "uuid": {"string": f"GPU-{n:05d}-{i}"},
                "driverVersion": {"version": "560.35.3"},
            },
            "capacity": {
                "shares": {
                    "value": "4",
                    "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}},
                }
            },
        }
        for i in range(8)
    ]
    spec = {
        "driver": DRIVER,
        "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
        "nodeName": f"node-{n}",
        "devices": devices,
    }
    return ResourceSlice.model_validate({"metadata": {"name": f"node-{n}-{DRIVER}"}, "spec": spec})


def pod_claim(name: str) -> ResourceClaim:
    request = {
        "name": "container-0-request-0",
        "exactly": {
            "deviceClassName": CLASS,
            "allocationMode": "ExactCount",
            "count": 1,
            "capacity": {"requests": {"shares": "1"}},
        },
    }
    return ResourceClaim.model_validate(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {"requests": [request]}}}
    )


def run(nodes: int) -> float:
    """Seconds per pod (allocate + commit), after building the cluster."""
    core = Cluster(FeatureGates.defaults(), [gpu_class()], [node_slice(n) for n in range(nodes)])
    claims = [pod_claim(f"pod-{k}") for k in range(33)]
    pods = 0
    start = time.perf_counter()
    for n in range(nodes):
        info = NodeInfo(f"node-{n}", {})
        for k in range(32):
            outcome = core.allocate(info, [claims[k]])
            if outcome.results is None:
                raise SystemExit(f"node-{n}: pod {k} did not fit: {outcome.error}")
            core.commit(claims[k], outcome.results[0])
            pods += 1
        if core.allocate(info, [claims[32]]).results is not None:
            raise SystemExit(f"node-{n}: a 33rd share fit")
    return (time.perf_counter() - start) / pods


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [100, 500, 2000]
    costs: dict[int, float] = {}
    for n in sizes:
        costs[n] = run(n)
        print(f"N={n:5d} nodes  {32 * n:6d} pods  {costs[n] * 1e6:7.1f} µs/pod  {1 / costs[n]:8.0f} pods/s")
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        print(f"per-pod cost ratio N={hi} / N={lo}: {costs[hi] / costs[lo]:.2f} (target <= 2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
