"""Preemption against kube-scheduler where it does preempt: the device plugin's counted resource (v1.37.2).

Each scenario of support.preemption_scenarios runs twice. Device-plugin mode: kwok nodes advertise
`nvidia.com/gpu.shared` in status.allocatable, the running pods are bound to them at creation (their
priorities from PriorityClasses, set by the Priority admission plugin), PodDisruptionBudgets get their status
from the real disruption controller, and the real kube-scheduler preempts for the preemptor: its victims are
the pods with a `Preempted` Event naming the preemptor (preemption/executor.go), its node the one the
preemptor binds to. Shares: the same nodes with their GPUs as ResourceSlices of consumable `shares`, the
running pods as exported from the API (start times included) holding extended-resource claims allocated by
a first `simulate` run, and the PDBs as the controller left them, through the real `dra-capacity simulate -o
json`, whose `victims` name the evicted pods. Both must agree with each other and with the scenario, and a
pending preemptor's PostFilter text too. `victims_on_shares` is one implementation of `SharesSide`
(`SHARES_SIDES`); the live binder (`LiveBinder`) is the second: the scenario rebuilt on ResourceSlices, the
running pods and the preemptor placed by one in-process binder, its victims read from the Events as
kube-scheduler's are. One control plane for all scenarios, a namespace each, deleted after it.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from support.gpu_cluster import SCHEDULER
from support.preemption_scenarios import GPU_SHARED, SCENARIOS, Scenario
from support.real_binders import install_binder_rbac
from support.real_cluster import kwok_node, node_ready, simulate_json, wait_default_account
from support.real_cluster import ok as _ok
from support.real_cluster import priority_class as priority_class_obj

from allocator.scheduling.preemption import NOT_HELPFUL
from binder.controller import Binder, BinderOptions
from kubeio.kube import Kube, load_configuration
from localcluster.cluster import CONTROLLERS, Cluster, ClusterConfig
from localcluster.objects import GPU_DRIVER, gpu_slice, make_class, make_node, make_pod
from procrt.logs import JsonFormatter
from resourceapi.gates import FeatureGates

pytestmark = pytest.mark.realcluster

CLI = str(Path(sys.executable).parent / "dra-capacity")
GATES = "DRAExtendedResource=true,DRAConsumableCapacity=true"
CLASS = "preempt-gpu-shared"
PREEMPTOR = "preemptor"
HOSTNAME = "kubernetes.io/hostname"
RESOURCES = {"cpu": "8", "memory": "16Gi", "pods": "110"}
Obj = dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """Where the preemptor went (None: pending) and which pods were evicted for it."""

    node: str | None
    victims: frozenset[str]
    note: str = ""  # kube-scheduler's PodScheduled message, or simulate's reason
    stray: frozenset[str] = frozenset()  # pods deleted without a Preempted Event naming the preemptor


@dataclass
class Exported:
    """The device-plugin side's objects as the API serves them: the running pods (priorities set by
    admission, start times by kwok), the PDBs with the disruption controller's status, the preemptor."""

    running: list[Obj]
    pdbs: list[Obj]
    preemptor: Obj
    placed: dict[str, Obj] | None = None  # simulate's entry for each running pod on shares (place_running)


SharesSide = Callable[[Scenario, Exported, Path], Outcome]
"""One implementation of the shares side: the scenario, kube-scheduler's side as exported, a work directory
(made by the caller); `SHARES_SIDES` lists them (the live binder can join `victims_on_shares`)."""


@dataclass(frozen=True)
class Row:
    """One scenario's outcomes: kube-scheduler's and one shares side's (named `side`)."""

    sc: Scenario
    ks: Outcome
    side: str
    ours: Outcome


Results = list[Row]


def priority_class(value: int, never: bool = False) -> str:
    name = f"prio-{'m' if value < 0 else ''}{abs(value)}"
    return f"{name}-never" if never else name


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    config = ClusterConfig(
        nodes=0, gpus_per_node=0, netns=False, controllers=(*CONTROLLERS, "disruption-controller")
    )
    with Cluster.start(tmp_path_factory.mktemp("preemption"), config) as c:
        classes = {(p, False) for sc in SCENARIOS for p in sc.priorities}
        classes |= {(sc.priority, True) for sc in SCENARIOS if sc.never}
        for value, never in sorted(classes):
            pc = priority_class_obj(priority_class(value, never), value, never)
            _ok(*c.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc), pc["metadata"]["name"])
        yield c


