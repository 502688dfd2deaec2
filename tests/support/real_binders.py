"""`dra-capacity bind` processes on the real control plane, as the chart's binder ServiceAccount, and the
chaos that kills (SIGKILL) and freezes (SIGSTOP past the lease) their leader at random points.

Used by tests/binder/test_binder_realcluster.py (a seeded 10-cycle run) and scripts/binder_chaos_real.py (the
full run, 30 cycles or more: `make binder-chaos-real`). The invariants are the in-process chaos test's
(`support.binder_harness.check_invariants`), read from the real API server's objects.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from support import waiting
from support.binder_harness import check_invariants, check_preemptions
from support.chart_render import CHART, helm
from support.gpu_cluster import device_class, pod
from support.ports import free_port

CAPACITY_ANNOTATION = "dra-capacity.io/extended-resource-capacity-requests"
BINDER_NAMESPACE = "dra-capacity"
BINDER_ACCOUNT = "dra-capacity-binder"
LEASE = {"--lease-duration": "2", "--renew-deadline": "1.5", "--retry-period": "0.3"}
LEASE_SECONDS = 2.0
HIGH_PRIORITY_CLASS = "chaos-high"  # the preemptors' PriorityClass, value 1000 (the other pods have 0)
PREEMPTOR_PREFIX = "h"  # the preemptors' names: h<n>; the other pods' p<n>
_RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def binder_rbac() -> list[dict[str, Any]]:
    """The chart's binder ServiceAccount and its (Cluster)Roles and bindings, from `helm template`."""
    proc = subprocess.run(
        [helm(), "template", "dra-capacity", str(CHART), "--namespace", BINDER_NAMESPACE],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [
        d
        for d in yaml.safe_load_all(proc.stdout)
        if d and d["kind"] in _RBAC_KINDS and d["metadata"]["name"] == BINDER_ACCOUNT
    ]


def install_binder_rbac(cluster: Any) -> Path:
    """Apply the chart's binder RBAC; a kubeconfig authenticating as its ServiceAccount."""
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": BINDER_NAMESPACE}})
    docs = binder_rbac()
    assert {d["kind"] for d in docs} == set(_RBAC_KINDS), [d["kind"] for d in docs]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    return Path(cluster.service_account_kubeconfig(BINDER_NAMESPACE, BINDER_ACCOUNT, create=False))


@dataclass
class BinderProcess:
    """One `dra-capacity bind` process (restarted as a Deployment would restart its pod)."""

    name: str
    kubeconfig: Path
    logdir: Path
    port: int = field(default_factory=free_port)
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0
    args: tuple[str, ...] = ()  # more `bind` flags

    def start(self) -> None:
        self.starts += 1
        log = (self.logdir / f"{self.name}-{self.starts}.log").open("wb")
        exe = Path(sys.executable).parent / "dra-capacity"
        argv = [str(exe), "bind", "--kubeconfig", str(self.kubeconfig), "--lease-namespace", BINDER_NAMESPACE]
        argv += [f"--metrics-listen=127.0.0.1:{self.port}"]
        for k, v in LEASE.items():
            argv += [k, v]
        argv += self.args
        self.popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def leads(self) -> bool:
        """Its own metrics say it holds the lease (a frozen process answers nothing: False)."""
        if not self.alive():
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=0.5) as resp:
                text = resp.read().decode()
        except OSError:
            return False
        return any(line.strip() == "dra_capacity_binder_leader 1.0" for line in text.splitlines())

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def wait_exit(self, timeout: float) -> int | None:
        assert self.popen is not None
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """SIGCONT (in case it is frozen), SIGTERM, then SIGKILL: only this process, by its pid."""
        if not self.alive():
            return
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        if self.wait_exit(10) is None:
            self.signal(signal.SIGKILL)
            self.wait_exit(10)


def wait(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.1) -> Any:
    return waiting.wait_for(what, check, timeout, interval)


_Anys = list[Any]


