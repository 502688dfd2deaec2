"""Placement of pods with their own ResourceClaims (the common DRA workload) on N nodes x 8 NVIDIA GPUs.

Each node publishes one ResourceSlice of 8 GPUs in the shape the NVIDIA DRA driver (gpu.nvidia.com)
publishes: attributes productName, architecture, brand, type, uuid, index, minor, driverVersion,
cudaDriverVersion, cudaComputeCapability and the PCI attributes (resource.kubernetes.io/pcieRoot, pciBusID),
capacity `memory`; each GPU is dedicated (no allowMultipleAllocations). One running pod per node holds gpu-0
through an allocated claim. Then 2.5*N pending pods, each with its own ResourceClaim (as a
ResourceClaimTemplate gives them) asking for one GPU of the driver's class with a CEL selector on
productName, are placed one at a time with binpack and committed, exactly what `dra-capacity simulate` and
the binder run. Each N runs in a fresh subprocess so peak RSS is per run.

    .venv/bin/python bench/claim_pods.py                 # N = 100, 500, 2000, then the end-to-end run
    .venv/bin/python bench/claim_pods.py --n 500         # one N, in this process
    .venv/bin/python bench/claim_pods.py --e2e           # only the end-to-end run (N = 2000, 5000 pods)
    .venv/bin/python bench/claim_pods.py --n 5 --n 10 --e2e-size 20,50   # a smoke-sized run of everything
    .venv/bin/python bench/claim_pods.py --percentage 0  # kube-scheduler's adaptive node sampling

End to end: the same objects as one JSON List file, through `dra-capacity simulate -f FILE` in a subprocess
(parse, checks, placement, JSON output), timed from outside, peak RSS of the child.

Targets: >= 500 pods/s at N = 500 on one core; us/pod(2000) <= 2 x us/pod(100); the end-to-end run of 5,000
pods on 2,000 nodes under 60 s and 1 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from allocator.scheduling.placement import PlacementResult, Placer
from allocator.structured.cluster import Cluster
from localcluster.objects import make_slice
from resourceapi.api.core_v1 import Node, Pod
from resourceapi.api.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates

DRIVER = "gpu.nvidia.com"
CLASS = "gpu.nvidia.com"
GPUS_PER_NODE = 8
PRODUCT = "NVIDIA H100 80GB HBM3"
TYPE_IS_GPU = f"device.attributes['{DRIVER}'].type == 'gpu'"
PRODUCT_SELECTOR = f"device.attributes['{DRIVER}'].productName == '{PRODUCT}'"
DEFAULT_NS = (100, 500, 2000)
E2E_NODES, E2E_PODS = 2000, 5000


def pending_count(n: int) -> int:
    return n * 5 // 2


def device_class() -> dict[str, Any]:
    """The class the NVIDIA DRA driver's chart installs."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CLASS},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}' && {TYPE_IS_GPU}"}}]},
    }


def gpu(node_index: int, index: int) -> dict[str, Any]:
    bus = 0x18 + 0x10 * index
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "architecture": {"string": "Hopper"},
            "brand": {"string": "Nvidia"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "cudaDriverVersion": {"version": "12.8.0"},
            "driverVersion": {"version": "570.124.6"},
            "index": {"int": index},
            "minor": {"int": index},
            "productName": {"string": PRODUCT},
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{node_index:08x}-4a1b-{index:04x}-9c3d-5e6f7a8b9c0d"},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{(index // 4) * 0x80:02x}"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{bus:02x}:00.0"},
        },
        "capacity": {"memory": {"value": "81559Mi"}},
    }


def node_name(i: int) -> str:
    return f"node-{i:05d}"


def node(i: int) -> dict[str, Any]:
    name = node_name(i)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"},
        },
        "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "1Ti"}},
    }


def node_slice(i: int) -> dict[str, Any]:
    return make_slice(node_name(i), DRIVER).devices(*(gpu(i, g) for g in range(GPUS_PER_NODE))).obj()


