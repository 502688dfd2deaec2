"""Binding throughput and latency of `dra-capacity bind` against the kube-apiserver test double on loopback.

The double runs as its own process (`python -m tests.kubeapi`, pinned to one core when taskset exists); the
binder and the pod creators run in this process (pinned to the other; BINDER_BENCH_PIN=0 pins neither), with
the garbage-collector setting `dra-capacity bind` uses. Per cluster size N (nodes, each with GPUs of 4 shares,
a DeviceClass with KEP-6406 capacity):

* 1 pending: create a pod, wait for its Binding, repeat;
* 16 pending: keep 16 pods pending (BINDER_BENCH_PENDING), created by 4 threads, a new pod for each one
  bound, until --pods are bound;

and print pods/s, creation->Binding p50/p99 (create sent -> Binding answered), the binder's CPU per pod (this
process less the pod creators, by thread; its Events included), the creators' and the double's CPU per pod,
each process's share of its core and the load average, and the per-pod cost at the largest N over the
smallest. Targets: >= 200 pods/s with 16 pending; the binder's per-pod CPU at 2,000 nodes <= 1.5x its cost
at 100 nodes. The closing lines turn the CPU per pod into the throughput two idle cores allow: on a busy
machine (other processes on the cores) the measured rate falls short of it in proportion to the core share
the two processes got, and the CPU figures are the ones to compare. The double's serial GET rate and CPU per
GET are printed for context.

    .venv/bin/python bench/binder_bench.py [--nodes 100,2000] [--pods 400] [--single 40]

Profiling: `py-spy record --gil -p <pid>` of this process or of the double's (its child) shows where the CPU
goes; `binder_cpu_ms_per_pod_by_thread` says which threads spend it.
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
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from support.gpu_cluster import device_class, gpu_slice, node, pod  # noqa: E402

from binder.controller import Binder, BinderOptions  # noqa: E402
from binder.process import tune_garbage_collector  # noqa: E402
from kubeio.kube import DEVICE_CLASSES, NODES, PODS, RESOURCE_SLICES, Kube, load_configuration  # noqa: E402
from resourceapi.gates import FeatureGates  # noqa: E402

TARGET_PODS_PER_S = 200.0
TARGET_RATIO = 1.5
PENDING = int(os.environ.get("BINDER_BENCH_PENDING", "16"))  # pods kept pending in the throughput run
CREATORS = 4  # threads creating pods
PIN = os.environ.get("BINDER_BENCH_PIN", "1") != "0"  # the double on one core, this process on the other


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pinned(cpu: int, argv: list[str]) -> list[str]:
    if not PIN or shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        return argv
    return ["taskset", "-c", str(cpu), *argv]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (/proc/PID/stat; 0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Double:
    """The kube-apiserver test double (`python -m tests.kubeapi`) as its own process on a free loopback port:
    the one way the benches start it. `seeds` are manifests it creates before serving (`--seed`, without
    admission: bulk seeding); `cpu` the core it is pinned to (`pinned`), None for none."""

    def __init__(self, workdir: Path, seeds: Sequence[Path] = (), cpu: int | None = 1) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        argv = [
            sys.executable,
            "-m",
            "tests.kubeapi",
            "--port",
            str(free_port()),
            "--kubeconfig",
            str(self.kubeconfig),
        ]
        for path in seeds:
            argv += ["--seed", str(path)]
        started = time.monotonic()
        self.proc = subprocess.Popen(
            argv if cpu is None else pinned(cpu, argv),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if "serving" not in line:
            self.proc.kill()
            self.proc.wait()
            raise SystemExit(f"the API double did not start: {line.strip()}")
        self.start_seconds = time.monotonic() - started  # with the seeding

    def cpu_seconds(self) -> float:
        """The double process's CPU time so far."""
        return cpu_seconds(self.proc.pid)

    def stop(self, timeout: float = 10) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def thread_cpu() -> Counter[str]:
    """CPU seconds of this process's threads so far, by role (from /proc; empty where there is none)."""
    out: Counter[str] = Counter()
    tick = os.sysconf("SC_CLK_TCK")
    for t in threading.enumerate():
        try:
            fields = Path(f"/proc/self/task/{t.native_id}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, TypeError):
            continue
        role = t.name.split("_")[0].rstrip("-0123456789")  # binder-bind_3 -> binder-bind
        out[role] += (int(fields[11]) + int(fields[12])) / tick
    return out


def drain_events(binder: Any, timeout: float = 30.0) -> None:
    """Wait (at most `timeout` s) until the binder's background Event sender has sent what it holds."""
    drained = time.monotonic() + timeout
    while binder.events.backlog() and time.monotonic() < drained:
        time.sleep(0.05)
    time.sleep(0.1)


def seed(kube: Kube, nodes: int, gpus: int, shares: int = 4) -> None:
    kube.request("POST", DEVICE_CLASSES.path(), body=device_class(carrier="annotation"))

    def one(i: int) -> None:
        name = f"gpu-node-{i:04d}"
        kube.request("POST", NODES.path(), body=node(name))
        kube.request("POST", RESOURCE_SLICES.path(), body=gpu_slice(name, gpus=gpus, shares=shares))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(nodes)))