def _pod(
    ns: str, name: str, priority_class_name: str, shares: tuple[int, ...], labels: Obj, init: tuple[int, ...]
) -> Obj:
    """One container per entry of `shares` (and one init container per entry of `init`), each with that many
    `nvidia.com/gpu.shared` (a limit: the request defaults to it, as extended resources require)."""
    built = make_pod(name).namespace(ns).labels(labels)
    for i, count in enumerate(shares):
        built = built.container(f"c{i}").request("cpu", "10m").limit(GPU_SHARED, count)
    spec: Obj = {"priorityClassName": priority_class_name, "terminationGracePeriodSeconds": 0}
    if init:
        spec["initContainers"] = [
            {
                "name": f"init{i}",
                "image": "registry.example.com/app:1",
                "resources": {"limits": {GPU_SHARED: str(count)}},
            }
            for i, count in enumerate(init)
        ]
    return built.spec(**spec).obj()


@dataclass(frozen=True)
class Mode:
    """How a scenario is built on the real control plane: `pre` (device-plugin mode, kube-scheduler's: the
    nodes advertise the counted resource, the running pods are bound at creation) or `bind` (shares, the live
    binder's: the nodes' GPUs as ResourceSlices, every pod routed to the binder, the running pods pinned to
    their node by a nodeSelector and placed by it)."""

    prefix: str
    scheduler: str | None = None

    @property
    def shares(self) -> bool:
        return self.scheduler is not None


DEVICE_PLUGIN = Mode("pre")
LIVE = Mode("bind", SCHEDULER)


def _start(pod: Obj) -> datetime | None:
    raw = pod.get("status", {}).get("startTime")
    return datetime.fromisoformat(raw.replace("Z", "+00:00")) if raw else None


def _running_pod(cluster: Cluster, ns: str, name: str) -> Obj | None:
    status, pod = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    ready = any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", [])
    )
    return pod if status == 200 and ready and _start(pod) else None


def _pdb_settled(cluster: Cluster, ns: str, name: str, matching: int) -> Obj | None:
    status, pdb = cluster.request("GET", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}")
    st = pdb.get("status", {}) if status == 200 else {}
    settled = st.get("observedGeneration") == pdb.get("metadata", {}).get("generation")
    return pdb if settled and st.get("currentHealthy") == matching else None


