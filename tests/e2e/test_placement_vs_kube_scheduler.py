"""Differential placement: kube-scheduler (the real control plane of the harness's release,
`DRA_CAPACITY_KUBERNETES_RELEASE`, default 1.37) against `dra-capacity simulate --kubernetes-version` it.

Every scenario of support.placement_scenarios is applied to one real cluster (module-scoped); kube-scheduler
places its pods one at a time; the objects are then read back through the API, turned back into the state
before scheduling (no nodeName, no allocations, no synthesized claims), and given to the real `dra-capacity
simulate` subprocess. Every pod's outcome (bound or not) must agree, and match the scenario's expectation;
where only one placement is valid (`unique`), the node and the devices must agree too. A scenario runs on
the releases it states an outcome for (`Scenario.expected`). Disagreements that are deliberate are listed in
docs/divergences.md; there are none in this set.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.placement_scenarios import (
    BY_RELEASE,
    LABEL,
    SCENARIOS,
    Scenario,
    negative_consumed_capacity_is_summed,
)
from support.real_binders import install_binder_rbac
from support.real_cluster import module_cluster, node_ready, ok, simulate_json, wait_default_account

from binder.controller import Binder, BinderOptions
from binder.names import DEFAULT_SCHEDULER_NAME
from kubeio.kube import Kube, load_configuration
from localcluster.cluster import Cluster, ClusterConfig, selected_release
from resourceapi.gates import FeatureGates

pytestmark = pytest.mark.realcluster

EXTENDED_CLAIM = "resource.kubernetes.io/extended-resource-claim"
# The cluster's DRA gates (tests/realcluster FEATURE_GATES), plus DRADeviceTaints, which 1.37 serves
# unconditionally (GA: no longer listed by --help); test_device_taints_are_served pins that.
GATES = (
    "DRAExtendedResource=true,DRAConsumableCapacity=true,DRAPartitionableDevices=true,"
    "DRAPrioritizedList=true,DRAAdminAccess=true,DRADeviceTaints=true"
)
RES = "/apis/resource.k8s.io/v1"


cluster = module_cluster("placement", ClusterConfig(nodes=0, gpus_per_node=0))


def _path(obj: dict[str, Any]) -> str:
    kind, ns = obj["kind"], obj["metadata"].get("namespace")
    plural = {
        "DeviceClass": f"{RES}/deviceclasses",
        "ResourceSlice": f"{RES}/resourceslices",
        "ResourceClaimTemplate": f"{RES}/namespaces/{ns}/resourceclaimtemplates",
        "ResourceClaim": f"{RES}/namespaces/{ns}/resourceclaims",
        "Node": "/api/v1/nodes",
        "Pod": f"/api/v1/namespaces/{ns}/pods",
    }
    return plural[kind]


def _decided(cluster: Cluster, ns: str, name: str) -> bool | None:
    """True once bound, False once kube-scheduler found it unschedulable or failed it with an error (a
    PreFilter or Filter error: `SchedulerError`), and not merely waiting for the resourceclaim controller;
    None before."""
    status, pod = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    if status != 200:
        return None
    if pod["spec"].get("nodeName"):
        return True
    for c in pod.get("status", {}).get("conditions", []):
        failed = c.get("reason") in ("Unschedulable", "SchedulerError")
        if c["type"] == "PodScheduled" and c["status"] == "False" and failed:
            message = c.get("message", "")
            if "waiting for" in message or "not found" in message:
                return None
            return False
    return None


def apply(cluster: Cluster, sc: Scenario) -> list[bool]:
    """Create the scenario and let kube-scheduler place its pods one by one; each pod's outcome."""
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": sc.tag}})
    for node in sc.nodes:
        ok(*cluster.request("POST", "/api/v1/nodes", node), f"{sc.tag} node")
    for obj in sc.objects:
        ok(*cluster.request("POST", _path(obj), obj), f"{sc.tag} {obj['kind']} {obj['metadata']['name']}")
    for name, status in sc.committed.items():
        ok(*commit(cluster, sc.tag, name, status), f"{sc.tag} ResourceClaim {name} status")
    cluster.wait_for(
        f"{sc.tag} nodes Ready",
        lambda: all(node_ready(cluster, n["metadata"]["name"]) for n in sc.nodes),
        60,
    )
    wait_default_account(cluster, sc.tag)
    outcomes: list[bool] = []
    messages: list[str] = []
    for pod in sc.pods:
        name = pod["metadata"]["name"]
        ok(*cluster.request("POST", _path(pod), pod), f"{sc.tag} pod {name}")
        deadline = time.monotonic() + 60
        while True:
            decided = _decided(cluster, sc.tag, name)
            if decided is False:  # settle: a requeue after a late event would still bind it
                time.sleep(1.5)
                decided = _decided(cluster, sc.tag, name)
            if decided is not None:
                break
            assert time.monotonic() < deadline, f"{sc.tag}/{name}: kube-scheduler decided nothing in 60 s"
            time.sleep(0.1)
        outcomes.append(decided)
        messages.append(_scheduled_message(cluster, sc.tag, name))
    sc.observed = messages
    return outcomes