def double_ceiling(kube: Kube, double: Double, n: int = 200) -> tuple[float, float]:
    """The double's serial GET rate on this machine right now, and its CPU per GET (ms): the API side's
    ceiling, for context."""
    kube.request("POST", PODS.path("default"), body=pod("probe", scheduler="nobody"))
    cpu0, started = double.cpu_seconds(), time.perf_counter()
    for _ in range(n):
        kube.get(PODS, "default", "probe")
    return n / (time.perf_counter() - started), (double.cpu_seconds() - cpu0) / n * 1000


class Run:
    """Creates pods and records, per pod, the time from the create request to the Binding's answer."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.sent: dict[str, float] = {}
        self.latency: dict[str, float] = {}
        self.placed: dict[str, float] = {}  # when the scheduling thread placed it
        self.counts: Counter[str] = Counter()  # pods bound, by name prefix
        self.cond = threading.Condition()
        self.n = 0

    def hook(self, step: str, pod_obj: dict[str, Any]) -> None:
        if step == "placed":
            self.placed[pod_obj["metadata"]["name"]] = time.perf_counter()
        if step == "bound":
            name = pod_obj["metadata"]["name"]
            with self.cond:
                if name not in self.latency:
                    self.counts[name.rsplit("-", 1)[0]] += 1
                self.latency[name] = time.perf_counter() - self.sent[name]
                self.cond.notify_all()

    def create(self, prefix: str, **spec: Any) -> None:
        with self.cond:
            name = f"{prefix}-{self.n:05d}"
            self.n += 1
            self.sent[name] = time.perf_counter()
        self.kube.request("POST", PODS.path("default"), body=pod(name, **spec))

    def bound(self, prefix: str) -> int:
        return self.counts[prefix]

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
            double_rate, double_get_ms = double_ceiling(kube, double)
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
            dcpu0, creator0, threads0 = double.cpu_seconds(), time.thread_time(), thread_cpu()
            load0 = os.getloadavg()[0]
            cpu0, started = time.process_time(), time.perf_counter()
            created = 0
            # several creators, as a ReplicaSet controller creates pods in bursts: one serial creator would
            # cap the rate at one create round trip per pod
            creators = ThreadPoolExecutor(CREATORS, thread_name_prefix="creator")
            while run.bound("many") < total:
                while created - run.bound("many") < PENDING and created < total:
                    creators.submit(run.create, "many")
                    created += 1
                with run.cond:
                    if created - run.bound("many") >= PENDING or created >= total:
                        run.cond.wait(0.5)
            elapsed = time.perf_counter() - started
            drain_events(binder)  # the binds' Events go out on a background thread: count their cost too
            cpu = time.process_time() - cpu0
            by_thread = thread_cpu()
            by_thread.subtract(threads0)
            creators.shutdown()
            creator = time.thread_time() - creator0 + by_thread.pop("creator", 0.0)  # with this thread
            double_cpu = double.cpu_seconds() - dcpu0
            sent = kube.requests_sent - sent0
            binder.stop()
            many = [v for k, v in run.latency.items() if k.startswith("many")]
            one = [v for k, v in run.latency.items() if k.startswith("one")]
            to_placed = [run.placed[k] - run.sent[k] for k in run.latency if k.startswith("many")]
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
                "p50_ms_creation_to_placed_16_pending": statistics.median(to_placed) * 1000,
                "cpu_ms_per_pod": (cpu - creator) / total * 1000,
                "creator_cpu_ms_per_pod": creator / total * 1000,
                "double_cpu_ms_per_pod": double_cpu / total * 1000,
                "binder_cpu_ms_per_pod_by_thread": {
                    k: round(v / total * 1000, 2) for k, v in sorted(by_thread.items()) if k != "MainThread"
                },
                "binder_requests_per_pod": sent / total,
                "core_share_binder_process": cpu / elapsed,
                "core_share_double": double_cpu / elapsed,
                "load_average": max(load0, os.getloadavg()[0]),
                "double_get_per_s": double_rate,
                "double_cpu_ms_per_get": double_get_ms,
                "snapshot_rebuilds": binder.rebuilds,
                "changes": dict(binder.changes),
                "errors": binder.errors,
                "events_dropped": binder.events.dropped,
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
    if PIN and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    tune_garbage_collector()  # as `dra-capacity bind` does: this process is the binder's
    results = [measure(int(n), args.pods, args.single) for n in args.nodes.split(",")]
    for r in results:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    for r in results:
        verdict = "ok" if r["pods_per_s_16_pending"] >= TARGET_PODS_PER_S else "MISSED"
        print(
            f"{r['nodes']} nodes: {r['pods_per_s_16_pending']:.0f} pods/s bound with 16 pending (target >= "
            f"{TARGET_PODS_PER_S:.0f}: {verdict}), {r['pods_per_s_1_pending']:.0f} pods/s with 1 pending; "
            f"creation->Binding p50/p99 {r['p50_ms_16_pending']:.0f}/{r['p99_ms_16_pending']:.0f} ms (16 "
            f"pending), {r['p50_ms_1_pending']:.0f}/{r['p99_ms_1_pending']:.0f} ms (1 pending)"
        )
    first, last = results[0], results[-1]
    cpu_ratio = last["cpu_ms_per_pod"] / max(first["cpu_ms_per_pod"], 1e-3)
    verdict = "ok" if cpu_ratio <= TARGET_RATIO else "MISSED"
    print(
        f"per-pod cost {last['nodes']} vs {first['nodes']} nodes: binder CPU {last['cpu_ms_per_pod']:.2f} vs "
        f"{first['cpu_ms_per_pod']:.2f} ms, x{cpu_ratio:.2f} (target <= {TARGET_RATIO}: {verdict}); wall "
        f"x{last['ms_per_pod_16_pending'] / first['ms_per_pod_16_pending']:.2f}"
    )
    for r in results:
        binder_ms = max(r["cpu_ms_per_pod"] + r["creator_cpu_ms_per_pod"], 1e-3)
        double_ms = max(r["double_cpu_ms_per_pod"], 1e-3)  # 0 without /proc
        ceiling = 1000 / max(binder_ms, double_ms)
        print(
            f"CPU budget at {r['nodes']} nodes: the binder spends {r['cpu_ms_per_pod']:.2f} ms per pod "
            f"({r['binder_requests_per_pod']:.1f} requests: claim, claim status, pod status, Binding, Event) "
            f"and the pod creator beside it {r['creator_cpu_ms_per_pod']:.2f} ms, on one core; the double "
            f"spends {double_ms:.2f} ms per pod (6 writes with the pod's create, their watch events, its "
            f"controllers; a plain GET costs it {r['double_cpu_ms_per_get']:.2f} ms) on the other. With a "
            f"core each and nothing else running, that allows about {ceiling:.0f} pods/s "
            f"({1000 / binder_ms:.0f} binder side, {1000 / double_ms:.0f} double side); this run got "
            f"{r['pods_per_s_16_pending']:.0f}, using {r['core_share_binder_process']:.0%} of the binder's "
            f"core and {r['core_share_double']:.0%} of the double's, with a load average of "
            f"{r['load_average']:.1f} on {os.cpu_count()} cores"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
