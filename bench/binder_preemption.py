"""The binder's throughput on a full cluster with a stream of preemptions (issue 41, "Speed and safety").

Against the kube-apiserver test double as a process (`python -m tests.kubeapi`, as binder_bench.py; its
resourceclaim controller releases a deleted pod's claim, tests/kubeapi/controllers.py, and its kubelet
finishes a bound pod's deletion at once), the binder in this process with `dra-capacity bind`'s defaults
(preemption on, 1 s initial backoff). N nodes x GPUs x shares are filled with low-priority one-share pods,
then M high-priority one-share pods are streamed with 16 pending: each must evict exactly one victim, is
nominated, and is bound once its victim's claim is released. The same stream on the same cluster with M
shares left free (the same number of pods bound, no preemption) is the baseline.

Printed for both: high-priority pods bound per second (and, with preemption, preemptions per second),
creation->Binding p50/p99, the binder's CPU per high-priority pod (this process less the pod creators, by
thread; Events included), the double's CPU per pod; and the ratios. Checked (exit 1 if violated): every
preemptor has exactly one `Preempted` Event naming it, the victims are distinct low-priority pods and as
many as the preemptors, `scheduler_preemption_victims` observed one victim per preemption, no device's
shares are oversubscribed by the allocated claims, and the baseline preempted nothing.

    .venv/bin/python bench/binder_preemption.py [--nodes 100 --gpus 8 --shares 4 --preemptors 400] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from binder_bench import PIN, Double, Run, drain_events, pct, seed, thread_cpu  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from binder.controller import Binder, BinderOptions  # noqa: E402
from binder.process import tune_garbage_collector  # noqa: E402
from kubeio.kube import EVENTS, PODS, RESOURCE_CLAIMS, RESOURCE_SLICES, Kube, load_configuration  # noqa: E402
from resourceapi.gates import FeatureGates  # noqa: E402
from resourceapi.machinery.quantity import Quantity  # noqa: E402

LOW, HIGH = 10, 1000
CREATORS = 4  # threads creating the stream's pods, as binder_bench.py


@dataclass(frozen=True)
class Size:
    nodes: int
    gpus: int
    shares: int
    preemptors: int
    pending: int

    @property
    def total(self) -> int:
        return self.nodes * self.gpus * self.shares


def fill(run: Run, count: int, timeout: float) -> float:
    """Bind `count` low-priority pods (created by 8 threads, all at once); their wall seconds."""
    started = time.perf_counter()
    with ThreadPoolExecutor(8, thread_name_prefix="creator") as pool:
        for _ in range(count):
            pool.submit(run.create, "low", priority=LOW)
    run.wait_bound("low", count, timeout)
    return time.perf_counter() - started


def stream(run: Run, count: int, pending: int, timeout: float) -> float:
    """Create `count` high-priority pods, `pending` at a time (a new one per one bound); wall seconds."""
    started = time.perf_counter()
    deadline = time.monotonic() + timeout
    created = 0
    creators = ThreadPoolExecutor(CREATORS, thread_name_prefix="creator")
    try:
        while run.bound("high") < count:
            if time.monotonic() > deadline:
                done = run.bound("high")
                raise SystemExit(f"only {done}/{count} high-priority pods bound in {timeout:.0f} s")
            while created - run.bound("high") < pending and created < count:
                creators.submit(run.create, "high", priority=HIGH)
                created += 1
            with run.cond:
                if created - run.bound("high") >= pending or created >= count:
                    run.cond.wait(0.5)
    finally:
        creators.shutdown()
    return time.perf_counter() - started


def victims_metric(binder: Binder) -> tuple[float, float, float]:
    """`scheduler_preemption_victims`: (observations, sum, observations of at most one victim)."""
    count = total = one = 0.0
    for family in text_string_to_metric_families(binder.metrics.render().decode()):
        for s in family.samples:
            if s.name == "scheduler_preemption_victims_count":
                count = s.value
            elif s.name == "scheduler_preemption_victims_sum":
                total = s.value
            elif s.name == "scheduler_preemption_victims_bucket" and s.labels.get("le") == "1.0":
                one = s.value
    return count, total, one


def oversubscribed(kube: Kube) -> list[str]:
    """Devices whose allocated claims consume more shares than the device has."""
    capacity: dict[tuple[str, str, str], Fraction] = {}
    for s in kube.list(RESOURCE_SLICES)["items"]:
        for d in s["spec"].get("devices") or []:
            value = ((d.get("capacity") or {}).get("shares") or {}).get("value", "0")
            device = (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"])
            capacity[device] = Quantity.parse(value).value
    used: defaultdict[tuple[str, str, str], Fraction] = defaultdict(Fraction)
    for c in kube.list(RESOURCE_CLAIMS, namespace="default")["items"]:
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            shares = (r.get("consumedCapacity") or {}).get("shares")
            if shares is not None:
                used[(r["driver"], r["pool"], r["device"])] += Quantity.parse(shares).value
    return [f"{d}: {v} > {capacity.get(d)}" for d, v in used.items() if v > capacity.get(d, Fraction(0))]


def checks(kube: Kube, binder: Binder, size: Size, preempt: bool, filled: int) -> list[str]:
    """The safety checks' failures (empty: all hold)."""
    failures: list[str] = []
    events = [e for e in kube.list(EVENTS, namespace="default")["items"] if e.get("reason") == "Preempted"]
    per_preemptor = Counter(str((e.get("related") or {}).get("name")) for e in events)
    victims = [str(e["involvedObject"]["name"]) for e in events]
    pods = kube.list(PODS, namespace="default")["items"]
    high = [p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith("high-")]
    low_left = sum(1 for p in pods if p["metadata"]["name"].startswith("low-"))
    count, total, one = victims_metric(binder)
    expected = size.preemptors if preempt else 0
    if preempt:
        wrong = {name: per_preemptor.get(name, 0) for name in high if per_preemptor.get(name, 0) != 1}
        if wrong:
            failures.append(f"preemptors without exactly one victim: {dict(list(wrong.items())[:5])}")
        if len(set(victims)) != len(victims) or not all(v.startswith("low-") for v in victims):
            failures.append(f"victims not distinct low-priority pods: {Counter(victims).most_common(3)}")
    if len(victims) != expected or low_left != filled - expected:
        gone = filled - low_left
        failures.append(f"{len(victims)} victims evicted, {gone} low pods gone; expected {expected}")
    if (count, total, one) != (expected, expected, expected):
        failures.append(f"scheduler_preemption_victims count/sum/le=1 {count:.0f}/{total:.0f}/{one:.0f}")
    failures.extend(f"oversubscribed {o}" for o in oversubscribed(kube))
    return failures