def commit(cluster: Cluster, ns: str, name: str, status: dict[str, Any]) -> tuple[int, Any]:
    """Write `status` to claim `ns/name` (a merge patch of its status subresource): the API's answer."""
    path = f"{RES}/namespaces/{ns}/resourceclaims/{name}/status"
    return cluster.request("PATCH", path, {"status": status}, content_type="application/merge-patch+json")


def _scheduled_message(cluster: Cluster, ns: str, name: str) -> str:
    _, pod = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    for c in (pod or {}).get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return str(c.get("message", ""))
    return ""


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    for k in ("managedFields", "resourceVersion", "generation"):
        meta.pop(k, None)
    return obj


def dump(cluster: Cluster, sc: Scenario) -> list[dict[str, Any]]:
    """The scenario's objects as the API serves them, returned to the state before scheduling."""
    driver = f"{sc.tag}.example.com"

    def items(path: str, kind: str) -> list[dict[str, Any]]:
        body = ok(*cluster.request("GET", path), path)
        return [{"apiVersion": body.get("apiVersion", "v1"), "kind": kind, **i} for i in body["items"]]

    objs: list[dict[str, Any]] = []
    objs += [_strip(n) for n in items(f"/api/v1/nodes?labelSelector={LABEL}%3D{sc.tag}", "Node")]
    objs += [
        _strip(c)
        for c in items(f"{RES}/deviceclasses", "DeviceClass")
        if c["metadata"]["name"].startswith(f"{sc.tag}-")
    ]
    objs += [
        _strip(s) for s in items(f"{RES}/resourceslices", "ResourceSlice") if s["spec"]["driver"] == driver
    ]
    objs += [
        _strip(t) for t in items(f"{RES}/namespaces/{sc.tag}/resourceclaimtemplates", "ResourceClaimTemplate")
    ]
    for claim in items(f"{RES}/namespaces/{sc.tag}/resourceclaims", "ResourceClaim"):
        if (claim["metadata"].get("annotations") or {}).get(EXTENDED_CLAIM) == "true":
            continue  # kube-scheduler's synthesized claim: simulate makes its own
        if claim["metadata"]["name"] in sc.committed:
            claim["status"] = {"allocation": claim["status"]["allocation"]}  # not kube-scheduler's: kept
        else:
            claim.pop("status", None)
        claim["metadata"].pop("finalizers", None)
        objs.append(_strip(claim))
    pods = items(f"/api/v1/namespaces/{sc.tag}/pods", "Pod")
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        pod["spec"].pop("nodeName", None)
        statuses = pod.get("status", {}).get("resourceClaimStatuses")
        pod["status"] = {"phase": "Pending", **({"resourceClaimStatuses": statuses} if statuses else {})}
        objs.append(_strip(pod))
    return objs


def _results(claim: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    alloc = ((claim or {}).get("status") or {}).get("allocation") or {}
    return [(r["driver"], r["pool"], r["device"]) for r in alloc.get("devices", {}).get("results", [])]


def kube_scheduler_devices(cluster: Cluster, ns: str, name: str) -> tuple[str, list[tuple[str, str, str]]]:
    pod = ok(*cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}"), name)
    names = [s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses", [])]
    names += [r.get("resourceClaimName") for r in pod["spec"].get("resourceClaims", [])]
    ext = pod.get("status", {}).get("extendedResourceClaimStatus") or {}
    names.append(ext.get("resourceClaimName"))
    devices: list[tuple[str, str, str]] = []
    for claim in sorted({n for n in names if n}):
        devices += _results(
            ok(*cluster.request("GET", f"{RES}/namespaces/{ns}/resourceclaims/{claim}"), claim)
        )
    return pod["spec"].get("nodeName", ""), sorted(devices)


def simulate_devices(entry: dict[str, Any]) -> tuple[str, list[tuple[str, str, str]]]:
    devices = _results(entry.get("claim"))
    for c in entry.get("claims") or []:  # the pod's own claims: {namespace, name, allocation}
        devices += _results({"status": {"allocation": c.get("allocation")}})
    return entry.get("node") or "", sorted(set(devices))


def run_scenario(cluster: Cluster, sc: Scenario, workdir: Path, release: str) -> list[str]:
    """The disagreements of one scenario on `release`, one line each (empty: they agree)."""
    problems = []
    outcomes = apply(cluster, sc)
    expected = sc.expected(release)
    if outcomes != expected:
        problems.append(
            f"{sc.tag} kube-scheduler {release}: outcomes {outcomes}, scenario expects {expected}: "
            f"{sc.observed}"
        )
    out = simulate_json(dump(cluster, sc), workdir / f"{sc.tag}.json", GATES, release=release)
    entries = {e["name"]: e for e in out["pods"]}
    for pod, ks_bound in zip(sc.pods, outcomes, strict=True):
        name = pod["metadata"]["name"]
        entry = entries.get(name)
        if entry is None:
            problems.append(f"{sc.tag}/{name}: not in simulate's output")
            continue
        sim_bound = entry["result"] == "bound"
        if sim_bound != ks_bound:
            problems.append(
                f"{sc.tag}/{name} ({sc.title}): kube-scheduler {'bound' if ks_bound else 'unschedulable'}, "
                f"simulate {entry['result']} {entry.get('reason', '')}"
            )
            continue
        if sc.unique and ks_bound:
            ks = kube_scheduler_devices(cluster, sc.tag, name)
            sim = simulate_devices(entry)
            ks = (ks[0], sorted(set(ks[1])))
            if ks != sim:
                problems.append(f"{sc.tag}/{name} ({sc.title}): kube-scheduler {ks}, simulate {sim}")
    return problems


def _guarded(cluster: Cluster, sc: Scenario, workdir: Path, release: str) -> list[str]:
    try:
        return run_scenario(cluster, sc, workdir, release)
    except AssertionError as exc:
        return [f"{sc.tag} ({sc.title}): {exc}"]


def test_device_taints_are_served(cluster: Cluster) -> None:
    """DRADeviceTaints is GA in 1.37 (no longer a gate of the binaries): a device's taints are stored."""
    slc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "taint-probe"},
        "spec": {
            "driver": "probe.example.com",
            "allNodes": True,
            "pool": {"name": "probe", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "d", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}],
        },
    }
    stored = ok(*cluster.request("POST", f"{RES}/resourceslices", slc), "slice")
    cluster.request("DELETE", f"{RES}/resourceslices/taint-probe")
    assert stored["spec"]["devices"][0]["taints"][0]["key"] == "k"