def claim(name: str, allocated_on: str | None = None) -> dict[str, Any]:
    """A claim as the resourceclaim controller makes it from a one-GPU template (selector on productName)."""
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": CLASS,
                            "selectors": [{"cel": {"expression": PRODUCT_SELECTOR}}],
                        },
                    }
                ]
            }
        },
    }
    if allocated_on is not None:
        doc["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": DRIVER, "pool": allocated_on, "device": "gpu-0"}]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [allocated_on]}
                            ]
                        }
                    ]
                },
            }
        }
    return doc


def pod(name: str, claim_name: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "trainer",
                "image": "registry.example/trainer:1",
                "resources": {"requests": {"cpu": "4", "memory": "32Gi"}, "claims": [{"name": "gpu"}]},
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": spec,
    }


def cluster_objects(n: int, pending: int) -> list[dict[str, Any]]:
    """Classes, slices, nodes, running pods with their allocated claims, pending pods with their claims."""
    docs: list[dict[str, Any]] = [device_class()]
    for i in range(n):
        docs += [node(i), node_slice(i), claim(f"running-{i}-gpu", node_name(i))]
        docs.append(pod(f"running-{i}", f"running-{i}-gpu", node_name(i)))
    for k in range(pending):
        docs += [claim(f"train-{k}-gpu"), pod(f"train-{k}", f"train-{k}-gpu")]
    return docs


def run_one(n: int, percentage: int) -> dict[str, Any]:
    """Build the N-node cluster in memory, place and commit the pending pods, return the figures."""
    gates = FeatureGates.defaults()
    pending = pending_count(n)
    docs = cluster_objects(n, pending)
    classes = [DeviceClass.model_validate(d) for d in docs if d["kind"] == "DeviceClass"]
    slices = [ResourceSlice.model_validate(d) for d in docs if d["kind"] == "ResourceSlice"]
    nodes = [Node.model_validate(d) for d in docs if d["kind"] == "Node"]
    claims = {
        d["metadata"]["name"]: ResourceClaim.model_validate(d) for d in docs if d["kind"] == "ResourceClaim"
    }
    pods = [Pod.model_validate(d) for d in docs if d["kind"] == "Pod"]
    running = [p for p in pods if p.spec.node_name]
    allocated = [c for c in claims.values() if c.status is not None]
    del docs
    cluster = Cluster(gates, classes, slices, allocated)
    placer = Placer(
        cluster,
        gates,
        ExtendedResourceResolver(classes, gates),
        nodes,
        slices,
        running,
        percentage_of_nodes_to_score=percentage,
    )
    bound = 0
    used_nodes: set[str] = set()
    start, cpu_start = time.perf_counter(), time.process_time()
    for p in pods:
        if p.spec.node_name:
            continue
        mine = [
            claims[rc.resource_claim_name] for rc in p.spec.resource_claims or [] if rc.resource_claim_name
        ]
        placement = placer.place(p, mine)
        placer.commit(placement)
        if placement.result is PlacementResult.BOUND and placement.node is not None:
            bound += 1
            used_nodes.add(placement.node)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "n": n,
        "pods": pending,
        "bound": bound,
        "nodes_used": len(used_nodes),
        "seconds": round(elapsed, 3),
        "cpu_seconds": round(cpu, 3),
        "pods_per_s": round(pending / elapsed, 1),
        "pods_per_cpu_s": round(pending / cpu, 1),
        "us_per_pod": round(elapsed / pending * 1e6, 1),
        "cpu_us_per_pod": round(cpu / pending * 1e6, 1),
        "peak_rss_mib": round(rss_kib / 1024, 1),
    }


