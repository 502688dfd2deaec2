"""Issue 42's storm on the real control plane (v1.37, kwok nodes): do unschedulable pods starve new ones?

Pool A: `--nodes-a` kwok nodes labelled `pool=a`, each with `--gpus` NVIDIA-shaped GPUs of `--shares`
consumable shares (localcluster/objects.py `nvidia_gpu`), filled first by pods asking all `--shares` shares of
one GPU (a second DeviceClass whose KEP-6406 capacity request is every share), so filling is quick. Then, on
the same cluster and binder:

* quiet: `--pods` pods of one share selecting a freshly added pool (`pool=b-quiet`: nodes labelled and their
  slices published just before), created at `--rate` per second; their creation-to-Binding times;
* storm: `--pending` pods of one share selecting the full pool A (each tried once, then parked), a pool-A
  ResourceSlice republished every `--interval` s with a changed `driverVersion` (and a new pool generation, as
  a driver's slice controller writes it); after `--settle` s, the same `--pods` pods selecting another fresh
  pool (`pool=b-storm`).

Prints both p50/p99, their ratio (target: storm p99 <= 2x quiet p99), the binder's CPU per second while the
storm runs (before the new pods arrive), its placement attempts in that window (the parked pods' retries),
and its RSS (target < 1 GiB).

    nice -n 10 .venv/bin/python bench/binder_storm.py                # 500 nodes x 8 GPUs, 5,000 pending
    .venv/bin/python bench/binder_storm.py --smoke                   # 4 nodes, 40 pending: a quick check
"""

from __future__ import annotations

import argparse
import copy
import http.client
import os
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import kube_scheduler_side_by_side as sbs  # noqa: E402

from localcluster.cluster import CONTROLLERS, Cluster, ClusterConfig  # noqa: E402
from localcluster.objects import gpu_slice  # noqa: E402

RESOURCE = sbs.SHARED_RESOURCE
FILL_RESOURCE = "nvidia.com/gpu.whole-shares"  # a class asking all of a GPU's shares: one pod fills a GPU
DRIVER = sbs.SHARED_DRIVER
TARGET_RATIO = 2.0
TARGET_RSS_MIB = 1024.0


def fill_class(shares: int) -> dict[str, Any]:
    carrier = f'{{"requests":{{"shares":"{shares}"}}}}'
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu-all-shares", "annotations": {sbs.CARRIER: carrier}},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            "extendedResourceName": FILL_RESOURCE,
        },
    }


def bench_pod(name: str, pool: str, role: str, resource: str = RESOURCE) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": {resource: "1"}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": sbs.NS, "labels": {"bench-role": role}},
        "spec": {
            "schedulerName": sbs.BINDER_NAME,
            "nodeSelector": {"pool": pool},
            "containers": [container],
            "terminationGracePeriodSeconds": 0,
        },
    }


def create_all(cluster: Cluster, pods: list[dict[str, Any]], threads: int = 4) -> None:
    local = threading.local()

    def create(p: dict[str, Any]) -> None:
        if not hasattr(local, "conn"):
            local.conn = sbs.Conn(cluster)
        local.conn.request("POST", f"/api/v1/namespaces/{sbs.NS}/pods", p)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, pods))


def add_pool(cluster: Cluster, conn: sbs.Conn, nodes: list[str], pool: str, gpus: int, shares: int) -> None:
    """Label `nodes` into `pool` and publish their slices: a freshly added pool."""
    for n in nodes:
        patch = {"metadata": {"labels": {"pool": pool}}}
        conn.request("PATCH", f"/api/v1/nodes/{n}", patch, ctype="application/merge-patch+json")
        conn.request("POST", "/apis/resource.k8s.io/v1/resourceslices", gpu_slice(n, gpus, shares, DRIVER))


