"""Volumes side by side on the real control plane (v1.37): the real kube-scheduler and the real `dra-capacity
bind` place copies of the same PVC pods, and kube-controller-manager's real PV controller (and its
ephemeral-volume controller) binds their claims. Each scenario is made twice, in `<tag>-ks` for kube-scheduler
and `<tag>-bd` for the binder (each copy with its own PVs); both must choose the same node, the one the
scenario allows. Covered: a bound PV's node affinity, VolumeZone, WaitForFirstConsumer with static local PVs,
a generic ephemeral volume, dynamic provisioning and an unbound Immediate claim.

Dynamic provisioning uses `support.provisioner`, the smallest provisioner that honours
`volume.kubernetes.io/selected-node`: a test double, labelled so, because a real CSI provisioner (the
external-provisioner sidecar and a driver) needs container images, and this machine has no registry.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from support.provisioner import running_provisioner
from support.real_cluster import CLI, kwok_node, node_ready, ok, wait_default_account
from support.waiting import stop_process

from localcluster.cluster import CONTROLLERS, Cluster, ClusterConfig
from localcluster.objects import (
    ephemeral_volume,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    pvc_volume,
)

pytestmark = pytest.mark.realcluster

BINDER = "dra-capacity"
ZONE = "topology.kubernetes.io/zone"
NODES = {"vol-a": "a", "vol-b": "b", "vol-c": "c"}
LOCAL, IMMEDIATE, DYNAMIC = "vol-local", "vol-immediate", "vol-dynamic"
PROVISIONER = "test-double.dra-capacity.io/provisioner"
PVC_PATH = "/api/v1/namespaces/{ns}/persistentvolumeclaims"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    controllers = (*CONTROLLERS, "persistentvolume-binder-controller", "ephemeral-volume-controller")
    config = ClusterConfig(nodes=0, gpus_per_node=0, netns=False, controllers=controllers)
    with Cluster.start(tmp_path_factory.mktemp("volumes"), config) as c:
        for name, zone in NODES.items():
            node = kwok_node(name, {ZONE: zone}, cpu="8", memory="16Gi", pods="110")
            ok(*c.request("POST", "/api/v1/nodes", node))
        topology = [{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}]
        for sc in (
            make_storage_class(LOCAL),
            make_storage_class(IMMEDIATE, mode="Immediate"),
            make_storage_class(DYNAMIC, provisioner=PROVISIONER, allowed_topologies=topology),
        ):
            ok(*c.request("POST", "/apis/storage.k8s.io/v1/storageclasses", sc))
        c.wait_for("nodes ready", lambda: all(node_ready(c, n) for n in NODES), 60)
        yield c


@pytest.fixture(scope="module")
def binder(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    log = tmp_path_factory.mktemp("binder") / "bind.log"
    argv = [CLI, "bind", "--kubeconfig", str(cluster.kubeconfig_path), "--lease-namespace", "default"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*argv, "--metrics-listen", "127.0.0.1:0"], stdout=out, stderr=subprocess.STDOUT, text=True
        )
    try:
        yield proc
    finally:
        stop_process(proc, 10)


@pytest.fixture(scope="module")
def provisioner(cluster: Cluster) -> Iterator[None]:
    with running_provisioner(cluster, DYNAMIC, PROVISIONER):
        yield


@dataclass
class Scenario:
    """Objects for one copy (namespace `ns`, scheduler `scheduler`); `expect`: each pod's node (None:
    unschedulable); `bound_first`: claims the PV controller must bind before the pods are made."""

    tag: str
    build: Callable[[str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]]
    expect: list[str | None]
    bound_first: list[str] = field(default_factory=list)


def _pod(ns: str, scheduler: str, name: str, *volumes: dict[str, Any]) -> dict[str, Any]:
    built = make_pod(name).namespace(ns).container("app").request("cpu", "100m").spec(volumes=list(volumes))
    return built.scheduler(scheduler if scheduler != "default-scheduler" else None).obj()


def bound_pv(ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A claim bound to a PV whose node affinity names vol-b (VolumeBinding's checkBoundClaims)."""
    pv = make_pv(f"{ns}-data").storage_class("").node_affinity("kubernetes.io/hostname", "vol-b")
    pvc = make_pvc("data").namespace(ns).storage_class("").volume_name(f"{ns}-data")
    return [pv.claim_ref(ns, "data").obj(), pvc.obj()], [_pod(ns, scheduler, "web", pvc_volume("d", "data"))]


