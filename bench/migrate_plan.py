"""`dra-capacity migrate plan` at cluster scale: the whole plan from an export, against its targets.

The export is a cluster in device-plugin mode: N nodes of 8 GPUs time-sliced 4 ways (`nvidia.com/gpu.shared:
32` in allocatable, gpu-feature-discovery's count and replicas labels), P running pods of one share each
(Deployments through their ReplicaSets, one in 50 with a PodDisruptionBudget), and the device plugin's
sharing ConfigMap. `dra-capacity migrate plan -f export.json --max-unavailable B -o json` runs in a fresh
process; its CPU seconds (user + system: the machine is shared, the wall clock mostly measures the other jobs)
and its peak RSS are printed against the targets, with the wall time beside.

    .venv/bin/python bench/migrate_plan.py                       # 5,000 nodes, 20,000 pods, batches of 100
    .venv/bin/python bench/migrate_plan.py --nodes 200 --pods 800 --batch 20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TARGET_S = 60.0
TARGET_RSS_GIB = 2.0
GPUS, REPLICAS = 8, 4
RESOURCE = "nvidia.com/gpu.shared"
PODS_PER_DEPLOYMENT = 20


def node(i: int) -> dict[str, Any]:
    name = f"gpu-node-{i:05d}"
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", RESOURCE: str(GPUS * REPLICAS)}
    labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.count": str(GPUS),
        "nvidia.com/gpu.replicas": str(REPLICAS),
        "topology.kubernetes.io/zone": f"zone-{i % 3}",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": resources, "capacity": resources},
    }


def pod(i: int, nodes: int) -> dict[str, Any]:
    deployment = f"app-{i // PODS_PER_DEPLOYMENT:05d}"
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{deployment}-5d8f", "controller": True,
             "uid": f"rs-{deployment}"}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{deployment}-5d8f-{i:06d}",
            "namespace": f"team-{i % 7}",
            "uid": f"pod-{i:06d}",
            "labels": {"app": deployment},
            "ownerReferences": [owner],
        },
        "spec": {
            "nodeName": f"gpu-node-{i * 7919 % nodes:05d}",
            "containers": [
                {
                    "name": "server",
                    "image": "registry.example.com/infer:1",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "4Gi", RESOURCE: "1"},
                        "limits": {RESOURCE: "1"},
                    },
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def owners(pods: int) -> list[dict[str, Any]]:
    out = []
    for d in range((pods + PODS_PER_DEPLOYMENT - 1) // PODS_PER_DEPLOYMENT):
        name = f"app-{d:05d}"
        ns = f"team-{d * PODS_PER_DEPLOYMENT % 7}"
        meta = {"name": name, "namespace": ns}
        out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta})
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{name}-5d8f",
                    "namespace": ns,
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": name,
                            "controller": True,
                            "uid": f"d-{name}",
                        }
                    ],
                },
            }
        )
        if d % 50 == 0:
            out.append(
                {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"maxUnavailable": 2, "selector": {"matchLabels": {"app": name}}},
                }
            )
    return out


def plugin_config() -> dict[str, Any]:
    config = {"version": "v1", "sharing": {"timeSlicing": {"renameByDefault": True,
              "resources": [{"name": "nvidia.com/gpu", "replicas": REPLICAS}]}}}  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
        "data": {"any": yaml.safe_dump(config)},
    }


def export(nodes: int, pods: int) -> dict[str, Any]:
    items = [node(i) for i in range(nodes)] + [pod(i, nodes) for i in range(pods)] + owners(pods)
    items.append(plugin_config())
    return {"apiVersion": "v1", "kind": "List", "items": items}


def run(path: Path, batch: int) -> tuple[float, float, float, dict[str, Any]]:
    """CPU seconds, wall seconds and peak RSS (GiB) of the plan in a fresh process, and its document."""
    exe = Path(sys.executable).with_name("dra-capacity")
    argv = [str(exe), "migrate", "plan", "-f", str(path), "--max-unavailable", str(batch), "-o", "json"]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"dra-capacity migrate plan failed: {status}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 2**20, json.loads(out)


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100, help="--max-unavailable")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "export.json"
        path.write_text(json.dumps(export(args.nodes, args.pods)))
        cpu, wall, rss, doc = run(path, args.batch)
    steps = doc["steps"][1:]
    moved = sum(len(s["pods"]) for s in steps)
    shares = sum(1 for s in steps for p in s["pods"] if p["via"] == "shares")
    print(f"export: {args.nodes} nodes x {GPUS} GPUs x {REPLICAS} replicas, {args.pods} running pods")
    print(f"plan: {len(steps)} steps of {args.batch} nodes, {moved} pod moves ({shares} onto shares), "
          f"fits: {doc['fits']}")  # fmt: skip
    print(f"time: {cpu:.1f} s CPU (target < {TARGET_S:.0f} s; {cpu / TARGET_S:.2f}x), {wall:.1f} s wall")
    print(f"peak RSS: {rss:.2f} GiB (target < {TARGET_RSS_GIB:.0f} GiB; {rss / TARGET_RSS_GIB:.2f}x)")
    last = doc["steps"][-1]["headroom"]
    print("headroom after the last step: " + ", ".join(f"{h['class']}={h['headroom']}" for h in last))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