def measure(size: Size, preempt: bool, backoff: float, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="binder-preemption-") as tmp:
        double = Double(Path(tmp))
        try:
            kube = Kube(load_configuration(str(double.kubeconfig)))
            seed(kube, size.nodes, size.gpus, size.shares)
            run = Run(Kube(load_configuration(str(double.kubeconfig))))
            options = BinderOptions(hook=run.hook, audit_routing=False, initial_backoff=backoff)
            binder = Binder(kube, FeatureGates.parse(""), options=options)
            binder.start()
            try:
                return run_phases(kube, double, binder, run, size, preempt, timeout)
            finally:
                binder.stop()
        finally:
            double.stop()


def run_phases(
    kube: Kube, double: Double, binder: Binder, run: Run, size: Size, preempt: bool, timeout: float
) -> dict[str, Any]:
    """Fill, then stream; the figures and the checks' failures."""
    assert binder.wait_synced(60)
    filled = size.total if preempt else size.total - size.preemptors
    fill_s = fill(run, filled, timeout)
    while binder.events.backlog():
        time.sleep(0.05)
    dcpu0, creator0, threads0 = double.cpu_seconds(), time.thread_time(), thread_cpu()
    load0 = os.getloadavg()[0]
    cpu0 = time.process_time()
    elapsed = stream(run, size.preemptors, size.pending, timeout)
    drain_events(binder)
    cpu = time.process_time() - cpu0
    by_thread = thread_cpu()
    by_thread.subtract(threads0)
    creator = time.thread_time() - creator0 + by_thread.pop("creator", 0.0)
    double_cpu = double.cpu_seconds() - dcpu0
    load = max(load0, os.getloadavg()[0])
    failures = checks(kube, binder, size, preempt, filled)
    m = size.preemptors
    lat = [v for k, v in run.latency.items() if k.startswith("high-")]
    return {
        "preemption": preempt,
        "nodes": size.nodes,
        "shares_total": size.total,
        "low_pods_bound": filled,
        "fill_pods_per_s": filled / fill_s,
        "high_pods": m,
        "high_pods_per_s": m / elapsed,
        "preemptions_per_s": m / elapsed if preempt else 0.0,
        "p50_ms": statistics.median(lat) * 1000,
        "p99_ms": pct(lat, 99) * 1000,
        "binder_cpu_ms_per_pod": (cpu - creator) / m * 1000,
        "binder_cpu_ms_per_pod_by_thread": {
            k: round(v / m * 1000, 2) for k, v in sorted(by_thread.items()) if k != "MainThread"
        },
        "double_cpu_ms_per_pod": double_cpu / m * 1000,
        "core_share_binder_process": cpu / elapsed,
        "load_average": load,
        "errors": binder.errors,
        "events_dropped": binder.events.dropped,
        "failures": failures,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--shares", type=int, default=4)
    parser.add_argument("--preemptors", type=int, default=400)
    parser.add_argument("--pending", type=int, default=16)
    parser.add_argument("--initial-backoff", type=float, default=1.0, help="the binder's (bind's default: 1)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per phase, seconds")
    parser.add_argument("--smoke", action="store_true", help="4 nodes x 2 GPUs x 4 shares, 16 preemptors")
    args = parser.parse_args()
    if args.smoke:
        size = Size(4, 2, 4, 16, 8)
    else:
        size = Size(args.nodes, args.gpus, args.shares, args.preemptors, args.pending)
    if size.preemptors > size.total:
        parser.error(f"--preemptors {size.preemptors} exceeds the cluster's {size.total} shares")
    if PIN and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {0})
    tune_garbage_collector()  # as `dra-capacity bind` does: this process is the binder's
    with_p = measure(size, True, args.initial_backoff, args.timeout)
    without = measure(size, False, args.initial_backoff, args.timeout)
    for r in (with_p, without):
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    shape = (
        f"{size.nodes} nodes x {size.gpus} GPUs x {size.shares} shares, {size.preemptors} high-priority pods"
    )
    for label, r in (("with preemption", with_p), ("without preemption", without)):
        print(
            f"{label}: {shape}, {size.pending} pending: {r['high_pods_per_s']:.1f} pods/s bound"
            + (f", {r['preemptions_per_s']:.1f} preemptions/s" if r["preemption"] else "")
            + f"; creation->Binding p50/p99 {r['p50_ms']:.0f}/{r['p99_ms']:.0f} ms; binder CPU "
            f"{r['binder_cpu_ms_per_pod']:.2f} ms per pod, the double's {r['double_cpu_ms_per_pod']:.2f} ms; "
            f"load average {r['load_average']:.1f} on {os.cpu_count()} cores"
        )
    print(
        f"ratio with/without preemption: pods/s "
        f"x{with_p['high_pods_per_s'] / without['high_pods_per_s']:.2f}, "
        f"p50 x{with_p['p50_ms'] / without['p50_ms']:.1f}, binder CPU per pod "
        f"x{with_p['binder_cpu_ms_per_pod'] / max(without['binder_cpu_ms_per_pod'], 1e-3):.2f}"
    )
    failures = with_p["failures"] + [f"baseline: {f}" for f in without["failures"]]
    verdict = "ok" if not failures else "VIOLATED: " + "; ".join(failures)
    print(
        f"check: exactly 1 victim per preemptor, {size.preemptors} distinct victims, no share "
        f"oversubscribed, none preempted without need: {verdict}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
