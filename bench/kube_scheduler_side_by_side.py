"""The binder side by side with kube-scheduler, on one real control plane (tests/realcluster, v1.37).

Per cluster size N: one control plane (etcd, kube-apiserver, kube-controller-manager, kwok; no kube-scheduler
of the harness's) with N kwok nodes, each publishing two ResourceSlices of 8 GPUs: `gpu.nvidia.com`, each GPU
shareable with a consumable `shares` capacity of 4 (and no other capacity), and `gpu.example.com`, whole
devices. Then, per workload and mode, each scheduler alone (its process started for the run, stopped after;
pods and claims deleted between runs, so every run starts on a clean state):

* A: pods ask for `example.com/gpu: 1` (KEP-5004, class `example-gpu`, no capacity requests): kube-scheduler
  places them natively, the binder (started with `--route-whole-device-classes`) once they name it.
* B: kube-scheduler places pods carrying a ResourceClaimTemplate asking for one share (class `gpu-shared`,
  `capacity.requests.shares: 1`); the binder the same number of unchanged `nvidia.com/gpu.shared: 1` pods
  (the same class maps the name, with KEP-6406's capacity requests on its annotation carrier).
* modes: `inflight`: keep 16 pods pending (--inflight) until --pods are bound; `burst`: create --burst pods
  at once (capped at the devices free for the workload) and wait for all.

Pods are created directly (never through a Deployment) over persistent HTTPS connections; each one's
creation-to-Binding time runs from its create request being sent to a watch seeing `spec.nodeName`. CPU
seconds per pod come from /proc for the scheduler process, kube-apiserver and kube-controller-manager (B's
claims for kube-scheduler are its work). Client throttling is kept out: the binder (the Python client) has
no client-side rate limit, kube-scheduler and kube-controller-manager get QPS/burst far above what the runs
reach. Every setting is printed.

    nice -n 10 .venv/bin/python bench/kube_scheduler_side_by_side.py                 # 100 and 500 nodes
    .venv/bin/python bench/kube_scheduler_side_by_side.py --nodes 10 --pods 40 --burst 80   # a quick check

`--pvc`: every pod also mounts its own PersistentVolumeClaim of a WaitForFirstConsumer class with static local
PVs, one per pod, made before the clock starts on the nodes in turn (kube-controller-manager's PV controller
on): both schedulers then run VolumeBinding (find the PV, write its claimRef, wait for the PV controller).

Summary lines: `A 500 nodes: pods/s binder X kube-scheduler Y ratio Z (burst 2000)`. Target: ratio >= 0.8
for both workloads at 500 nodes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from binder_bench import cpu_seconds  # noqa: E402

# The harness's own home (tests/realcluster re-exports it with `import *`, which leaves out `_` names).
from localcluster.cluster import (  # noqa: E402
    CONTROLLERS,
    FEATURE_GATES,
    Cluster,
    ClusterConfig,
    _die_with_parent,
    _feature_gates,
)
from localcluster.objects import (  # noqa: E402
    gpu_slice,
    make_pv,
    make_pvc,
    make_storage_class,
    pvc_volume,
)

NS = "bench"
BINDER_NAME = "dra-capacity"
WHOLE_DRIVER = "gpu.example.com"
SHARED_DRIVER = "gpu.nvidia.com"
WHOLE_RESOURCE = "example.com/gpu"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
CARRIER = "dra-capacity.io/extended-resource-capacity-requests"
TARGET_RATIO = 0.8
SCHEDULERS = ("binder", "kube-scheduler")
LOCAL_CLASS = "bench-local"
PV_LABEL = "bench.dra-capacity.io/pv"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- objects -----------------------------------------------------------------------------------------------


def classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "example-gpu"},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{WHOLE_DRIVER}"'}}],
                "extendedResourceName": WHOLE_RESOURCE,
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu-shared", "annotations": {CARRIER: '{"requests":{"shares":"1"}}'}},
            "spec": {
                "selectors": [{"cel": {"expression": f'device.driver == "{SHARED_DRIVER}"'}}],
                "extendedResourceName": SHARED_RESOURCE,
            },
        },
    ]


def one_share_template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-share", "namespace": NS},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "exactly": {
                                "deviceClassName": "gpu-shared",
                                "capacity": {"requests": {"shares": "1"}},
                            },
                        }
                    ]
                }
            }
        },
    }


def pod(name: str, workload: str, scheduler: str, pvc: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if pvc:
        spec["volumes"] = [pvc_volume("cache", f"{name}-cache")]
    if scheduler == "binder":
        spec["schedulerName"] = BINDER_NAME
    if workload == "A":
        container["resources"] = {"limits": {WHOLE_RESOURCE: "1"}}
    elif scheduler == "binder":
        container["resources"] = {"limits": {SHARED_RESOURCE: "1"}}
    else:  # what a user does today: every pod spec changed to carry a claim template
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-share"}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


# ---- HTTP --------------------------------------------------------------------------------------------------


class Conn:
    """One persistent admin HTTPS connection (no TLS handshake per request: the API server's CPU per pod
    would otherwise measure handshakes)."""

    def __init__(self, cluster: Cluster, timeout: float = 60.0) -> None:
        u = urllib.parse.urlsplit(cluster.url)
        self.host, self.port = u.hostname or "", u.port
        self.ctx = cluster.ssl_context()
        self.timeout = timeout
        self.conn: http.client.HTTPSConnection | None = None

    def request(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> Any:
        for attempt in range(3):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(
                    self.host, self.port, context=self.ctx, timeout=self.timeout
                )
            try:
                data = json.dumps(body).encode() if body is not None else None
                headers = {"Accept": "application/json"}
                if data is not None:
                    headers["Content-Type"] = ctype
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            if resp.status >= 300 and resp.status != 404:
                raise RuntimeError(f"{method} {path}: {resp.status} {raw[:300]!r}")
            return json.loads(raw) if raw else None
        return None


class Watch(threading.Thread):
    """Watches the bench namespace's pods; records when each one is first seen with a node."""

    def __init__(self, cluster: Cluster, resource_version: str) -> None:
        super().__init__(daemon=True, name="watch")
        self.cluster, self.rv = cluster, resource_version
        self.bound: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stopped = False
        self.on_bound: Callable[[str], None] = lambda name: None

    def run(self) -> None:
        u = urllib.parse.urlsplit(self.cluster.url)
        while not self.stopped:
            conn = http.client.HTTPSConnection(
                u.hostname or "", u.port, context=self.cluster.ssl_context(), timeout=3600
            )
            try:
                conn.request(
                    "GET",
                    f"/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion={self.rv}"
                    "&allowWatchBookmarks=true&timeoutSeconds=3000",
                )
                resp = conn.getresponse()
                while not self.stopped:
                    line = resp.readline()
                    if not line:
                        break
                    event = json.loads(line)
                    obj = event["object"]
                    self.rv = obj["metadata"].get("resourceVersion", self.rv)
                    if event["type"] in ("ADDED", "MODIFIED") and obj.get("spec", {}).get("nodeName"):
                        name = obj["metadata"]["name"]
                        now = time.monotonic()
                        with self.lock:
                            if name in self.bound:
                                continue
                            self.bound[name] = now
                        self.on_bound(name)
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.2)
            finally:
                conn.close()


