"""Binding throughput and latency of `dra-capacity bind` against the kube-apiserver test double on loopback.

The double runs as its own process (`python -m tests.kubeapi`, pinned to one core when taskset exists); the
binder and the pod creator run in this process (pinned to the other). Per cluster size N (nodes, each with
GPUs of 4 shares, a DeviceClass with KEP-6406 capacity):

* 1 pending: create a pod, wait for its Binding, repeat;
* 16 pending: keep 16 pods pending (a new pod for each one bound) until --pods are bound;

and print pods/s, creation->Binding p50/p99 (client side: create sent -> Binding answered), the binder's
CPU per pod (this process: binder and pod creator; the double is another process), and the per-pod cost at
the largest N over the smallest. Targets: >= 200 pods/s with 16 pending; the binder's per-pod CPU at 2,000
nodes <= 1.5x its cost at 100 nodes. The double's own serial GET rate is printed for context: the binder
needs 5 writes per pod, so the double's ceiling bounds the throughput.

    .venv/bin/python bench/binder_bench.py [--nodes 100,2000] [--pods 400] [--single 40]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "binder"))

from gpu_cluster import device_class, gpu_slice, node, pod  # noqa: E402

from allocator.binder.controller import Binder, BinderOptions  # noqa: E402
from kubeio.kube import DEVICE_CLASSES, NODES, PODS, RESOURCE_SLICES, Kube, load_configuration  # noqa: E402
from resourceapi.gates import FeatureGates  # noqa: E402

TARGET_PODS_PER_S = 200.0
TARGET_RATIO = 1.5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int, argv: list[str]) -> list[str]:
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return argv
    return ["taskset", "-c", str(cpu), *argv]


class Double:
    def __init__(self, workdir: Path) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "tests.kubeapi",
            "--port",
            str(port),
            "--kubeconfig",
            str(self.kubeconfig),
        ]
        self.proc = subprocess.Popen(
            pinned(1, argv), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if "serving" not in line:
            raise SystemExit(f"the API double did not start: {line}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def seed(kube: Kube, nodes: int, gpus: int) -> None:
    kube.request("POST", DEVICE_CLASSES.path(), body=device_class(carrier="annotation"))

    def one(i: int) -> None:
        name = f"gpu-node-{i:04d}"
        kube.request("POST", NODES.path(), body=node(name))
        kube.request("POST", RESOURCE_SLICES.path(), body=gpu_slice(name, gpus=gpus, shares=4))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(nodes)))


def double_ceiling(kube: Kube, n: int = 200) -> float:
    """The double's serial GET rate on this machine right now: the API side's ceiling, for context."""
    kube.request("POST", PODS.path("default"), body=pod("probe", scheduler="nobody"))
    started = time.perf_counter()
    for _ in range(n):
        kube.get(PODS, "default", "probe")
    return n / (time.perf_counter() - started)


class Run:
    """Creates pods and records, per pod, the time from the create request to the Binding's answer."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.sent: dict[str, float] = {}
        self.latency: dict[str, float] = {}
        self.cond = threading.Condition()
        self.n = 0

    def hook(self, step: str, pod_obj: dict[str, Any]) -> None:
        if step == "bound":
            name = pod_obj["metadata"]["name"]
            with self.cond:
                self.latency[name] = time.perf_counter() - self.sent[name]
                self.cond.notify_all()

    def create(self, prefix: str) -> None:
        name = f"{prefix}-{self.n:05d}"
        self.n += 1
        with self.cond:
            self.sent[name] = time.perf_counter()
        self.kube.request("POST", PODS.path("default"), body=pod(name))

    def bound(self, prefix: str) -> int:
        return sum(1 for n in self.latency if n.startswith(prefix))

    def wait_bound(self, prefix: str, count: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.bound(prefix) < count:
                if not self.cond.wait(max(deadline - time.monotonic(), 0.0)) and time.monotonic() > deadline:
                    raise SystemExit(f"only {self.bound(prefix)}/{count} pods bound in {timeout:.0f}s")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def measure(nodes: int, total: int, single: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="binder-bench-") as tmp:
        double = Double(Path(tmp))
        try:
            kube = Kube(load_configuration(str(double.kubeconfig)))
            double_rate = double_ceiling(kube)
            gpus = max(1, math.ceil((total + single + 32) / (4 * nodes)))
            seed(kube, nodes, gpus)
            run = Run(Kube(load_configuration(str(double.kubeconfig))))
            binder = Binder(
                kube, FeatureGates.parse(""), options=BinderOptions(hook=run.hook, audit_routing=False)
            )
            binder.start()
            assert binder.wait_synced(60)
            # warm-up: the first pod of a shape evaluates every node
            run.create("warm")
            run.wait_bound("warm", 1)
            started = time.perf_counter()
            for _ in range(single):
                run.create("one")
                run.wait_bound("one", run.bound("one") + 1)
            single_s = time.perf_counter() - started
            sent0 = kube.requests_sent
            cpu0, started = time.process_time(), time.perf_counter()
            created = 0
            while run.bound("many") < total:
                while created - run.bound("many") < 16 and created < total:
                    run.create("many")
                    created += 1
                with run.cond:
                    if created - run.bound("many") >= 16 or created >= total:
                        run.cond.wait(0.5)
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - cpu0
            sent = kube.requests_sent - sent0
            binder.stop()
            many = [v for k, v in run.latency.items() if k.startswith("many")]
            one = [v for k, v in run.latency.items() if k.startswith("one")]
            return {
                "nodes": nodes,
                "pods": total,
                "pods_per_s_16_pending": total / elapsed,
                "pods_per_s_1_pending": single / single_s if single else 0.0,
                "p50_ms_16_pending": statistics.median(many) * 1000,
                "p99_ms_16_pending": pct(many, 99) * 1000,
                "p50_ms_1_pending": statistics.median(one) * 1000 if one else 0.0,
                "p99_ms_1_pending": pct(one, 99) * 1000 if one else 0.0,
                "ms_per_pod_16_pending": elapsed / total * 1000,
                "cpu_ms_per_pod": cpu / total * 1000,
                "binder_requests_per_pod": sent / total,
                "double_get_per_s": double_rate,
                "snapshot_rebuilds": binder.rebuilds,
                "changes": dict(binder.changes),
                "errors": binder.errors,
            }
        finally:
            double.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", default="100,2000")
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--single", type=int, default=40)
    args = parser.parse_args()
    if shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    results = [measure(int(n), args.pods, args.single) for n in args.nodes.split(",")]
    for r in results:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    first, last = results[0], results[-1]
    ratio = last["ms_per_pod_16_pending"] / first["ms_per_pod_16_pending"]
    cpu_ratio = last["cpu_ms_per_pod"] / first["cpu_ms_per_pod"]
    best = max(r["pods_per_s_16_pending"] for r in results)
    verdict = "ok" if best >= TARGET_PODS_PER_S else "MISSED"
    print(
        f"binding throughput, 16 pending: {first['pods_per_s_16_pending']:.0f} pods/s at {first['nodes']} "
        f"nodes (target >= {TARGET_PODS_PER_S:.0f}: {verdict}); "
        f"1 pending: {first['pods_per_s_1_pending']:.0f} pods/s"
    )
    verdict = "ok" if cpu_ratio <= TARGET_RATIO else "MISSED"
    print(
        f"per-pod cost {last['nodes']} vs {first['nodes']} nodes: binder CPU x{cpu_ratio:.2f} "
        f"(target <= {TARGET_RATIO}: {verdict}); wall x{ratio:.2f} (includes the double, whose own GET rate "
        f"went {first['double_get_per_s']:.0f} -> {last['double_get_per_s']:.0f}/s)"
    )
    per_pod = first["binder_requests_per_pod"]
    print(
        f"the binder sends {per_pod:.1f} requests per pod (claim, claim status, pod status, Binding, Event); "
        f"at {first['pods_per_s_16_pending']:.0f} pods/s that is "
        f"{per_pod * first['pods_per_s_16_pending']:.0f} requests/s against a double serving "
        f"{first['double_get_per_s']:.0f} plain GETs/s here"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
