"""The headline of issue 41 on the real control plane (kube-apiserver v1.37.2, kube-controller-manager, kwok
nodes with shares): on a full cluster a high-priority pod is bound by the binder, running as the chart's
binder ServiceAccount, after exactly the victims `simulate` picks for the same objects; the victim's grace
period is 0, and the time from the pod's creation to its Binding is printed (a figure, not asserted)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.binder_harness import check_invariants
from support.gpu_cluster import pod
from support.real_binders import Chaos, RealApi, install_binder_rbac, wait
from support.real_cluster import module_cluster, priority_class

from allocator.simulate import load_inputs, run_pods
from binder.controller import Binder, BinderOptions
from kubeio.kube import Kube, load_configuration
from localcluster.cluster import Cluster, ClusterConfig
from resourceapi.gates import FeatureGates
from resourceapi.manifests.documents import Document

pytestmark = [pytest.mark.realcluster]

NS = "preemption"
LOW = {"batch-10": 10, "batch-20": 20, "batch-30": 30, "batch-40": 40}
HIGH = 1000
_LISTS = {
    "/apis/resource.k8s.io/v1/deviceclasses": ("resource.k8s.io/v1", "DeviceClass"),
    "/api/v1/nodes": ("v1", "Node"),
    "/apis/resource.k8s.io/v1/resourceslices": ("resource.k8s.io/v1", "ResourceSlice"),
    f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims": ("resource.k8s.io/v1", "ResourceClaim"),
    f"/api/v1/namespaces/{NS}/pods": ("v1", "Pod"),
}


cluster = module_cluster("preempt-real", ClusterConfig(nodes=2, gpus_per_node=1, shares=2))


def _pod(name: str, priority_class: str) -> dict[str, Any]:
    obj = pod(name, NS, priorityClassName=priority_class)
    obj["spec"]["terminationGracePeriodSeconds"] = 0
    return obj


def _get(cluster: Cluster, name: str) -> dict[str, Any] | None:
    status, body = cluster.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
    return body if status == 200 else None


def _simulated_victims(cluster: Cluster, preemptor: dict[str, Any]) -> set[str]:
    objs: list[dict[str, Any]] = []
    for path, (api_version, kind) in _LISTS.items():
        status, body = cluster.request("GET", path)
        assert status == 200, (path, body)
        for o in body.get("items") or []:
            if kind == "Pod" and not o["spec"].get("nodeName"):
                continue
            objs.append({**o, "apiVersion": api_version, "kind": kind})
    objs.append({**preemptor, "metadata": {**preemptor["metadata"], "uid": "preemptor"}})
    objs[-1]["spec"] = {**objs[-1]["spec"], "priority": HIGH}  # what the Priority admission plugin sets
    inputs = load_inputs([Document("api", i + 1, o) for i, o in enumerate(objs)], warn_unknown=False)
    run, _ = run_pods(inputs, FeatureGates.parse(""), "binpack")
    [outcome] = [o for o in run.pods if o.name == preemptor["metadata"]["name"]]
    assert outcome.result == "bound", outcome.reason
    return {name for _, name in outcome.victims}


def test_a_high_priority_pod_is_bound_live_after_exactly_the_victims_simulate_picks(
    cluster: Cluster, tmp_path: Path
) -> None:
    kubeconfig = install_binder_rbac(cluster)
    Chaos(cluster, kubeconfig, NS, tmp_path / "setup", 0).setup()  # the namespace and the DeviceClass
    for name, value in {**LOW, "inference": HIGH}.items():
        status, body = cluster.request(
            "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", priority_class(f"prio-{name}", value)
        )
        assert status in (201, 409), body
    kube = Kube(load_configuration(str(kubeconfig)))
    binder = Binder(
        kube,
        FeatureGates.parse(""),
        options=BinderOptions(instance="preempt", initial_backoff=0.05, max_backoff=0.5, watch_timeout=30.0),
    )
    api = RealApi(cluster, NS)
    try:
        binder.start()
        assert binder.wait_synced(30), "informers did not sync"
        for name in LOW:
            cluster.create(_pod(name, f"prio-{name}"))
        wait(
            "the cluster full",
            lambda: sum(bool(p["spec"].get("nodeName")) for p in api.list("pods")) == 4,
            60,
        )
        high = _pod("inference", "prio-inference")
        expected = _simulated_victims(cluster, high)
        assert expected == {"batch-10"}
        nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in api.list("pods")}
        started = time.monotonic()
        cluster.create(high)
        node = wait(
            "bound", lambda: (_get(cluster, "inference") or {}).get("spec", {}).get("nodeName"), 60, 0.02
        )
        seconds = time.monotonic() - started
        gone = set(LOW) - {p["metadata"]["name"] for p in api.list("pods")}
        assert gone == expected
        assert node == nodes["batch-10"]
        print(f"\npreemption, one victim (grace period 0): creation to Binding {seconds:.2f} s")
        check_invariants(api)
    finally:
        binder.stop()
        kube.close()
        cluster.request("DELETE", f"/api/v1/namespaces/{NS}")