# ---- schedulers --------------------------------------------------------------------------------------------


@dataclass
class Settings:
    client_qps: int
    client_burst: int
    kcm_qps: int
    kcm_burst: int
    kcm_claim_syncs: int
    inflight: int
    creators: int
    profile: Path | None = None  # run the binder under cProfile, one stats file per run here
    pvc: bool = False  # each pod mounts its own WaitForFirstConsumer claim (static local PVs)


class Scheduler:
    """One scheduler process, started for a run and stopped after."""

    def __init__(self, which: str, cluster: Cluster, settings: Settings, workdir: Path) -> None:
        self.which = which
        self.cluster = cluster
        self.settings = settings
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = workdir / f"{which}.log"

    def argv(self) -> tuple[list[str], Callable[[], bool]]:
        if self.which == "binder":
            port = free_port()
            # This interpreter, this tree's code (`-m` from cwd=ROOT): no .venv/bin/dra-capacity needed.
            python: list[str] = [sys.executable]
            if self.settings.profile is not None:
                self.settings.profile.mkdir(parents=True, exist_ok=True)
                out = self.settings.profile / f"binder-{self.workdir.name}-{time.monotonic_ns()}.prof"
                python = [sys.executable, "-m", "cProfile", "-o", str(out)]
            argv = [
                *python,
                "-m",
                "dra_capacity",
                "bind",
                f"--kubeconfig={self.cluster.kubeconfig_path}",
                f"--scheduler-name={BINDER_NAME}",
                "--leader-elect=false",
                f"--metrics-listen=127.0.0.1:{port}",
                "--route-whole-device-classes",
            ]

            def ready() -> bool:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                    conn.request("GET", "/readyz")
                    return conn.getresponse().status == 200
                except OSError:
                    return False

            return argv, ready
        binary = self.cluster.bin_dir / "kube-scheduler"
        kubeconfig = self.cluster.workdir / "kubeconfigs" / "kube-scheduler.kubeconfig"
        config = self.workdir / "kube-scheduler-config.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {
                        "kubeconfig": str(kubeconfig),
                        "qps": self.settings.client_qps,
                        "burst": self.settings.client_burst,
                    },
                    "leaderElection": {"leaderElect": False},
                }
            )
        )
        port = free_port()
        argv = [
            str(binary),
            f"--config={config}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--profiling=false",
            f"--feature-gates={_feature_gates(binary, FEATURE_GATES)}",
        ]

        def healthy() -> bool:
            import ssl

            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=2)
                conn.request("GET", "/healthz")
                return conn.getresponse().status == 200
            except OSError:
                return False

        return argv, healthy

    def start(self) -> None:
        argv, ready = self.argv()
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, preexec_fn=_die_with_parent
            )
        deadline = time.monotonic() + 120
        while not ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.which} did not become ready; see {self.log}")
            time.sleep(0.2)
        time.sleep(1.0)  # informers synced; let the first lists settle before measuring

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# ---- one run -----------------------------------------------------------------------------------------------