def run_e2e(percentage: int, nodes: int = E2E_NODES, pods: int = E2E_PODS) -> dict[str, Any]:
    """5,000 pods on 2,000 nodes through `dra-capacity simulate`: dump, parse, checks, placement, output."""
    docs = cluster_objects(nodes, pods)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        size_mib = path.stat().st_size / 2**20
        del docs
        cli = Path(sys.executable).with_name("dra-capacity")
        cmd = [str(cli), "simulate", "-f", str(path)]
        if percentage != 100:
            cmd += ["--percentage-of-nodes-to-score", str(percentage)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - start
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"dra-capacity simulate failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout)
    bound = sum(1 for p in out["pods"] if p["result"] == "bound")
    rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "n": nodes,
        "pods": pods,
        "bound": bound,
        "input_mib": round(size_mib, 1),
        "seconds": round(elapsed, 2),
        "cpu_seconds": round(children.ru_utime + children.ru_stime, 2),
        "peak_rss_mib": round(rss_kib / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, action="append", help="run only these N (in this process if one)")
    parser.add_argument("--e2e", action="store_true", help="only the end-to-end simulate run")
    parser.add_argument("--no-e2e", action="store_true", help="skip the end-to-end simulate run")
    parser.add_argument(
        "--percentage", type=int, default=100, help="--percentage-of-nodes-to-score (default 100)"
    )
    parser.add_argument(
        "--e2e-size",
        default=f"{E2E_NODES},{E2E_PODS}",
        metavar="NODES,PODS",
        help=f"the end-to-end run's size (default {E2E_NODES},{E2E_PODS}; the targets are for it)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (used by the driver)")
    args = parser.parse_args()
    e2e_nodes, e2e_pods = (int(v) for v in args.e2e_size.split(","))
    if args.e2e:
        figures = run_e2e(args.percentage, e2e_nodes, e2e_pods)
        print(_e2e_line(figures))
        return 0 if figures["bound"] == figures["pods"] else 1
    ns = args.n or list(DEFAULT_NS)
    if len(ns) == 1 and args.n:
        figures = run_one(ns[0], args.percentage)
        print(json.dumps(figures) if args.json else _line(figures))
        return 0 if figures["bound"] == figures["pods"] else 1
    rows = []
    for n in ns:
        cmd = [sys.executable, __file__, "--n", str(n), "--json", "--percentage", str(args.percentage)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=dict(os.environ))
        if proc.returncode != 0:
            print(f"N={n} failed:\n{proc.stdout}{proc.stderr}", file=sys.stderr)
            return 1
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(_line(rows[-1]), flush=True)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        ratio = last["us_per_pod"] / first["us_per_pod"]
        cpu_ratio = last["cpu_us_per_pod"] / first["cpu_us_per_pod"]
        print(
            f"ratio us/pod(N={last['n']}) / us/pod(N={first['n']}) = {ratio:.2f} wall, {cpu_ratio:.2f} CPU "
            "(target <= 2)"
        )
    for r in rows:
        if r["n"] == 500:
            print(f"N=500: {r['pods_per_s']} pods/s wall, {r['pods_per_cpu_s']} pods/CPU-s (target >= 500)")
    if not args.no_e2e:
        figures = run_e2e(args.percentage, e2e_nodes, e2e_pods)
        print(_e2e_line(figures))
        print(
            f"end to end: {figures['seconds']} s wall, {figures['cpu_seconds']} s CPU (target < 60), "
            f"peak RSS {figures['peak_rss_mib']} MiB (target < 1024)"
        )
    return 0


def _line(f: dict[str, Any]) -> str:
    return (
        f"N={f['n']:>5}  pods={f['pods']:>6}  bound={f['bound']:>6}  nodes used={f['nodes_used']:>5}  "
        f"{f['seconds']:>7.2f}s  {f['pods_per_s']:>7.1f} pods/s  {f['us_per_pod']:>7.1f} us/pod  "
        f"(CPU {f['cpu_seconds']:>7.2f}s  {f['pods_per_cpu_s']:>7.1f} pods/s  "
        f"{f['cpu_us_per_pod']:>7.1f} us/pod)  "
        f"peak RSS {f['peak_rss_mib']:>6.1f} MiB"
    )


def _e2e_line(f: dict[str, Any]) -> str:
    return (
        f"simulate end to end: N={f['n']} pods={f['pods']} bound={f['bound']} "
        f"input {f['input_mib']} MiB JSON  "
        f"{f['seconds']:.2f}s (CPU {f['cpu_seconds']:.2f}s)  peak RSS {f['peak_rss_mib']:.1f} MiB"
    )


if __name__ == "__main__":
    sys.exit(main())
