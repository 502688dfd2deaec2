"""Issue 42's storm on the API double: what one unschedulable attempt costs the binder at N nodes.

The double runs as its own process (`python -m tests.kubeapi`); the binder runs in this process, its
scheduling cycles timed one by one (`SchedulingCycle.schedule`, wall time, the binder's lock held). Pool A:
`--nodes` nodes labelled `pool=a` of `--gpus` GPUs x 4 shares, every share taken by an allocated claim;
`--pending` one-share pods selecting pool A, each with its own `kube-api-access-<random>` volume as the API
server gives every pod; then, with one pool-A slice republished every second (a changed attribute, a new
pool generation), every parked pod is put back as upstream's 5-minute leftover flush does, and `--new` pods
selecting a fresh pool B (2 nodes) arrive at 20/s. Prints the first attempts' per-attempt time, the flushed
attempts' time, the new pods' creation-to-Binding p50/max during the flush, the diagnoses run, and what
building the snapshot afresh costs (what a Node change, such as labelling a new pool, costs the next attempt).

    nice -n 10 .venv/bin/python bench/binder_storm_attempts.py               # 500 nodes, 200 pending
    .venv/bin/python bench/binder_storm_attempts.py --nodes 4 --gpus 2 --pending 10 --new 4    # smoke

`--profile` prints a cProfile of the first attempts' scheduling cycles.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import os
import pstats
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from binder_bench import Double  # noqa: E402
from support.gpu_cluster import CLASS, DRIVER, device_class, gpu_slice, node, pod  # noqa: E402

from binder.controller import Binder, BinderOptions  # noqa: E402
from binder.process import tune_garbage_collector  # noqa: E402
from binder.scheduling_cycle import SchedulingCycle  # noqa: E402
from kubeio.kube import (  # noqa: E402
    DEVICE_CLASSES,
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    Kube,
    load_configuration,
)
from resourceapi.gates import FeatureGates  # noqa: E402

SHARES = 4


def full_claim(name: str, node_name: str, device: str, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim's body and the status that allocates every share of `device` to it."""
    result = {
        "request": "r",
        "driver": DRIVER,
        "pool": node_name,
        "device": device,
        "shareID": f"00000000-0000-4000-8000-{index:012d}",
        "consumedCapacity": {"shares": str(SHARES)},
    }
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    body = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": CLASS}}]}},
    }
    status = {"allocation": {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [term]}}}
    return body, status


