"""GPU-shares placement benchmark: N nodes x 8 GPUs (4 shares each), 4*8*N pods asking for one share each.

Every pod goes through pod-mode placement (predicates, claim synthesis with KEP-6406 capacity, allocation,
binpack scoring, commit), exactly what `dra-capacity simulate` and the binder run. Each N runs in a fresh
subprocess so peak RSS is per run. Prints pods/s, us/pod, peak RSS and the ratio us/pod(max N)/us/pod(min N).

    .venv/bin/python bench/gpu_shares.py              # N = 100, 500, 2000
    .venv/bin/python bench/gpu_shares.py --n 500      # one N, in this process
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allocator.scheduling.placement import Placer
from allocator.structured.cluster import Cluster
from localcluster.objects import make_slice
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates

GPUS_PER_NODE = 8
SHARES_PER_GPU = 4
DRIVER = "gpu.nvidia.com"
RESOURCE = "nvidia.com/gpu.shared"
DEFAULT_NS = (100, 500, 2000)


def device_class() -> DeviceClass:
    """The KEP's Story 1 class: one share of a time-sliced GPU per unit of nvidia.com/gpu.shared."""
    return DeviceClass.model_validate(
        {
            "metadata": {"name": "gpu.nvidia.com-shared-1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": f'device.driver == "{DRIVER}" && '
                            'device.capacity["gpu.nvidia.com"].shares.isGreaterThan(quantity("0"))'
                        }
                    }
                ],
                "extendedResourceName": RESOURCE,
                "extendedResourceCapacityRequests": {"requests": {"shares": "1"}},
            },
        }
    )


def gpu(node: str, index: int) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "allowMultipleAllocations": True,
        "attributes": {
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "architecture": {"string": "Hopper"},
            "uuid": {"string": f"GPU-{abs(hash((node, index))) % 10**12:012d}-{index}"},
            "driverVersion": {"version": "550.127.5"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "index": {"int": index},
            "memory": {"int": 80 * 1024**3},
        },
        "capacity": {
            "shares": {
                "value": str(SHARES_PER_GPU),
                "requestPolicy": {
                    "default": "1",
                    "validRange": {"min": "1", "max": str(SHARES_PER_GPU), "step": "1"},
                },
            }
        },
    }


def node(name: str) -> Node:
    return Node.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"},
            },
            "status": {
                "allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "1Ti"}
            },
        }
    )


def node_slice(name: str) -> ResourceSlice:
    slice_ = make_slice(name).devices(*(gpu(name, i) for i in range(GPUS_PER_NODE)))
    return ResourceSlice.model_validate(slice_.obj())


def pods(count: int) -> Iterator[Pod]:
    """Pods made on the fly, so the benchmark does not hold 4*8*N pod objects at once."""
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "containers": [
                {
                    "name": "inference",
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "256Mi", RESOURCE: "1"},
                        "limits": {RESOURCE: "1"},
                    },
                }
            ]
        },
    }
    for i in range(count):
        yield Pod.model_validate(
            {**template, "metadata": {"name": f"infer-{i}", "namespace": "ml", "uid": f"u-{i}"}}
        )


def run_one(n: int) -> dict[str, Any]:
    """Build an N-node cluster, place 4*8*N pods, return the figures."""
    gates = FeatureGates.defaults()
    classes = [device_class()]
    names = [f"node-{i:05d}" for i in range(n)]
    slices = [node_slice(name) for name in names]
    cluster = Cluster(gates, classes, slices)
    placer = Placer(
        cluster, gates, ExtendedResourceResolver(classes, gates), [node(x) for x in names], slices
    )
    total = SHARES_PER_GPU * GPUS_PER_NODE * n
    bound = 0
    start = time.perf_counter()
    for p in pods(total):
        placement = placer.place(p)
        placer.commit(placement)
        bound += placement.result == "bound"
    elapsed = time.perf_counter() - start
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "n": n,
        "pods": total,
        "bound": bound,
        "seconds": round(elapsed, 3),
        "pods_per_s": round(total / elapsed, 1),
        "us_per_pod": round(elapsed / total * 1e6, 1),
        "peak_rss_mib": round(rss_kib / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, action="append", help="run only these N (in this process if one)")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object per N (used by the driver)"
    )
    args = parser.parse_args()
    ns = args.n or list(DEFAULT_NS)
    if len(ns) == 1 and args.n:
        figures = run_one(ns[0])
        print(json.dumps(figures) if args.json else _line(figures))
        return 0 if figures["bound"] == figures["pods"] else 1
    rows = []
    for n in ns:
        proc = subprocess.run(
            [sys.executable, __file__, "--n", str(n), "--json"], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            print(f"N={n} failed:\n{proc.stdout}{proc.stderr}", file=sys.stderr)
            return 1
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(_line(rows[-1]), flush=True)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratio = last["us_per_pod"] / first["us_per_pod"]
        print(f"ratio us/pod(N={last['n']}) / us/pod(N={first['n']}) = {ratio:.2f}  (target <= 2)")
    for r in rows:
        if r["n"] == 500:
            print(f"N=500: {r['pods_per_s']} pods/s (target >= 1000)")
        if r["n"] == 2000:
            print(f"N=2000: peak RSS {r['peak_rss_mib']} MiB (target < 1024)")
    return 0


def _line(f: dict[str, Any]) -> str:
    return (
        f"N={f['n']:>5}  pods={f['pods']:>6}  bound={f['bound']:>6}  {f['seconds']:>8.2f}s  "
        f"{f['pods_per_s']:>8.1f} pods/s  {f['us_per_pod']:>8.1f} us/pod  "
        f"peak RSS {f['peak_rss_mib']:>7.1f} MiB"
    )


if __name__ == "__main__":
    sys.exit(main())