@dataclass
class Result:
    workload: str
    nodes: int
    mode: str
    scheduler: str
    pods: int
    bound: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def pods_per_s(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        data = sorted(self.latencies)
        return data[min(len(data) - 1, int(q * len(data)))] * 1000

    def cpu_ms_per_pod(self, who: str) -> float:
        return self.cpu.get(who, 0.0) * 1000 / max(self.bound, 1)


def component_pid(cluster: Cluster, name: str) -> int:
    return next(p.pid for p in cluster.processes if p.name == name)


def run_once(
    cluster: Cluster, settings: Settings, workdir: Path, workload: str, mode: str, scheduler: str, count: int
) -> Result:
    result = Result(workload, len(cluster.node_names), mode, scheduler, count)
    conn = Conn(cluster)
    listing = conn.request("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")
    watch = Watch(cluster, listing["metadata"]["resourceVersion"])
    sched = Scheduler(scheduler, cluster, settings, workdir)
    sched.start()
    watch.start()
    prefix = f"{workload.lower()}-{mode}-{'b' if scheduler == 'binder' else 'k'}"
    names = [f"{prefix}-{i}" for i in range(count)]
    if settings.pvc:
        make_volumes(cluster, names)
    sent: dict[str, float] = {}
    slots = threading.Semaphore(settings.inflight if mode.startswith("inflight") else count)
    watch.on_bound = lambda name: slots.release()
    pids = {
        "scheduler": sched.proc.pid if sched.proc else 0,
        "apiserver": component_pid(cluster, "kube-apiserver"),
        "controller-manager": component_pid(cluster, "kube-controller-manager"),
    }
    before = {k: cpu_seconds(p) for k, p in pids.items()}
    queue = iter(names)
    qlock = threading.Lock()

    def creator() -> None:
        c = Conn(cluster)
        while True:
            with qlock:
                name = next(queue, None)
            if name is None:
                return
            slots.acquire()
            sent[name] = time.monotonic()
            c.request("POST", f"/api/v1/namespaces/{NS}/pods", pod(name, workload, scheduler, settings.pvc))

    start = time.monotonic()
    threads = [threading.Thread(target=creator, daemon=True) for _ in range(settings.creators)]
    for t in threads:
        t.start()
    deadline = start + max(120.0, count / 4.0)
    progress, last = 0, time.monotonic()
    while time.monotonic() < deadline:
        with watch.lock:
            done = len(watch.bound)
        if done >= count:
            break
        if done > progress:
            progress, last = done, time.monotonic()
        elif time.monotonic() - last > 30:  # stuck: report what was bound
            break
        time.sleep(0.05)
    for t in threads:
        t.join(5)
    after = {k: cpu_seconds(p) for k, p in pids.items()}
    with watch.lock:
        bound = dict(watch.bound)
    watch.stopped = True
    sched.stop()
    result.bound = len(bound)
    result.seconds = (max(bound.values()) - start) if bound else 0.0
    result.latencies = [bound[n] - sent[n] for n in bound if n in sent]
    result.cpu = {k: after[k] - before[k] for k in pids}
    clean(cluster, conn)
    return result


def make_volumes(cluster: Cluster, names: list[str]) -> None:
    """One local PV per pod, on the nodes in turn, and the pod's claim (before the clock starts)."""
    local = threading.local()
    nodes = cluster.node_names

    def make(i_name: tuple[int, str]) -> None:
        i, name = i_name
        if not hasattr(local, "conn"):
            local.conn = Conn(cluster)
        pv = make_pv(f"{name}-pv").storage_class(LOCAL_CLASS).local_to(nodes[i % len(nodes)])
        local.conn.request("POST", "/api/v1/persistentvolumes", pv.labels({PV_LABEL: "1"}).obj())
        pvc = make_pvc(f"{name}-cache").namespace(NS).storage_class(LOCAL_CLASS).obj()
        local.conn.request("POST", f"/api/v1/namespaces/{NS}/persistentvolumeclaims", pvc)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, enumerate(names)))