def zonal_pv(ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A bound PV labelled zone c, with no node affinity (VolumeZone)."""
    pv = make_pv(f"{ns}-zonal").storage_class("").labels({ZONE: "c"}).claim_ref(ns, "data")
    pvc = make_pvc("data").namespace(ns).storage_class("").volume_name(f"{ns}-zonal")
    return [pv.obj(), pvc.obj()], [_pod(ns, scheduler, "web", pvc_volume("d", "data"))]


def local_pvs(ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """WaitForFirstConsumer with static local PVs on vol-a and vol-c; each claim's selector matches one."""
    objs: list[dict[str, Any]] = []
    pods = []
    for slot, node in (("one", "vol-a"), ("two", "vol-c")):
        pv = make_pv(f"{ns}-{slot}").storage_class(LOCAL).local_to(node).labels({"ns": ns, "slot": slot})
        pvc = make_pvc(slot).namespace(ns).storage_class(LOCAL).obj()
        pvc["spec"]["selector"] = {"matchLabels": {"ns": ns, "slot": slot}}
        objs += [pv.obj(), pvc]
        pods.append(_pod(ns, scheduler, f"web-{slot}", pvc_volume("d", slot)))
    return objs, pods


def ephemeral(ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A generic ephemeral volume of the local class; its claim made by the ephemeral-volume controller."""
    pv = make_pv(f"{ns}-scratch").storage_class(LOCAL).local_to("vol-b").size("2Gi")
    return [pv.obj()], [_pod(ns, scheduler, "web", ephemeral_volume("scratch", LOCAL, "2Gi"))]


def dynamic(ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Dynamic provisioning, the class allowed in zone b only (provisioner_double makes the PV)."""
    pvc = make_pvc("data").namespace(ns).storage_class(DYNAMIC)
    return [pvc.obj()], [_pod(ns, scheduler, "web", pvc_volume("d", "data"))]


def immediate(ns: str, scheduler: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An Immediate claim nothing can bind: the pod stays Pending with upstream's message."""
    pvc = make_pvc("data").namespace(ns).storage_class(IMMEDIATE)
    return [pvc.obj()], [_pod(ns, scheduler, "web", pvc_volume("d", "data"))]


SCENARIOS = [
    Scenario("bound", bound_pv, ["vol-b"], bound_first=["data"]),
    Scenario("zone", zonal_pv, ["vol-c"], bound_first=["data"]),
    Scenario("local", local_pvs, ["vol-a", "vol-c"]),
    Scenario("ephemeral", ephemeral, ["vol-b"]),
    Scenario("dynamic", dynamic, ["vol-b"]),
    Scenario("immediate", immediate, [None]),
]


def _create(cluster: Cluster, obj: dict[str, Any]) -> None:
    kind, ns = obj["kind"], obj["metadata"].get("namespace")
    path = {
        "PersistentVolume": "/api/v1/persistentvolumes",
        "PersistentVolumeClaim": PVC_PATH.format(ns=ns),
        "Pod": f"/api/v1/namespaces/{ns}/pods",
    }[kind]
    ok(*cluster.request("POST", path, obj), f"{kind} {obj['metadata']['name']}")


def _outcome(cluster: Cluster, ns: str, name: str) -> tuple[str | None, str]:
    """(node, "") once bound; (None, message) once unschedulable; ("", "") before."""
    status, pod = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    if status != 200:
        return "", ""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"], ""
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
            message = str(c.get("message", ""))
            if "waiting for ephemeral volume controller" not in message:
                return None, message
    return "", ""


def run_copy(cluster: Cluster, sc: Scenario, scheduler: str) -> list[tuple[str | None, str]]:
    ns = f"{sc.tag}-{'ks' if scheduler == 'default-scheduler' else 'bd'}"
    ok(*cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}}))
    wait_default_account(cluster, ns)
    storage, pods = sc.build(ns, scheduler)
    for obj in storage:
        _create(cluster, obj)
    for claim in sc.bound_first:
        cluster.wait_for(
            f"{ns}/{claim} bound by the PV controller",
            lambda claim=claim: (
                cluster.request("GET", PVC_PATH.format(ns=ns) + f"/{claim}")[1].get("status", {}).get("phase")
                == "Bound"
            ),
            60,
        )
    out = []
    for pod in pods:
        _create(cluster, pod)
        name = pod["metadata"]["name"]
        deadline = time.monotonic() + 90
        while (got := _outcome(cluster, ns, name)) == ("", ""):
            assert time.monotonic() < deadline, f"{ns}/{name}: nothing decided in 90 s\n{cluster.logs()}"
            time.sleep(0.2)
        out.append(got)
    return out


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.tag for s in SCENARIOS])
def test_binder_and_kube_scheduler_choose_the_same_node(
    cluster: Cluster, binder: subprocess.Popen[str], provisioner: None, sc: Scenario
) -> None:
    ks = run_copy(cluster, sc, "default-scheduler")
    bd = run_copy(cluster, sc, BINDER)
    assert [n for n, _ in ks] == sc.expect, f"kube-scheduler: {ks}"
    assert [n for n, _ in bd] == sc.expect, f"binder: {bd}"
    for (_, ks_message), (_, bd_message) in zip(ks, bd, strict=True):
        # Both append their PostFilter text after the FitError; for a pod rejected at PreFilter (an unbound
        # Immediate claim) kube-scheduler's is DynamicResources' "not found" (its PreFilter never ran), the
        # binder's DefaultPreemption's (docs/divergences.md, "PostFilter text after a PreFilter rejection").
        fit_error = bd_message.split(" preemption: ", 1)[0]
        assert ks_message.startswith(fit_error), (ks_message, bd_message)
        assert bool(bd_message) == bool(ks_message)
    if sc.tag == "immediate":
        assert ks[0][1].startswith(
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        )
