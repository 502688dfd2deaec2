"""`dra-capacity top` and the binder's capacity metrics at cluster scale: three figures against their targets.

The dump is bench/simulate_dump.py's (N nodes x 8 shareable GPUs, the KEP-6406 DeviceClass), with R of its
pods running (bound, each holding one share through an allocated claim, as the binder leaves them) and P
pending. Times are CPU seconds (the machine is shared: the wall clock mostly measures the other jobs); the
wall time is printed beside.

  1. cold: `dra-capacity top -f dump.json` in a fresh process (read, check, model, usage, headroom by
     placement, print); target < 5 s at 5,000 nodes.
  2. warm refresh: the view loaded, one change (a claim allocated or released on a random node, with its
     pod), then the whole report (usage per class and node, pending pods, headroom); target < 50 ms.
  3. metrics upkeep: the binder's `UsageMetrics` fed the same objects as informer events, then one claim
     change (allocated <-> released) and one pod change at a time through `feed.on_claim` / `feed.on_pod`,
     as the informer threads call them; target < 1 ms of CPU per change. The scrape after a change
     (headroom of the changed node, counted again) is printed beside, for information.

    .venv/bin/python bench/top_bench.py                    # 5,000 nodes, 10,000 running, 10,000 pending
    .venv/bin/python bench/top_bench.py --nodes 500 --running 1000 --pending 1000
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import simulate_dump as sd  # noqa: E402

COLD_TARGET_S = 5.0
REFRESH_TARGET_MS = 50.0
UPKEEP_TARGET_MS = 1.0


def claim(i: int, node_index: int, gpu: int) -> dict[str, Any]:
    name = f"gpu-node-{node_index:05d}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"run-{i:06d}-extended-resources-x", "namespace": "ml", "uid": sd._uid(8, i)},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "container-0-request-0",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com-shared-1",
                            "capacity": {"requests": {"shares": "1"}},
                        },
                    }
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "container-0-request-0",
                            "driver": sd.DRIVER,
                            "pool": name,
                            "device": f"gpu-{gpu}",
                            "shareID": sd._uid(9, i),
                            "consumedCapacity": {"shares": "1"},
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
                    ]
                },
            }
        },
    }


def shares_only_slice(i: int) -> dict[str, Any]:
    """simulate_dump's slice without the memory capacity: each GPU holds 4 shares of one pod each (with an
    unrequested 80Gi memory capacity and no default, one share would consume all the memory)."""
    s = sd.resource_slice(i)
    for d in s["spec"]["devices"]:
        d["capacity"].pop("memory", None)
    return s


def build_dump(nodes: int, running: int, pending: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [sd.node(i) for i in range(nodes)]
    items += [shares_only_slice(i) for i in range(nodes)]
    items.append(sd.device_class())
    for i in range(running):
        node_index, slot = (i // 16) % nodes, i % 16
        pod = sd.pod(i)
        pod["spec"]["nodeName"] = f"gpu-node-{node_index:05d}"
        pod["status"] = {"phase": "Running", "qosClass": "Burstable"}
        items += [pod, claim(i, node_index, slot // 4 * 2 % sd.GPUS_PER_NODE + slot % 2)]
    items += [sd.pod(running + i) for i in range(pending)]
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def cold(path: Path) -> tuple[float, float, dict[str, Any]]:
    """CPU and wall seconds of `dra-capacity top -o json` in a fresh process, and its output."""
    exe = Path(sys.executable).with_name("dra-capacity")
    start = time.perf_counter()
    proc = subprocess.Popen([str(exe), "top", "-f", str(path), "-o", "json"], stdout=subprocess.PIPE)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"dra-capacity top failed: {status}")
    return usage.ru_utime + usage.ru_stime, wall, json.loads(out)


def warm_refresh(path: Path, changes: int) -> list[float]:
    """CPU ms of one change plus the whole report, with the view loaded and reported once."""
    from dra_capacity.top_cmd import load_view
    from resourceapi.api.core_v1 import Pod
    from resourceapi.api.resource_v1 import ResourceClaim
    from resourceapi.gates import FeatureGates

    view = load_view(FeatureGates.defaults(), [str(path)], "binpack")
    view.report()
    nodes = sorted(view.usage.nodes())
    rng = random.Random(1)
    times = []
    for k in range(changes):
        index = rng.randrange(len(nodes))
        raw = claim(900_000 + k, index, rng.randrange(sd.GPUS_PER_NODE))
        pod = sd.pod(900_000 + k)
        pod["spec"]["nodeName"] = nodes[index]
        start = time.process_time()
        if k % 2 == 0:
            view.upsert_claim(ResourceClaim.model_validate(raw))
            view.upsert_pod(Pod.model_validate(pod))
        else:
            view.delete_claim(("ml", raw["metadata"]["name"]))
            view.delete_pod(("ml", pod["metadata"]["name"]))
        view.report()
        times.append((time.process_time() - start) * 1000)
    return times


def upkeep(path: Path, changes: int) -> tuple[list[float], list[float], list[float]]:
    """CPU ms per claim change and per pod change through the binder's feed, and of a scrape after one."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import generate_latest

    from binder.usage_metrics import UsageMetrics
    from resourceapi.gates import FeatureGates

    data = json.loads(path.read_bytes())
    registry = CollectorRegistry()
    usage = UsageMetrics(registry, FeatureGates.defaults())
    feed = usage.feed
    handlers = {
        "DeviceClass": feed.on_class,
        "ResourceSlice": feed.on_slice,
        "Node": feed.on_node,
        "ResourceClaim": feed.on_claim,
        "Pod": feed.on_pod,
    }
    for obj in data["items"]:
        handlers[obj["kind"]]("ADDED", None, obj)
    generate_latest(registry)  # the first scrape counts every node
    claims = [o for o in data["items"] if o["kind"] == "ResourceClaim"]
    pods = [o for o in data["items"] if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    rng = random.Random(2)
    claim_ms, pod_ms, scrape_ms = [], [], []
    for _ in range(changes):
        old = rng.choice(claims)
        released = copy.deepcopy(old)
        del released["status"]
        start = time.process_time()
        feed.on_claim("MODIFIED", old, released)
        claim_ms.append((time.process_time() - start) * 1000)
        start = time.process_time()
        feed.on_claim("MODIFIED", released, old)
        claim_ms.append((time.process_time() - start) * 1000)
        pod = rng.choice(pods)
        start = time.process_time()
        feed.on_pod("DELETED", pod, None)
        pod_ms.append((time.process_time() - start) * 1000)
        start = time.process_time()
        feed.on_pod("ADDED", None, pod)
        pod_ms.append((time.process_time() - start) * 1000)
        start = time.process_time()
        generate_latest(registry)
        scrape_ms.append((time.process_time() - start) * 1000)
    return claim_ms, pod_ms, scrape_ms


def _summary(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   max {ordered[-1]:7.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=10000)
    parser.add_argument("--pending", type=int, default=10000)
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dump.json"
        path.write_text(json.dumps(build_dump(args.nodes, args.running, args.pending)))
        size = path.stat().st_size / 1e6
        print(
            f"dump: {args.nodes} nodes, {args.running} running pods with claims, {args.pending} pending "
            f"({size:.0f} MB)"
        )
        cpu, wall, out = cold(path)
        [row] = out["classes"]
        print(
            f"1. cold `top`:     {cpu:6.2f} s CPU ({wall:.2f} s wall)   target < {COLD_TARGET_S:.0f} s   "
            f"ratio {cpu / COLD_TARGET_S:.2f}   "
            f"[{row['used']}/{row['total']} used, headroom {row['headroom']}]"
        )
        times = warm_refresh(path, args.changes)
        print(
            f"2. warm refresh:   {_summary(times)}   target < {REFRESH_TARGET_MS:.0f} ms   "
            f"ratio {statistics.median(times) / REFRESH_TARGET_MS:.2f}"
        )
        claim_ms, pod_ms, scrape_ms = upkeep(path, args.changes)
        both = claim_ms + pod_ms
        print(
            f"3. metrics upkeep: {_summary(both)}   target < {UPKEEP_TARGET_MS:.0f} ms   "
            f"ratio {statistics.median(both) / UPKEEP_TARGET_MS:.2f}"
        )
        print(f"   claim changes:  {_summary(claim_ms)}")
        print(f"   pod changes:    {_summary(pod_ms)}")
        print(f"   scrape after a change (headroom of the changed node counted again): {_summary(scrape_ms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