def replica(name: str, pool: str) -> dict[str, Any]:
    """A one-share pod selecting `pool`, with its own token volume (as the ServiceAccount admission adds)."""
    body = pod(name, nodeSelector={"pool": pool})
    volume = f"kube-api-access-{os.urandom(3).hex()[:5]}"
    body["spec"]["volumes"] = [{"name": volume, "emptyDir": {}}]
    for c in body["spec"]["containers"]:
        c["volumeMounts"] = [{"name": volume, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    return body


class Timed:
    """Every scheduling cycle's wall time, by phase; the `profiled` phase under cProfile."""

    def __init__(self, profiled: str | None) -> None:
        self.phase = "first"
        self.times: dict[str, list[float]] = {}
        self.profile = cProfile.Profile()
        self.profiled = profiled
        original = SchedulingCycle.schedule
        timed = self

        def schedule(cycle: SchedulingCycle, key: tuple[str, str]) -> None:
            phase, started = timed.phase, time.perf_counter()
            profiling = phase == timed.profiled
            if profiling:
                timed.profile.enable()
            try:
                original(cycle, key)
            finally:
                if profiling:
                    timed.profile.disable()
                timed.times.setdefault(phase, []).append(time.perf_counter() - started)

        SchedulingCycle.schedule = schedule  # type: ignore[method-assign]

    def count(self, phase: str) -> int:
        return len(self.times.get(phase, []))

    def line(self, phase: str) -> str:
        ts = sorted(self.times.get(phase, []))
        if not ts:
            return f"{phase}: no attempts"
        mean = sum(ts) / len(ts)
        return (
            f"{len(ts)} attempts, {sum(ts):.1f} s in all, mean {1000 * mean:.1f} ms, "
            f"p50 {1000 * ts[len(ts) // 2]:.1f} ms, max {1000 * ts[-1]:.0f} ms"
        )


def wait(what: str, check: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--pending", type=int, default=200)
    ap.add_argument("--new", type=int, default=20, help="new pods on pool B during the flush")
    ap.add_argument("--profile", action="store_true", help="cProfile the first attempts")
    args = ap.parse_args()
    print(
        f"pool A {args.nodes} nodes x {args.gpus} GPUs x {SHARES} shares, all taken; {args.pending} pending "
        f"pods selecting A; machine {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    timed = Timed("first" if args.profile else None)
    with tempfile.TemporaryDirectory(prefix="binder-storm-attempts-") as tmp:
        double = Double(Path(tmp))
        try:
            kube = Kube(load_configuration(str(double.kubeconfig)))
            kube.request("POST", DEVICE_CLASSES.path(), body=device_class(carrier="annotation"))

            def seed(i: int) -> None:
                name = f"gpu-node-{i:04d}"
                obj = node(name)
                obj["metadata"].setdefault("labels", {})["pool"] = "a" if i < args.nodes else "b"
                kube.request("POST", NODES.path(), body=obj)
                kube.request(
                    "POST", RESOURCE_SLICES.path(), body=gpu_slice(name, gpus=args.gpus, shares=SHARES)
                )
                for g in range(args.gpus if i < args.nodes else 0):
                    body, status = full_claim(f"fill-{i}-{g}", name, f"gpu-{g}", i * args.gpus + g)
                    made = kube.request("POST", RESOURCE_CLAIMS.path("default"), body=body)
                    made["status"] = status
                    path = f"{RESOURCE_CLAIMS.path('default')}/{body['metadata']['name']}/status"
                    kube.request("PUT", path, body=made)

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(seed, range(args.nodes + 2)))
            tune_garbage_collector()
            bound: dict[str, float] = {}

            def hook(step: str, obj: dict[str, Any]) -> None:
                if step == "bound":
                    bound[obj["metadata"]["name"]] = time.perf_counter()

            binder_kube = Kube(load_configuration(str(double.kubeconfig)))
            binder = Binder(binder_kube, FeatureGates.parse(""), options=BinderOptions(hook=hook))
            binder.start()
            if not binder.wait_synced(120):
                raise SystemExit("the binder's informers did not sync")
            started = time.perf_counter()
            for i in range(args.pending):
                kube.request("POST", PODS.path("default"), body=replica(f"pending-{i:05d}", "a"))
            wait("every pending pod tried", lambda: timed.count("first") >= args.pending, 1800)
            print(
                f"first attempts ({args.pending} pods, in {time.perf_counter() - started:.1f} s): "
                + timed.line("first"),
                flush=True,
            )
            stop = threading.Event()

            def republish() -> None:
                conn = Kube(load_configuration(str(double.kubeconfig)))
                count = 0
                while not stop.wait(1.0):
                    path = f"{RESOURCE_SLICES.path()}/gpu-node-{count % args.nodes:04d}-{DRIVER}"
                    obj = copy.deepcopy(conn.request("GET", path))
                    count += 1
                    for dev in obj["spec"]["devices"]:
                        dev.setdefault("attributes", {})["driverVersion"] = {"version": f"550.54.{count}"}
                    obj["spec"]["pool"]["generation"] = int(obj["spec"]["pool"].get("generation") or 1) + 1
                    conn.request("PUT", path, body=obj)

            storm = threading.Thread(target=republish, daemon=True, name="republisher")
            storm.start()
            time.sleep(3.0)
            timed.phase = "flush"
            with binder.cond:  # as upstream's leftover flush: every parked pod to backoff, now
                binder.queue.cluster_changed()
                binder.cond.notify_all()
            sent: dict[str, float] = {}
            for i in range(args.new):
                name = f"new-{i:02d}"
                sent[name] = time.perf_counter()
                kube.request("POST", PODS.path("default"), body=replica(name, "b"))
                time.sleep(0.05)
            wait("the new pods bound", lambda: all(k in bound for k in sent), 1800)
            latency = sorted(bound[k] - t for k, t in sent.items())
            wait("every flushed pod tried", lambda: timed.count("flush") >= args.pending + args.new, 1800)
            stop.set()
            storm.join(5)
            diagnoser = binder.ctx.diagnoser
            with binder.cond:  # what a Node change costs the next attempt: a snapshot built afresh
                t0 = time.perf_counter()
                binder.snapshot.fresh()
                rebuild = time.perf_counter() - t0
            binder.stop()
            binder_kube.close()
            kube.close()
        finally:
            double.stop()
    print(f"flushed attempts, one pool-A slice republished every second: {timed.line('flush')}", flush=True)
    print(
        f"new pods during the flush: {len(latency)} bound, creation->Binding p50 "
        f"{1000 * latency[len(latency) // 2]:.0f} ms, max {1000 * latency[-1]:.0f} ms; "
        f"diagnoses run {diagnoser.runs} ({getattr(diagnoser, 'partial', 0)} of the changed nodes alone)",
        flush=True,
    )
    print(f"a snapshot built afresh at this size: {1000 * rebuild:.0f} ms", flush=True)
    if args.profile:
        out = io.StringIO()
        pstats.Stats(timed.profile, stream=out).sort_stats("cumulative").print_stats(40)
        print(out.getvalue())


if __name__ == "__main__":
    main()