class RealApi:
    """What `check_invariants` reads, from the real API server. There is no request log: a second Binding of
    a bound pod is refused by the API server itself (409), so `requests_for` has nothing to count."""

    def __init__(self, cluster: Any, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace

    def list(self, resource: str, namespace: str | None = "default") -> list[dict[str, Any]]:
        paths = {
            "pods": f"/api/v1/namespaces/{self.namespace}/pods",
            "resourceclaims": f"/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims",
            "resourceslices": "/apis/resource.k8s.io/v1/resourceslices",
            "events": f"/api/v1/namespaces/{self.namespace}/events",
        }
        status, body = self.cluster.request("GET", paths[resource])
        assert status == 200, (resource, status, body)
        return list(body.get("items") or [])

    def requests_for(self, verb: str, resource: str) -> _Anys:
        return []


def state(api: RealApi) -> dict[str, Any]:
    """What a leader wrote: pods' nodes, PodScheduled and claim links; claims' allocations and finalizers."""
    out: dict[str, Any] = {}
    for p in api.list("pods"):
        st = p.get("status") or {}
        sched = [
            (c["status"], c.get("reason")) for c in st.get("conditions") or [] if c["type"] == "PodScheduled"
        ]
        out[f"pod/{p['metadata']['name']}"] = (
            p["spec"].get("nodeName"),
            sched,
            st.get("extendedResourceClaimStatus"),
        )
    for c in api.list("resourceclaims"):
        meta = c["metadata"]
        out[f"claim/{meta['name']}"] = (
            sorted(meta.get("finalizers") or []),
            (c.get("status") or {}).get("allocation"),
            [r["uid"] for r in (c.get("status") or {}).get("reservedFor") or []],
        )
    return out


@dataclass
class ChaosResult:
    cycles: int
    actions: Counter[str]
    pods_created: int
    bound: int
    seconds: float
    unschedulable: Counter[str]  # PodScheduled=False messages of the pods left pending
    preemptions: Counter[str]  # the victims' Preempted Events by their preemptor's fate (check_preemptions)


class Chaos:
    """Two binder processes, pods arriving and leaving, and the leader killed or frozen once per cycle. With
    `preemption` (the chance a cycle has one, from the third cycle on), that cycle instead creates a pod of
    priority 1000 on a cluster the priority-0 pods fill, waits until the leader nominates a node for it
    (`status.nominatedNodeName`, no `nodeName` yet) and kills the leader there: between nominating and
    binding. `kill-nominated` counts the kills that hit that window, `kill-preempting` the others."""

    def __init__(
        self,
        cluster: Any,
        kubeconfig: Path,
        namespace: str,
        workdir: Path,
        seed: int,
        preemption: float = 0.0,
    ) -> None:
        self.preemption = preemption
        self.cluster = cluster
        self.namespace = namespace
        self.rng = random.Random(seed)
        self.api = RealApi(cluster, namespace)
        workdir.mkdir(parents=True, exist_ok=True)
        self.binders = [BinderProcess(n, kubeconfig, workdir) for n in ("binder-a", "binder-b")]
        self.created = 0
        self.actions: Counter[str] = Counter()
        self.log: list[str] = []

    # --- the cluster --------------------------------------------------------------------------------------

    def setup(self) -> None:
        self.cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": self.namespace}})
        dc = device_class(carrier="annotation")  # a released API server drops the KEP-6406 field
        status, _ = self.cluster.request(
            "GET", f"/apis/resource.k8s.io/v1/deviceclasses/{dc['metadata']['name']}"
        )
        if status == 404:
            self.cluster.create(dc)
        meta = {"name": HIGH_PRIORITY_CLASS}
        pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta, "value": 1000}
        status, body = self.cluster.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc)
        assert status in (201, 409), body

    def add_preemptor(self) -> str:
        """A pod of priority 1000 asking 1 or 2 shares (grace period 0 like every chaos pod)."""
        name = f"{PREEMPTOR_PREFIX}{self.created:03d}"
        obj = pod(name, self.namespace, shares=self.rng.randint(1, 2), priorityClassName=HIGH_PRIORITY_CLASS)
        obj["spec"]["terminationGracePeriodSeconds"] = 0
        status, body = self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/pods", obj)
        assert status == 201, body
        self.created += 1
        return name

    def nominated_or_decided(self, name: str) -> str:
        """Poll the preemptor until it is nominated and unbound (`nominated <node>`), bound (`bound`) or 5 s
        pass (`undecided`: nothing to preempt, or the leader slow)."""
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            status, body = self.cluster.request("GET", path)
            if status == 200 and body["spec"].get("nodeName"):
                return "bound"
            if status == 200 and (node := (body.get("status") or {}).get("nominatedNodeName")):
                return f"nominated {node}"
            time.sleep(0.005)
        return "undecided"

    def add_pods(self, n: int) -> None:
        for _ in range(n):
            obj = pod(f"p{self.created:03d}", self.namespace, shares=self.rng.randint(1, 2))
            obj["spec"]["terminationGracePeriodSeconds"] = 0
            status, body = self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/pods", obj)
            assert status == 201, body
            self.created += 1

    def delete_a_bound_pod(self) -> None:
        bound = [  # never a preemptor: its final node is what check_preemptions judges
            p
            for p in self.api.list("pods")
            if p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and not p["metadata"]["name"].startswith(PREEMPTOR_PREFIX)
        ]
        if bound:
            victim = self.rng.choice(bound)["metadata"]["name"]
            self.cluster.request(
                "DELETE", f"/api/v1/namespaces/{self.namespace}/pods/{victim}", {"gracePeriodSeconds": 0}
            )

    # --- the binders ----------------------------------------------------------------------------------------

    def leader(self, timeout: float = 15.0) -> BinderProcess:
        found: BinderProcess = wait(
            "a leader", lambda: next((b for b in self.binders if b.leads()), None), timeout
        )
        return found

    def restart_dead(self) -> None:
        for b in self.binders:
            if not b.alive():
                b.start()

    def cycle(self, i: int) -> None:
        self.add_pods(self.rng.randint(1, 4))
        if self.rng.random() < 0.4:
            self.delete_a_bound_pod()
        leader = self.leader()
        if i >= 2 and self.rng.random() < self.preemption:
            name = self.add_preemptor()
            seen = self.nominated_or_decided(name)
            action = "kill-nominated" if seen.startswith("nominated") else "kill-preempting"
            self.actions[action] += 1
            leader.signal(signal.SIGKILL)
            leader.wait_exit(10)
            leader.start()
            self.log.append(f"cycle {i}: {name} {seen}, kill {leader.name}")
            return
        time.sleep(self.rng.uniform(0.0, 0.6))  # a random point of its work
        other = next(b for b in self.binders if b is not leader)
        action = ("kill", "freeze")[i] if i < 2 else self.rng.choice(("kill", "freeze"))
        self.actions[action] += 1
        if action == "kill":
            leader.signal(signal.SIGKILL)
            leader.wait_exit(10)
            leader.start()
        else:
            leader.signal(signal.SIGSTOP)
            self.add_pods(self.rng.randint(0, 2))  # work for the new leader
            wait("the standby to take over", other.leads, LEASE_SECONDS * 8)
            time.sleep(self.rng.uniform(0.0, 1.0))  # the new leader writes
            leader.signal(signal.SIGCONT)
            code = leader.wait_exit(LEASE_SECONDS * 5)  # a resumed leader sees its lease gone and exits 1
            assert code == 1, f"cycle {i}: the resumed leader exited with {code}"
            leader.start()
        self.log.append(f"cycle {i}: {action} {leader.name}")

    def quiet(self, timeout: float = 90.0) -> None:
        """Every pod bound or reported unschedulable, and nothing changing for 3 s."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        still_since = time.monotonic()
        while time.monotonic() < deadline:
            now = state(self.api)
            settled = all(
                v[0] or any(c[0] == "False" for c in v[1]) for k, v in now.items() if k.startswith("pod/")
            )
            if now != last or not settled:
                last, still_since = now, time.monotonic()
            elif time.monotonic() - still_since >= 3.0:
                return
            time.sleep(0.5)
        raise AssertionError(f"never quiet: {last}")

    def check(self) -> Counter[str]:
        """The in-process chaos test's invariants, on the real objects (retried while the real resourceclaim
        controller and garbage collector finish), and no victim evicted for a pod bound elsewhere."""
        deadline = time.monotonic() + 30.0
        while True:
            try:
                check_invariants(self.api)
                return check_preemptions(self.api, self.namespace)
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)

    def run(self, cycles: int) -> ChaosResult:
        started = time.monotonic()
        self.setup()
        for b in self.binders:
            b.start()
        try:
            self.add_pods(4)
            for i in range(cycles):
                self.cycle(i)
            self.restart_dead()
            self.quiet()
            preemptions = self.check()
        finally:
            for b in self.binders:
                b.stop()
        pods = self.api.list("pods")
        bound = sum(1 for p in pods if p["spec"].get("nodeName"))
        for p in (p for p in pods if p["metadata"]["name"].startswith(PREEMPTOR_PREFIX)):
            nominated = (p.get("status") or {}).get("nominatedNodeName")
            self.log.append(f"{p['metadata']['name']}: on {p['spec'].get('nodeName')}, nominated {nominated}")
        waiting: Counter[str] = Counter(
            c.get("message") or ""
            for p in pods
            if not p["spec"].get("nodeName")
            for c in (p.get("status") or {}).get("conditions") or []
            if c["type"] == "PodScheduled" and c["status"] == "False"
        )
        seconds = time.monotonic() - started
        return ChaosResult(cycles, self.actions, self.created, bound, seconds, waiting, preemptions)

    def cleanup(self) -> None:
        self.cluster.request("DELETE", f"/api/v1/namespaces/{self.namespace}")