def build(cluster: Cluster, sc: Scenario, mode: Mode) -> Exported:
    """The scenario in namespace `<prefix>-<tag>`: its nodes Ready, its PDBs settled by the disruption
    controller, its running pods running (a second apart where `start_gap`), then the preemptor created."""
    ns = f"{mode.prefix}-{sc.tag}"
    _ok(*cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}}), ns)
    for node in sc.nodes:
        res = {**RESOURCES} if mode.shares else {**RESOURCES, GPU_SHARED: str(node.count)}
        _ok(*cluster.request("POST", "/api/v1/nodes", kwok_node(node.name, **res)))
        if mode.shares:
            cluster.create(gpu_slice(node.name, node.gpus, node.shares))
    cluster.wait_for(f"{ns} nodes Ready", lambda: all(node_ready(cluster, n.name) for n in sc.nodes), 60)
    wait_default_account(cluster, ns)
    for b in sc.budgets:
        pdb = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": b.name, "namespace": ns},
            "spec": {"minAvailable": b.min_available, "selector": {"matchLabels": {"app": b.app}}},
        }
        _ok(*cluster.request("POST", f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets", pdb), b.name)
    running: list[Obj] = []
    for r in sc.running:
        pod = _pod(ns, r.name, priority_class(r.priority), r.shares, dict(r.labels), r.init)
        if mode.shares:  # placed by the binder, where the scenario puts it
            pod["spec"] |= {"schedulerName": mode.scheduler, "nodeSelector": {HOSTNAME: r.node}}
        else:
            pod["spec"]["nodeName"] = r.node  # bound at creation: where the scenario puts it
        _ok(*cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", pod), r.name)
        if sc.start_gap:  # the next pod starts at a later second (start times have one-second resolution)
            started = cluster.wait_for(
                f"{ns}/{r.name} running", lambda r=r: _running_pod(cluster, ns, r.name)
            )
            start = _start(started)
            assert start is not None
            while datetime.now(start.tzinfo).timestamp() < start.timestamp() + 1.05:
                time.sleep(0.05)
    for r in sc.running:
        running.append(
            cluster.wait_for(f"{ns}/{r.name} running", lambda r=r: _running_pod(cluster, ns, r.name), 60)
        )
        assert running[-1]["spec"]["nodeName"] == r.node, running[-1]["spec"]
    if sc.start_gap:
        starts = [_start(p) for p in running]
        assert all(a and b and a < b for a, b in itertools.pairwise(starts)), starts
    pdbs = []
    for b in sc.budgets:
        matching = sum(1 for r in sc.running if ("app", b.app) in r.labels)
        pdbs.append(
            cluster.wait_for(
                f"{ns}/{b.name} status", lambda b=b, m=matching: _pdb_settled(cluster, ns, b.name, m)
            )
        )
    preemptor = _pod(ns, PREEMPTOR, priority_class(sc.priority, sc.never), sc.shares, {}, sc.init)
    if mode.shares:
        preemptor["spec"]["schedulerName"] = mode.scheduler
    admitted = _ok(*cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", preemptor), PREEMPTOR)
    return Exported(running, pdbs, admitted)


def on_device_plugin(cluster: Cluster, sc: Scenario) -> tuple[Outcome, Exported]:
    """kube-scheduler's side: build the scenario on counted `nvidia.com/gpu.shared`, create the preemptor,
    and read what kube-scheduler did."""
    exported = build(cluster, sc, DEVICE_PLUGIN)
    return outcome(cluster, f"pre-{sc.tag}", [r.name for r in sc.running]), exported


def outcome(cluster: Cluster, ns: str, running: list[str]) -> Outcome:
    """What a scheduler did: wait until the preemptor is bound, or unschedulable with a failed PostFilter's
    text (`preemption: ` but no `found a potential placement`) and no nomination for a settling while; the
    victims are the pods with a Preempted Event naming it; `stray`: others deleted by then (nothing else
    should delete them)."""
    deadline = time.monotonic() + 60
    pending_since: float | None = None
    while True:
        assert time.monotonic() < deadline, f"{ns}/{PREEMPTOR}: nothing decided in 60 s\n{cluster.logs()}"
        pod = _ok(*cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{PREEMPTOR}"), PREEMPTOR)
        message = next(
            (
                str(c.get("message", ""))
                for c in pod.get("status", {}).get("conditions", [])
                if c["type"] == "PodScheduled" and c["status"] == "False"
            ),
            "",
        )
        if pod["spec"].get("nodeName"):
            break
        failed = "preemption: " in message and "found a potential placement" not in message
        if failed and not pod.get("status", {}).get("nominatedNodeName"):
            pending_since = pending_since or time.monotonic()
            if time.monotonic() - pending_since > 1:
                break
        else:
            pending_since = None
        time.sleep(0.1)
    body = _ok(*cluster.request("GET", f"/api/v1/namespaces/{ns}/pods"), "pods")
    alive = {p["metadata"]["name"] for p in body["items"] if not p["metadata"].get("deletionTimestamp")}
    gone = frozenset(n for n in running if n not in alive)
    uid = pod["metadata"]["uid"]
    settle = time.monotonic() + 5  # the victims' Events are written asynchronously
    while not (preempted := _preempted(cluster, ns, uid)) >= gone and time.monotonic() < settle:
        time.sleep(0.2)
    return Outcome(pod["spec"].get("nodeName") or None, frozenset(preempted), message, gone - preempted)


def _preempted(cluster: Cluster, ns: str, uid: str) -> set[str]:
    """The pods with an Event `Preempted by pod <uid> on node <node>` (preemption/executor.go)."""
    body = _ok(*cluster.request("GET", f"/api/v1/namespaces/{ns}/events"), "events")
    return {
        e["involvedObject"]["name"]
        for e in body["items"]
        if e.get("reason") == "Preempted" and f"Preempted by pod {uid} " in e.get("message", "")
    }


def _simulate(objs: list[Obj], path: Path) -> dict[str, Any]:
    return simulate_json(objs, path, GATES, CLI)


def _clean(obj: Obj) -> Obj:
    out = json.loads(json.dumps(obj))
    out["metadata"].pop("managedFields", None)
    return out


def gpu_class() -> Obj:
    """The DeviceClass mapping `nvidia.com/gpu.shared` to one share (the capacity request as annotation: a
    released API server drops the KEP-6406 field)."""
    built = make_class(CLASS).driver(GPU_DRIVER).extended_resource(GPU_SHARED)
    return built.capacity_requests({"shares": "1"}, annotation=True).obj()


def _shares_cluster(scenarios: list[Scenario]) -> list[Obj]:
    """The DeviceClass, and each node with its GPUs as a ResourceSlice of `shares` (no counted resource)."""
    out: list[Obj] = [gpu_class()]
    for node in (n for sc in scenarios for n in sc.nodes):
        out.append(make_node(node.name).allocatable(**RESOURCES).obj())
        out.append(gpu_slice(node.name, node.gpus, node.shares))
    return out


def place_running(exports: list[tuple[Scenario, Exported]], path: Path) -> None:
    """The running pods' extended-resource claims on shares: one `simulate` run places them all, each pinned
    to its node by a nodeSelector (every scenario has its own nodes); fills each `Exported.placed`."""
    pending = []
    for _, exported in exports:
        for pod in exported.running:
            copy = _clean(pod)
            copy["spec"]["nodeSelector"] = {HOSTNAME: copy["spec"].pop("nodeName")}
            copy["status"] = {"phase": "Pending"}
            pending.append(copy)
    out = _simulate(_shares_cluster([sc for sc, _ in exports]) + pending, path)
    placed = {(e["namespace"], e["name"]): e for e in out["pods"]}
    for _, exported in exports:
        exported.placed = {}
        for pod in exported.running:
            entry = placed[(pod["metadata"]["namespace"], pod["metadata"]["name"])]
            assert entry["result"] == "bound" and entry["node"] == pod["spec"]["nodeName"], entry
            exported.placed[pod["metadata"]["name"]] = entry


def victims_on_shares(sc: Scenario, exported: Exported, workdir: Path) -> Outcome:
    """dra-capacity's side: the scenario's nodes with their GPUs as ResourceSlices of `shares`, the running
    pods holding allocated extended-resource claims (`place_running`, run here unless done for many
    scenarios at once), the PDBs and the preemptor, through `dra-capacity simulate -o json`."""
    workdir.mkdir(exist_ok=True)
    if exported.placed is None:
        place_running([(sc, exported)], workdir / f"{sc.tag}-running.json")
    assert exported.placed is not None
    held: list[Obj] = []
    for pod in exported.running:
        entry = exported.placed[pod["metadata"]["name"]]
        running = _clean(pod)
        running["status"]["extendedResourceClaimStatus"] = entry["extendedResourceClaimStatus"]
        held += [running, entry["claim"]]
    preemptor = _clean(exported.preemptor)
    preemptor["status"] = {"phase": "Pending"}
    pdbs = [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", **_clean(p)} for p in exported.pdbs]
    out = _simulate(_shares_cluster([sc]) + held + pdbs + [preemptor], workdir / f"{sc.tag}.json")
    (entry,) = [e for e in out["pods"] if e["name"] == PREEMPTOR]
    victims = frozenset(v["name"] for v in entry.get("victims", []))
    return Outcome(entry["node"] if entry["result"] == "bound" else None, victims, entry.get("reason", ""))


SHARES_SIDES: dict[str, SharesSide] = {"simulate": victims_on_shares}  # run in a pool; `LiveBinder` apart


def compare(sc: Scenario, ks: Outcome, ours: Outcome, side: str = "simulate") -> list[str]:
    """The disagreements, one line each: each side against the scenario, and the two against each other."""
    problems = []
    want = (sc.expect_node, sc.expect_victims)
    for name, got in (("kube-scheduler", ks), (side, ours)):
        if (got.node, got.victims) != want:
            problems.append(
                f"{sc.tag}: {name} put the preemptor on {got.node} evicting {sorted(got.victims)}; the "
                f"scenario expects {sc.expect_node} evicting {sorted(sc.expect_victims)} ({got.note})"
            )
    want_text = postfilter(ks.note)
    if sc.not_helpful:  # the documented divergence: the filter's reason upstream, "not helpful" here
        want_text = want_text.replace(f"Insufficient {GPU_SHARED}", NOT_HELPFUL)
    if ks.node is None and ours.node is None and want_text != postfilter(ours.note):
        problems.append(
            f"{sc.tag}: kube-scheduler's PostFilter says {postfilter(ks.note)!r}, "
            f"{side} says {postfilter(ours.note)!r}"
        )
    if ks.stray:
        problems.append(f"{sc.tag}: {sorted(ks.stray)} deleted, but not preempted by this preemptor")
    if (ks.node, ks.victims) != (ours.node, ours.victims):
        problems.append(
            f"{sc.tag}: kube-scheduler {ks.node} {sorted(ks.victims)}, "
            f"{side} {ours.node} {sorted(ours.victims)}"
        )
    return problems


def postfilter(message: str) -> str:
    """What DefaultPreemption's PostFilter added to the FitError: from `preemption: ` on."""
    start = message.find("preemption: ")
    return message[start:] if start >= 0 else ""


def _cell(o: Outcome) -> str:
    return f"{o.node or 'pending'}: {', '.join(sorted(o.victims)) or '-'}"


def table(rows: Results) -> str:
    """One line a scenario: kube-scheduler's outcome, then each shares side's, and the verdict over all."""
    sides = list(dict.fromkeys(r.side for r in rows))
    head = f"{'scenario':16} {'kube-scheduler':30} " + " ".join(f"{s:30}" for s in sides)
    lines = [f"{head} verdict", "(each cell: node: victims)"]
    for tag in dict.fromkeys(r.sc.tag for r in rows):
        mine = {r.side: r for r in rows if r.sc.tag == tag}
        first = next(iter(mine.values()))
        cells = " ".join(f"{_cell(mine[s].ours) if s in mine else '':30}" for s in sides)
        same = not any(compare(r.sc, r.ks, r.ours, r.side) for r in mine.values())
        lines.append(f"{tag:16} {_cell(first.ks):30} {cells} {'same' if same else 'MISMATCH'}")
    return "\n".join(lines)


def _delete(cluster: Cluster, sc: Scenario, mode: Mode = DEVICE_PLUGIN) -> None:
    """The scenario's namespace and nodes (and their slices); first its preemptor, gone for good, since a
    pending one would preempt in the next scenario (the namespace's own deletion takes its time)."""
    ns = f"{mode.prefix}-{sc.tag}"
    path = f"/api/v1/namespaces/{ns}/pods/{PREEMPTOR}"
    cluster.request("DELETE", f"{path}?gracePeriodSeconds=0")
    cluster.wait_for(f"{path} deleted", lambda: cluster.request("GET", path)[0] == 404, 30)
    cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
    for node in sc.nodes:
        cluster.request("DELETE", f"/api/v1/nodes/{node.name}")
        if mode.shares:
            cluster.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{node.name}-{GPU_DRIVER}")


class LiveBinder:
    """The live binder as a shares side: one in-process `Binder` for every scenario, authenticated as the
    chart's binder ServiceAccount (as tests/e2e/test_preemption_realcluster.py runs it), on the DeviceClass
    and the scenario's nodes' ResourceSlices; each scenario is built again in `bind-<tag>` (`build`, the
    running pods placed by the binder), its preemptor routed to it; the outcome is read as kube-scheduler's
    is (`outcome`). Scenarios run one at a time: a pending preemptor could take the next one's shares."""

    def __init__(self, cluster: Cluster, workdir: Path) -> None:
        self.cluster = cluster
        self.decisions = workdir / "binder-decisions.jsonl"  # what it decided, to read when a row disagrees
        self.handler = logging.FileHandler(self.decisions)
        self.handler.setFormatter(JsonFormatter())
        self.logger = logging.getLogger("dra_capacity.binder")
        self.level = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self.handler)
        print(f"the live binder's decisions: {self.decisions}")
        cluster.create(gpu_class())
        self.kube = Kube(load_configuration(str(install_binder_rbac(cluster))))
        options = BinderOptions(instance="vs-kube-scheduler", initial_backoff=0.05, max_backoff=0.5)
        self.binder = Binder(self.kube, FeatureGates.parse(""), options=options)
        self.binder.start()
        assert self.binder.wait_synced(30), "informers did not sync"

    def __call__(self, sc: Scenario, exported: Exported, workdir: Path) -> Outcome:
        path = f"/api/v1/namespaces/pre-{sc.tag}"  # its pods on the same node names are gone first
        self.cluster.wait_for(f"{path} deleted", lambda: self.cluster.request("GET", path)[0] == 404, 60)
        build(self.cluster, sc, LIVE)
        try:
            return outcome(self.cluster, f"{LIVE.prefix}-{sc.tag}", [r.name for r in sc.running])
        finally:
            _delete(self.cluster, sc, LIVE)

    def close(self) -> None:
        self.binder.stop()
        self.kube.close()
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)
        self.handler.close()


@pytest.fixture(scope="module")
def results(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Every scenario, one after the other on the cluster; then the shares sides: `simulate` (the running
    pods' claims placed for all scenarios by one run) in a pool, the live binder meanwhile, one scenario at
    a time."""
    workdir = tmp_path_factory.mktemp("shares")
    exports = []
    for sc in SCENARIOS:
        began = time.monotonic()
        ks, exported = on_device_plugin(cluster, sc)
        _delete(cluster, sc)
        print(f"{sc.tag}: kube-scheduler's side in {time.monotonic() - began:.1f} s")
        exports.append((sc, ks, exported))
    place_running([(sc, exported) for sc, _, exported in exports], workdir / "running.json")
    with ThreadPoolExecutor(3) as pool:  # simulate mostly waits for a core: three overlap well
        pending = [
            (sc, ks, side, pool.submit(run, sc, exported, workdir / side))
            for sc, ks, exported in exports
            for side, run in SHARES_SIDES.items()
        ]
        live = LiveBinder(cluster, workdir)
        try:
            rows = []
            for sc, ks, exported in exports:
                began = time.monotonic()
                rows.append(Row(sc, ks, "binder", live(sc, exported, workdir)))
                print(f"{sc.tag}: the live binder's side in {time.monotonic() - began:.1f} s")
        finally:
            live.close()
        return [Row(sc, ks, side, f.result()) for sc, ks, side, f in pending] + rows


def test_shares_evict_the_pods_kube_scheduler_evicts(results: Results) -> None:
    assert len({r.sc.tag for r in results}) >= 10
    assert {r.side for r in results} == {*SHARES_SIDES, "binder"}
    print("\n" + table(results))
    problems = [p for r in results for p in compare(r.sc, r.ks, r.ours, r.side)]
    assert not problems, "\n".join(problems)


def test_the_comparer_reports_an_altered_expectation(results: Results) -> None:
    """The negative control, for each shares side: the same observations judged against a scenario expecting
    one victim more, a shares outcome with one victim more, and a reworded PostFilter text, must each be
    reported."""
    for side in {r.side for r in results}:
        r = next(r for r in results if r.sc.expect_victims and r.side == side)
        altered = replace(r, sc=r.sc.altered())
        found = compare(altered.sc, r.ks, r.ours, side)
        assert len(found) == 2 and all("the scenario expects" in p for p in found), found
        assert "MISMATCH" in table([altered])
        wrong = Outcome(r.ours.node, r.ours.victims | {"extra"})
        assert any("kube-scheduler" in p and side in p for p in compare(r.sc, r.ks, wrong, side))
        r = next(
            r for r in results if r.sc.never and r.side == side
        )  # pending: its PostFilter text is judged
        reworded = Outcome(None, frozenset(), r.ours.note.replace("preemption: ", "preemption: maybe "))
        assert any("PostFilter" in p for p in compare(r.sc, r.ks, reworded, side))