def clean_volumes(cluster: Cluster, conn: Conn) -> None:
    """Delete the bench's claims and PVs, their protection finalizers stripped (no protection controllers)."""
    pvcs = f"/api/v1/namespaces/{NS}/persistentvolumeclaims"
    pvs = f"/api/v1/persistentvolumes?labelSelector={PV_LABEL}%3D1"

    def strip(path: str) -> None:
        c = Conn(cluster)
        c.request("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        c.request("DELETE", path)

    paths = [f"{pvcs}/{o['metadata']['name']}" for o in conn.request("GET", pvcs)["items"]]
    paths += [f"/api/v1/persistentvolumes/{o['metadata']['name']}" for o in conn.request("GET", pvs)["items"]]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(strip, paths))


def clean(cluster: Cluster, conn: Conn) -> None:
    """Delete every pod and claim of the bench namespace (pods at once; claims stripped of finalizers when the
    controllers have not released them within a few seconds), and wait until both lists are empty."""
    conn.request("DELETE", f"/api/v1/namespaces/{NS}/pods", {"gracePeriodSeconds": 0})
    claims = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims"
    deadline = time.monotonic() + 600
    stripped_after = time.monotonic() + 5
    while time.monotonic() < deadline:
        pods = conn.request("GET", f"/api/v1/namespaces/{NS}/pods")["items"]
        left = conn.request("GET", claims)["items"]
        if not pods and not left:
            clean_volumes(cluster, conn)
            return
        for c in left:
            if not c["metadata"].get("deletionTimestamp"):
                conn.request("DELETE", f"{claims}/{c['metadata']['name']}")
        if time.monotonic() > stripped_after:
            stuck = [c["metadata"]["name"] for c in left if c["metadata"].get("finalizers")]

            def strip(name: str) -> None:
                Conn(cluster).request(
                    "PATCH",
                    f"{claims}/{name}",
                    {"metadata": {"finalizers": None}},
                    "application/merge-patch+json",
                )

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(strip, stuck))
        time.sleep(0.5)
    raise SystemExit("the bench namespace did not empty within 600 s")


# ---- the cluster -------------------------------------------------------------------------------------------


def prepare(cluster: Cluster, gpus: int, shares: int) -> None:
    conn = Conn(cluster)
    conn.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    for dc in classes():
        conn.request("POST", "/apis/resource.k8s.io/v1/deviceclasses", dc)
    conn.request(
        "POST", f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaimtemplates", one_share_template()
    )
    conn.request("POST", "/apis/storage.k8s.io/v1/storageclasses", make_storage_class(LOCAL_CLASS))
    local = threading.local()

    def publish(node: str) -> None:
        if not hasattr(local, "conn"):
            local.conn = Conn(cluster)
        # With shares, gpu_slice gives each GPU the `shares` capacity only (no memory: without a
        # requestPolicy every share would consume all of it, KEP-5075, one pod per GPU for both schedulers).
        shared = gpu_slice(node, gpus, shares, SHARED_DRIVER)
        assert all(set(d["capacity"]) == {"shares"} for d in shared["spec"]["devices"])
        for s in (shared, gpu_slice(node, gpus, None, WHOLE_DRIVER)):
            local.conn.request("POST", "/apis/resource.k8s.io/v1/resourceslices", s)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(publish, cluster.node_names))
    deadline = time.monotonic() + 60
    while conn.request("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default") is None:
        if time.monotonic() > deadline:
            raise SystemExit("no default ServiceAccount in the bench namespace")
        time.sleep(0.2)


