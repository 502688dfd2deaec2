"""The binder's CPU per pod on a busy cluster: a claim changes every 10 ms while pods are bound.

Against the kube-apiserver test double (a process on loopback; it sends no node heartbeats), per cluster
size N (nodes with GPUs of 4 shares, as binder_bench.py): a writer thread flips one user ResourceClaim
between allocated (a share of a GPU on the last node) and deallocated every `--interval` ms, while pods are
created and bound with 16 pending. Printed: the binder's CPU per pod (its threads: scheduling, binds,
informers, Events; not the pod creators, not the churn writer), snapshots built, claim changes seen, and the
ratio of the largest N to the smallest. Target: <= 1.5x.

Every relevant change used to throw the whole snapshot away, so at N nodes each pod paid for parsing and
indexing N nodes and slices; fed incrementally, a claim's change costs the nodes it touches.

    .venv/bin/python bench/binder_churn.py [--nodes 100,5000] [--pods 200] [--interval 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import binder_bench  # noqa: E402
from binder_bench import PIN, Double, Run, seed, thread_cpu  # noqa: E402
from support.gpu_cluster import CLASS, DRIVER  # noqa: E402

from binder.controller import Binder, BinderOptions  # noqa: E402
from binder.process import tune_garbage_collector  # noqa: E402
from kubeio.kube import RESOURCE_CLAIMS, ApiError, Kube, load_configuration  # noqa: E402
from resourceapi.gates import FeatureGates  # noqa: E402

TARGET_RATIO = 1.5
PENDING = 16
CREATORS = 4


class Churn:
    """Flips one user claim between allocated (on `node`) and deallocated, every `interval` seconds."""

    def __init__(self, kube: Kube, node: str, interval: float) -> None:
        self.kube = kube
        self.node = node
        self.interval = interval
        self.writes = 0
        self.failures = 0
        self._stop = threading.Event()
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "churn", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}},
        }
        self.claim: dict[str, Any] = kube.request("POST", RESOURCE_CLAIMS.path("default"), body=body)
        self.thread = threading.Thread(target=self._run, name="churn", daemon=True)

    def _status(self, allocated: bool) -> dict[str, Any]:
        if not allocated:
            return {}
        result = {
            "request": "gpu",
            "driver": DRIVER,
            "pool": self.node,
            "device": "gpu-0",
            "shareID": str(uuid.uuid4()),
            "consumedCapacity": {"shares": "1"},
        }
        selector = {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [self.node]}]}
            ]
        }
        return {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}

    def _run(self) -> None:
        allocated = False
        next_at = time.monotonic()
        while not self._stop.is_set():
            allocated = not allocated
            body = {**self.claim, "status": self._status(allocated)}
            try:
                self.claim = self.kube.request(
                    "PUT", RESOURCE_CLAIMS.path("default", "churn", "status"), body=body
                )
                self.writes += 1
            except ApiError:
                self.failures += 1
                self.claim = self.kube.get(RESOURCE_CLAIMS, "default", "churn")
            next_at += self.interval
            self._stop.wait(max(next_at - time.monotonic(), 0.0))

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(5)


def measure(nodes: int, total: int, interval: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="binder-churn-") as tmp:
        double = Double(Path(tmp))
        try:
            config = str(double.kubeconfig)
            kube = Kube(load_configuration(config))
            gpus = max(1, -(-(total + 32) // (4 * nodes)))
            seed(kube, nodes, gpus)
            churn = Churn(Kube(load_configuration(config)), f"gpu-node-{nodes - 1:04d}", interval)
            run = Run(Kube(load_configuration(config)))
            binder = Binder(
                kube, FeatureGates.parse(""), options=BinderOptions(hook=run.hook, audit_routing=False)
            )
            binder.start()
            assert binder.wait_synced(120)
            run.create("warm")  # the first pod of a shape evaluates every node
            run.wait_bound("warm", 1, timeout=600)
            churn.start()
            time.sleep(0.5)
            rebuilds0, changes0 = binder.rebuilds, sum(binder.changes.values())
            threads0 = thread_cpu()
            started = time.perf_counter()
            created = 0
            creators = ThreadPoolExecutor(CREATORS, thread_name_prefix="creator")
            while run.bound("many") < total:
                while created - run.bound("many") < PENDING and created < total:
                    creators.submit(run.create, "many")
                    created += 1
                with run.cond:
                    if created - run.bound("many") >= PENDING or created >= total:
                        run.cond.wait(0.5)
            elapsed = time.perf_counter() - started
            by_thread = thread_cpu()
            by_thread.subtract(threads0)
            churn.stop()
            creators.shutdown()
            binder.stop()
            binder_cpu = sum(v for k, v in by_thread.items() if k not in ("creator", "churn", "MainThread"))
            return {
                "nodes": nodes,
                "pods": total,
                "binder_cpu_ms_per_pod": binder_cpu / total * 1000,
                "binder_cpu_ms_per_pod_by_thread": {
                    k: round(v / total * 1000, 2)
                    for k, v in sorted(by_thread.items())
                    if k not in ("creator", "churn", "MainThread")
                },
                "pods_per_s": total / elapsed,
                "churn_writes_per_s": churn.writes / (elapsed + 0.5),
                "churn_failures": churn.failures,
                "snapshot_rebuilds": binder.rebuilds - rebuilds0,
                "changes_seen": sum(binder.changes.values()) - changes0,
                "errors": binder.errors,
                "load_average": os.getloadavg()[0],
            }
        finally:
            double.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", default="100,5000")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--interval", type=float, default=10.0, help="ms between the churn writer's updates")
    args = parser.parse_args()
    if PIN and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    tune_garbage_collector()
    results = [measure(int(n), args.pods, args.interval / 1000) for n in args.nodes.split(",")]
    for r in results:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    first, last = results[0], results[-1]
    ratio = last["binder_cpu_ms_per_pod"] / max(first["binder_cpu_ms_per_pod"], 1e-3)
    verdict = "ok" if ratio <= TARGET_RATIO else "MISSED"
    print(
        f"binder CPU per pod with a claim changing every {args.interval:g} ms: {last['nodes']} nodes "
        f"{last['binder_cpu_ms_per_pod']:.2f} ms ({last['snapshot_rebuilds']} snapshots built), "
        f"{first['nodes']} nodes {first['binder_cpu_ms_per_pod']:.2f} ms "
        f"({first['snapshot_rebuilds']} built): "
        f"x{ratio:.2f} (target <= {TARGET_RATIO}: {verdict})"
    )
    return 0


if __name__ == "__main__":
    assert binder_bench.ROOT == ROOT
    sys.exit(main())