def test_a_negative_consumed_capacity_is_refused_from_1_38(cluster: Cluster) -> None:
    """1.38's API server refuses the status of scenario d28's committed claim (a negative consumedCapacity),
    so its PreFilter failure is not reachable on a cluster that starts at 1.38 and d28 states no 1.38
    outcome; 1.37 stores it (d28 runs there, and `commit` asserts the write)."""
    release = selected_release()
    if release != "1.38":
        pytest.skip(f"the refusal is 1.38's validation ({release}; on 1.37 scenario d28 stores the status)")
    sc = negative_consumed_capacity_is_summed()
    assert sc.expected(release) is None
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": sc.tag}})
    (holder,) = [o for o in sc.objects if o["kind"] == "ResourceClaim"]
    ok(*cluster.request("POST", _path(holder), holder), "holder")
    status, body = commit(cluster, sc.tag, "holder", sc.committed["holder"])
    assert status == 422, (status, body)
    field = "status.allocation.devices.results[0].consumedCapacity[memory]"
    assert f'{field}: Invalid value: "-2": must be greater than or equal to 0' in body["message"], body


def test_simulate_places_as_kube_scheduler_does(cluster: Cluster, tmp_path: Path) -> None:
    release = selected_release()
    scenarios = [sc for sc in (make() for make in SCENARIOS) if sc.expected(release) is not None]
    assert len(scenarios) >= 20
    with ThreadPoolExecutor(6) as pool:
        found = list(pool.map(lambda sc: _guarded(cluster, sc, tmp_path, release), scenarios))
    problems = [p for ps in found for p in ps]
    assert not problems, "\n".join(problems)


def test_the_binder_places_the_release_scenarios_as_kube_scheduler_does(cluster: Cluster) -> None:
    """The scenarios that differ by release and that the binder serves (pods without their own
    `spec.resourceClaims`, which it refuses: docs/binder.md; so d33 and d34, the extended-resource forms of
    d26 and d31), built again under tags `b<nn>` with their pods routed to one in-process binder of the
    cluster's release (as the chart's binder ServiceAccount, as tests/e2e/test_preemption_vs_kube_scheduler.py
    runs it): its outcomes must be the scenario's on that release, which the test above holds kube-scheduler
    and `simulate` to."""
    release = selected_release()
    scenarios = [make("b" + make().tag[1:]) for make in BY_RELEASE]
    scenarios = [
        sc
        for sc in scenarios
        if sc.expected(release) is not None and not any(p["spec"].get("resourceClaims") for p in sc.pods)
    ]
    if not scenarios:
        pytest.skip(f"no scenario the binder serves states an outcome on {release}")
    for sc in scenarios:
        for pod in sc.pods:
            pod["spec"]["schedulerName"] = DEFAULT_SCHEDULER_NAME
    kube = Kube(load_configuration(str(install_binder_rbac(cluster))))
    options = BinderOptions(instance="placement", initial_backoff=0.05, max_backoff=0.5)
    binder = Binder(kube, FeatureGates.parse(GATES, release=release), options=options)
    binder.start()
    try:
        assert binder.wait_synced(30), "informers did not sync"
        with ThreadPoolExecutor(6) as pool:
            found = list(pool.map(lambda sc: (sc, apply(cluster, sc)), scenarios))
    finally:
        binder.stop()
        kube.close()
    problems = [
        f"{sc.tag} ({sc.title}): the binder on {release}: {outcomes}, the scenario {sc.expected(release)}: "
        f"{sc.observed}"
        for sc, outcomes in found
        if outcomes != sc.expected(release)
    ]
    assert not problems, "\n".join(problems)
