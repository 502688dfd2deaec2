"""The binder's memory and its resync from scratch at cluster scale, with `--capacity-metrics` on and off.

The cluster is bench/top_bench.py's (N nodes x 8 shareable GPUs of 4 shares, the KEP-6406 DeviceClass, R
running one-share pods, each holding an allocated claim), seeded into the kube-apiserver TEST DOUBLE (`python
-m tests.kubeapi --seed`, its own process; the real API server would need R pods bound through the scheduler
first, which is not what this measures). For each setting, a fresh `dra-capacity bind` process:

  * resync: seconds from its start to `/readyz` answering 200 (every informer listed), then to its first
    Binding (one pending pod created once ready: the first placement builds the scheduler's snapshot of every
    node, slice and allocated claim), wall and the binder's own CPU (the wall time includes the double's
    lists, which share the cores);
  * memory: its RSS once that pod is bound (VmRSS), and its peak (VmHWM), from /proc;
  * a check that it counted the running pods' shares: with the capacity metrics on, the units used of the
    class (`dra_capacity_binder_class_used_units` summed) equal R, and the one bound pod.

    .venv/bin/python bench/binder_memory.py                          # 5,000 nodes, 20,000 running pods
    .venv/bin/python bench/binder_memory.py --nodes 50 --running 200 # the smoke size
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import simulate_dump as sd  # noqa: E402
import top_bench  # noqa: E402
from binder_bench import Double, cpu_seconds, free_port  # noqa: E402

from kubeio.kube import PODS, Kube, load_configuration  # noqa: E402

TIMEOUT = 1800.0  # seconds any one phase may take at the largest size on a busy machine
RSS_TARGET_GIB = 1.0  # the storm bar's RSS bound (issue 42), printed beside for comparison


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def _proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of `pid` in bytes."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def units_used(metrics: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("dra_capacity_binder_class_used_units{")
    )


def run_binder(kubeconfig: Path, capacity_metrics: bool, pending: dict[str, Any]) -> dict[str, Any]:
    """One fresh binder: its resync time, first Binding, memory and the units it counted."""
    port = free_port()
    exe = Path(sys.executable).with_name("dra-capacity")
    argv = [
        str(exe),
        "bind",
        "--kubeconfig",
        str(kubeconfig),
        "--leader-elect=false",
        f"--metrics-listen=127.0.0.1:{port}",
        f"--capacity-metrics={'true' if capacity_metrics else 'false'}",
    ]
    base = f"http://127.0.0.1:{port}"
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kube = Kube(load_configuration(str(kubeconfig)))
    try:
        while _get(f"{base}/readyz")[0] != 200:
            if proc.poll() is not None or time.monotonic() - start > TIMEOUT:
                raise SystemExit(f"the binder exited or never became ready (exit {proc.poll()})")
            time.sleep(0.2)
        ready, ready_cpu = time.monotonic() - start, cpu_seconds(proc.pid)
        ns, name = pending["metadata"]["namespace"], pending["metadata"]["name"]
        kube.request("POST", PODS.path(ns), body=pending)
        while not (kube.request("GET", PODS.path(ns, name)).get("spec") or {}).get("nodeName"):
            if proc.poll() is not None or time.monotonic() - start > TIMEOUT:
                raise SystemExit("the binder exited or never bound the pending pod")
            time.sleep(0.2)
        first, first_cpu = time.monotonic() - start, cpu_seconds(proc.pid)
        time.sleep(2.0)  # the binding's echo and the metrics settle
        memory = _proc_status(proc.pid)
        used = units_used(_get(f"{base}/metrics")[1]) if capacity_metrics else None
        kube.request("DELETE", PODS.path(ns, name))
        return {
            "ready_s": ready,
            "ready_cpu_s": ready_cpu,
            "first_binding_s": first,
            "first_cpu_s": first_cpu,
            "used": used,
            **memory,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        kube.close()


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=20000)
    args = parser.parse_args()
    if args.running > args.nodes * 16:
        parser.error("--running is at most 16 per node (8 GPUs of 4 shares, as top_bench fills them)")
    dump = top_bench.build_dump(args.nodes, args.running, 0)
    for item in dump["items"]:  # the API server sets the version; no ReplicaSet owns the pods here (the
        item["metadata"].pop("resourceVersion", None)  # double's garbage collector would delete them)
        item["metadata"].pop("ownerReferences", None)
    with tempfile.TemporaryDirectory(prefix="binder-memory-") as tmp:
        workdir = Path(tmp)
        seed = workdir / "cluster.json"
        seed.write_text(json.dumps(dump))
        del dump
        objects = args.nodes * 2 + 1 + args.running * 2
        print(f"cluster: {args.nodes} nodes x {sd.GPUS_PER_NODE} GPUs, {args.running} running pods on claims")
        double = Double(workdir, seeds=[seed], cpu=None)
        kubeconfig, seeded = double.kubeconfig, double.start_seconds
        try:
            print(f"seeded the API double (test double) with {objects} objects in {seeded:.1f} s")
            rows = {}
            for index, on in enumerate((False, True)):
                pending = sd.pod(args.running + index)
                pending["spec"]["schedulerName"] = "dra-capacity"
                pending["metadata"].pop("resourceVersion", None)
                pending["metadata"].pop("uid", None)
                pending["metadata"].pop("ownerReferences", None)
                pending.pop("status", None)
                rows[on] = row = run_binder(kubeconfig, on, pending)
                label = "on " if on else "off"
                print(
                    f"capacity metrics {label}: ready after {row['ready_s']:.1f} s, first Binding after "
                    f"{row['first_binding_s']:.1f} s; RSS {row['VmRSS'] / 2**20:.0f} MiB, peak "
                    f"{row['VmHWM'] / 2**20:.0f} MiB ({row['VmRSS'] / 2**30 / RSS_TARGET_GIB:.2f} x 1 GiB)"
                )
                print(
                    f"  binder CPU: {row['ready_cpu_s']:.1f} s to ready, {row['first_cpu_s']:.1f} s to the "
                    f"first Binding (the wall times above include the double's lists, on the same cores)"
                )
            used = rows[True]["used"]
            expected = args.running + 1  # and the pending pod just bound
            print(f"units used counted with the capacity metrics on: {used:.0f} (expected {expected})")
            extra = (rows[True]["VmRSS"] - rows[False]["VmRSS"]) / 2**20
            print(f"the capacity metrics' cost: {extra:+.0f} MiB of RSS")
            if used != expected:
                print("FAIL: the binder did not count every running pod's share", flush=True)
                return 1
        finally:
            double.stop(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