def wait(what: str, check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def pct(data: list[float], q: float) -> float:
    s = sorted(data)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000 if s else float("nan")


class BinderProbe:
    """The binder's /metrics and /proc figures."""

    def __init__(self, sched: sbs.Scheduler) -> None:
        assert sched.proc is not None
        self.pid = sched.proc.pid
        listen = next(a for a in sched.proc.args if str(a).startswith("--metrics-listen="))  # type: ignore[union-attr]
        self.port = int(str(listen).rsplit(":", 1)[1])

    def attempts(self) -> float:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        return sum(
            float(v)
            for v in re.findall(r"^dra_capacity_binder_allocation_attempts_total\{[^}]*\} (\S+)", text, re.M)
        )

    def cpu(self) -> float:
        return sbs.cpu_seconds(self.pid)

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")


class Republisher(threading.Thread):
    """Every `interval` s, one pool-A slice (in turn) with a new driverVersion and pool generation."""

    def __init__(self, cluster: Cluster, nodes: list[str], interval: float) -> None:
        super().__init__(daemon=True, name="republisher")
        self.conn, self.nodes, self.interval = sbs.Conn(cluster), nodes, interval
        self.stopped = threading.Event()
        self.count = 0

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            node = self.nodes[self.count % len(self.nodes)]
            path = f"/apis/resource.k8s.io/v1/resourceslices/{node}-{DRIVER}"
            obj = copy.deepcopy(self.conn.request("GET", path))
            self.count += 1
            for dev in obj["spec"]["devices"]:
                dev["attributes"]["driverVersion"] = {"version": f"550.54.{self.count}"}
            obj["spec"]["pool"]["generation"] = int(obj["spec"]["pool"].get("generation") or 1) + 1
            self.conn.request("PUT", path, obj)


def arrivals(cluster: Cluster, watch: sbs.Watch, prefix: str, pool: str, n: int, rate: float) -> list[float]:
    """`n` one-share pods selecting `pool`, one every 1/`rate` s: each one's creation-to-Binding seconds."""
    conn = sbs.Conn(cluster)
    sent: dict[str, float] = {}
    for i in range(n):
        name = f"{prefix}-{i}"
        sent[name] = time.monotonic()
        conn.request("POST", f"/api/v1/namespaces/{sbs.NS}/pods", bench_pod(name, pool, prefix))
        time.sleep(max(0.0, sent[name] + 1 / rate - time.monotonic()))
    wait(f"{prefix} pods bound", lambda: all(k in watch.bound for k in sent), 600)
    return [watch.bound[k] - t for k, t in sent.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes-a", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--shares", type=int, default=4)
    ap.add_argument("--pending", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=100)
    ap.add_argument("--rate", type=float, default=20.0, help="new pods per second")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between republishes")
    ap.add_argument("--settle", type=float, default=20.0, help="storm seconds before the new pods")
    ap.add_argument("--smoke", action="store_true", help="4 nodes x 2 GPUs, 40 pending, 10 pods")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    if args.smoke:
        args.nodes_a, args.gpus, args.pending, args.pods, args.settle = 4, 2, 40, 10, 5.0
    per_node = args.gpus * args.shares
    nodes_b = -(-args.pods // per_node)  # per fresh pool
    print(
        f"pool A {args.nodes_a} nodes x {args.gpus} GPUs x {args.shares} shares, filled by "
        f"{args.nodes_a * args.gpus} pods of {args.shares} shares; {args.pending} pending pods selecting A; "
        f"a pool-A slice republished every {args.interval} s; {args.pods} new pods at {args.rate}/s on a "
        f"fresh pool of {nodes_b} nodes; machine {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="binder-storm-", dir=args.workdir) as tmp:
        config = ClusterConfig(
            nodes=args.nodes_a + 2 * nodes_b,
            gpus_per_node=0,
            scheduler=False,
            ready_timeout=600,
            controllers=CONTROLLERS,
        )
        with Cluster.start(Path(tmp) / "cluster", config) as cluster:
            conn = sbs.Conn(cluster)
            conn.request("POST", "/api/v1/namespaces", {"metadata": {"name": sbs.NS}})
            for dc in (*sbs.classes(), fill_class(args.shares)):
                conn.request("POST", "/apis/resource.k8s.io/v1/deviceclasses", dc)
            names = cluster.node_names
            pool_a, b_quiet, b_storm = names[: args.nodes_a], names[args.nodes_a : -nodes_b], names[-nodes_b:]
            add_pool(cluster, conn, pool_a, "a", args.gpus, args.shares)
            wait(
                "the default ServiceAccount",
                lambda: (
                    conn.request("GET", f"/api/v1/namespaces/{sbs.NS}/serviceaccounts/default") is not None
                ),
                60,
            )
            listing = conn.request("GET", f"/api/v1/namespaces/{sbs.NS}/pods?limit=1")
            watch = sbs.Watch(cluster, listing["metadata"]["resourceVersion"])
            watch.start()
            settings = sbs.Settings(0, 0, 0, 0, 0, 0, 0)
            binder = sbs.Scheduler("binder", cluster, settings, Path(tmp))
            binder.start()
            probe = BinderProbe(binder)
            try:
                t0 = time.monotonic()
                fill = [
                    bench_pod(f"fill-{i}", "a", "fill", FILL_RESOURCE)
                    for i in range(args.nodes_a * args.gpus)
                ]
                create_all(cluster, fill)
                wait(
                    "pool A filled",
                    lambda: sum(k.startswith("fill-") for k in watch.bound) == len(fill),
                    1800,
                )
                print(f"pool A filled: {len(fill)} pods in {time.monotonic() - t0:.0f} s", flush=True)

                add_pool(cluster, conn, b_quiet, "b-quiet", args.gpus, args.shares)
                time.sleep(2.0)
                quiet = arrivals(cluster, watch, "quiet", "b-quiet", args.pods, args.rate)
                print(f"quiet: p50 {pct(quiet, 0.5):.0f} ms p99 {pct(quiet, 0.99):.0f} ms", flush=True)

                before = probe.attempts()
                t0 = time.monotonic()
                create_all(cluster, [bench_pod(f"pending-{i}", "a", "pending") for i in range(args.pending)])
                wait("every pending pod tried", lambda: probe.attempts() - before >= args.pending, 1800)
                print(f"{args.pending} pending pods tried once in {time.monotonic() - t0:.0f} s", flush=True)
                storm = Republisher(cluster, pool_a, args.interval)
                storm.start()
                time.sleep(min(2.0, args.settle))
                cpu0, att0, w0 = probe.cpu(), probe.attempts(), time.monotonic()
                time.sleep(max(args.settle - 2.0, 1.0))
                window = time.monotonic() - w0
                cpu_per_s = (probe.cpu() - cpu0) / window
                retries = probe.attempts() - att0
                add_pool(cluster, conn, b_storm, "b-storm", args.gpus, args.shares)
                time.sleep(2.0)
                stormy = arrivals(cluster, watch, "storm", "b-storm", args.pods, args.rate)
                storm.stopped.set()
                storm.join(10)
                rss = probe.rss_mib()
            finally:
                binder.stop()
                watch.stopped = True
    ratio = pct(stormy, 0.99) / pct(quiet, 0.99)
    print(
        f"storm: p50 {pct(stormy, 0.5):.0f} ms p99 {pct(stormy, 0.99):.0f} ms; {storm.count} republishes; "
        f"binder CPU {cpu_per_s:.3f} s/s and {retries:.0f} placement attempts over {window:.0f} s of storm "
        f"({args.pending} pods parked)",
        flush=True,
    )
    print(
        f"storm p99 / quiet p99: {ratio:.2f} (target <= {TARGET_RATIO}); binder RSS {rss:.0f} MiB "
        f"(target < {TARGET_RSS_MIB:.0f})",
        flush=True,
    )


if __name__ == "__main__":
    main()