def progress(r: Result, count: int) -> None:
    load = os.getloadavg()
    print(
        f"  {r.workload} {r.mode:<12} {r.scheduler:<15} {r.bound}/{count} bound in {r.seconds:.1f} s: "
        f"{r.pods_per_s:.1f} pods/s, p50 {fmt(r.pct(0.5), 0)} ms p99 {fmt(r.pct(0.99), 0)} ms; CPU s: "
        f"scheduler {r.cpu['scheduler']:.1f} apiserver {r.cpu['apiserver']:.1f} "
        f"kcm {r.cpu['controller-manager']:.1f}; load {load[0]:.1f}",
        flush=True,
    )


def fmt(v: float, digits: int = 1) -> str:
    return "-" if v != v else f"{v:,.{digits}f}"


def report(results: list[Result]) -> None:
    print()
    header = (
        f"{'workload':<8} {'nodes':>5} {'mode':<12} {'scheduler':<15} {'bound':>9} {'pods/s':>8} "
        f"{'p50 ms':>8} {'p99 ms':>8} {'sched ms/pod':>12} {'apisrv ms/pod':>13} {'kcm ms/pod':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.workload:<8} {r.nodes:>5} {r.mode:<12} {r.scheduler:<15} {r.bound:>4}/{r.pods:<4} "
            f"{fmt(r.pods_per_s):>8} {fmt(r.pct(0.5), 0):>8} {fmt(r.pct(0.99), 0):>8} "
            f"{fmt(r.cpu_ms_per_pod('scheduler'), 2):>12} {fmt(r.cpu_ms_per_pod('apiserver'), 2):>13} "
            f"{fmt(r.cpu_ms_per_pod('controller-manager'), 2):>10}"
        )
    print()
    grouped: dict[tuple[str, int, str, str], list[Result]] = {}
    for r in results:
        grouped.setdefault((r.workload, r.nodes, r.mode, r.scheduler), []).append(r)

    def rate(rs: list[Result]) -> float:
        return statistics.median(r.pods_per_s for r in rs)

    def cpu(rs: list[Result]) -> float:
        """scheduler + API server + controller manager CPU ms per pod, over every round"""
        return sum(sum(r.cpu.values()) for r in rs) * 1000 / max(sum(r.bound for r in rs), 1)

    for w, n, m in sorted({(r.workload, r.nodes, r.mode) for r in results}):
        b, k = grouped.get((w, n, m, "binder")), grouped.get((w, n, m, "kube-scheduler"))
        if b is None or k is None:
            continue
        ratio = rate(b) / rate(k) if rate(k) else float("nan")
        what = f"burst {b[0].pods}" if m.startswith("burst") else f"{m.split('-')[1]} in flight"
        rounds = f", median of {len(b)} rounds" if len(b) > 1 else ""
        flag = "" if ratio >= TARGET_RATIO else f", below the {TARGET_RATIO} target"
        print(
            f"{w} {n} nodes: pods/s binder {rate(b):.0f} kube-scheduler {rate(k):.0f} ratio {ratio:.2f} "
            f"({what}{rounds}{flag}); CPU ms/pod scheduler+apiserver+kcm: binder {cpu(b):.1f} "
            f"kube-scheduler {cpu(k):.1f}"
        )


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the cluster (its `finally`) on SIGTERM

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", default="100,500", help="cluster sizes, comma-separated (default 100,500)")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node and driver (default 8)")
    parser.add_argument("--shares", type=int, default=4, help="shares per GPU for workload B (default 4)")
    parser.add_argument(
        "--pods", type=int, default=400, help="pods bound in the in-flight mode (default 400)"
    )
    parser.add_argument("--inflight", type=int, default=16, help="pods kept pending (default 16)")
    parser.add_argument("--burst", type=int, default=2000, help="pods created at once (default 2000)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="runs per scheduler, alternating who goes first"
    )
    parser.add_argument("--workloads", default="A,B")
    parser.add_argument("--modes", default="inflight,burst")
    parser.add_argument("--schedulers", default=",".join(SCHEDULERS))
    parser.add_argument("--qps", type=int, default=10000, help="kube-scheduler client QPS and burst")
    parser.add_argument("--kcm-qps", type=int, default=10000, help="kube-controller-manager QPS and burst")
    parser.add_argument("--kcm-claim-syncs", type=int, default=50, help="--concurrent-resourceclaim-syncs")
    parser.add_argument("--creators", type=int, default=8, help="threads creating pods")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--profile-binder",
        type=Path,
        default=None,
        metavar="DIR",
        help="run the binder under cProfile (slower): one stats file per run in DIR; read them with "
        "`python -m pstats`",
    )
    parser.add_argument(
        "--pvc",
        action="store_true",
        help="every pod mounts its own WaitForFirstConsumer claim, bound to a static local PV",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    settings = Settings(
        args.qps,
        args.qps,
        args.kcm_qps,
        args.kcm_qps,
        args.kcm_claim_syncs,
        args.inflight,
        args.creators,
        args.profile_binder,
        args.pvc,
    )
    sizes = [int(n) for n in args.nodes.split(",")]
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores ({platform.processor() or platform.machine()}), shared with other "
        f"agents' work; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; this process nice "
        f"{os.nice(0)} (the control plane and the schedulers inherit it). Figures are wall-clock rates on a "
        "busy machine: compare the ratios and the CPU per pod, not the absolute rates."
    )
    print(
        "settings: "
        f"kube-scheduler clientConnection qps={settings.client_qps} burst={settings.client_burst}, default "
        "profile, percentageOfNodesToScore default (adaptive), leader election off, feature gates "
        f"{','.join(f'{k}={v}' for k, v in sorted(FEATURE_GATES.items()))} (those the binary lists); "
        "binder `dra-capacity bind --leader-elect=false --route-whole-device-classes` (the Python client has "
        "no client-side rate limit; 16 binding workers, capacity metrics on: the product defaults); "
        f"kube-controller-manager --kube-api-qps={settings.kcm_qps} --kube-api-burst={settings.kcm_burst} "
        f"--concurrent-resourceclaim-syncs={settings.kcm_claim_syncs}; pods created directly by "
        f"{settings.creators} threads over persistent HTTPS connections (no Deployment); in-flight mode "
        f"keeps {settings.inflight} pending until {args.pods} are bound; burst mode creates "
        f"min({args.burst}, devices free) at once; {args.gpus} GPUs per node per driver, {args.shares} "
        "shares each for B; kwok marks bound pods Running."
    )
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="side-by-side-", dir=args.workdir) as tmp:
        for n in sizes:
            workdir = Path(tmp) / f"n{n}"
            t0 = time.monotonic()
            config = ClusterConfig(
                nodes=n,
                gpus_per_node=0,  # the bench publishes its own slices (`prepare`)
                scheduler=False,
                controller_manager_args=[
                    f"--kube-api-qps={settings.kcm_qps}",
                    f"--kube-api-burst={settings.kcm_burst}",
                    f"--concurrent-resourceclaim-syncs={settings.kcm_claim_syncs}",
                ],
                ready_timeout=600,
                controllers=(*CONTROLLERS, "persistentvolume-binder-controller") if args.pvc else CONTROLLERS,
            )
            with Cluster.start(workdir, config) as cluster:
                prepare(cluster, args.gpus, args.shares)
                print(
                    f"\n{n} nodes: control plane ready in {time.monotonic() - t0:.0f} s ({cluster.version})"
                )
                capacity = {"A": n * args.gpus, "B": n * args.gpus * args.shares}
                for w in args.workloads.split(","):
                    for m in args.modes.split(","):
                        count = args.pods if m == "inflight" else min(args.burst, capacity[w])
                        mode = f"inflight-{args.inflight}" if m == "inflight" else f"burst-{count}"
                        mode += "-pvc" if args.pvc else ""
                        order = args.schedulers.split(",")
                        for round_ in range(args.rounds):  # alternate who goes first: the load drifts
                            for s in order if round_ % 2 == 0 else order[::-1]:
                                r = run_once(cluster, settings, workdir, w, mode, s, count)
                                results.append(r)
                                progress(r, count)
    report(results)
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "workload": r.workload,
                        "nodes": r.nodes,
                        "mode": r.mode,
                        "scheduler": r.scheduler,
                        "pods": r.pods,
                        "bound": r.bound,
                        "seconds": r.seconds,
                        "pods_per_s": r.pods_per_s,
                        "p50_ms": r.pct(0.5),
                        "p99_ms": r.pct(0.99),
                        "cpu_s": r.cpu,
                    }
                    for r in results
                ],
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
