"""The chart on a real node: `helm install` runs the webhook and binder Deployments as real pods from the
product image (`make image`, imported into the node's containerd), under Pod Security `restricted`, with the
chart's securityContext and probes, reaching the API server through the `kubernetes` Service's ClusterIP (one
DNAT rule standing in for kube-proxy). The API server calls the webhook through its Service: a DeviceClass
write is judged, and a pod is routed to the binder, which (itself a pod on the node) places it on a GPU share
the kubelet then prepares. The post-install probe Job is off: it calls the webhook Service's ClusterIP, which
needs kube-proxy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realcluster.hostrunner import taint_kwok_nodes
from support.waiting import wait_for

from localcluster.cluster import Cluster, ClusterConfig
from localcluster.install import (
    CHART,
    SCHEDULER_NAME,
    opted_in_namespace,
    shared_gpu_class,
    tool,
    wait_routed,
)
from localcluster.realnode import host
from localcluster.realnode.node import APISERVER_ARGS, RealNode, RealNodeConfig, workload_image

from .test_headline import cdi_variable, claim_of, running_by_kubelet

IMAGE = os.environ.get("IMAGE", "localhost/dra-capacity:dev")
NS = "dra-capacity"
RELEASE = "dra"
CARRIER = "dra-capacity.io/extended-resource-capacity-requests"


def _podman() -> list[str]:
    return ["podman", "--storage-driver", "vfs"]


@pytest.fixture
def chart_node(tmp_path: Path) -> Iterator[tuple[Cluster, RealNode]]:
    if os.geteuid() != 0:
        pytest.skip("a real node needs root")
    if shutil.which("podman") is None or subprocess.run([*_podman(), "image", "exists", IMAGE]).returncode:
        pytest.fail(f"the product image {IMAGE} is not built: `make image` (make realnode builds it first)")
    before = host.read_sysctls()
    with Cluster.start(tmp_path / "cluster", ClusterConfig(apiserver_args=APISERVER_ARGS)) as cluster:
        taint_kwok_nodes(cluster)  # every pod of the release lands on the real node
        node = RealNode.launch(cluster, tmp_path / "node", RealNodeConfig(taint=False), "pytest, the chart")
        try:
            archive = tmp_path / "product.tar"
            subprocess.run(
                [*_podman(), "save", "--format", "oci-archive", "-o", str(archive), IMAGE], check=True
            )
            node.import_image(archive, IMAGE)
            node.route_cluster_ip()
            yield cluster, node
        finally:
            left = node.stop()
    assert left.empty(), f"the real node left {left}"
    assert host.read_sysctls() == before


def helm(cluster: Cluster, *args: str) -> None:
    argv = [tool("helm"), "--kubeconfig", str(cluster.kubeconfig_path), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}{done.stdout}"


def device_class(name: str, shares: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {
            "name": name,
            "annotations": {CARRIER: json.dumps({"requests": {"gpu.nvidia.com/shares": shares}})},
        },
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]},
    }


def test_the_chart_runs_as_real_pods_on_the_real_node(chart_node: tuple[Cluster, RealNode]) -> None:
    cluster, node = chart_node
    repository, tag = IMAGE.rsplit(":", 1)
    cluster.request(
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": NS, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}},
    )
    helm(
        cluster,
        *("install", "dra", str(CHART), "-n", NS, "--wait", "--timeout", "4m"),
        *(
            "--set",
            f"image.repository={repository}",
            "--set",
            f"image.tag={tag}",
            "--set",
            "image.pullPolicy=Never",
        ),
        *("--set", "webhook.replicaCount=1", "--set", "binder.replicaCount=1"),
        # The post-install probe posts a review to the webhook Service's ClusterIP: that needs kube-proxy,
        # which this node does not run (only the `kubernetes` Service's ClusterIP has a rule).
        *("--set", "hooks.installProbe=false"),
    )
    _, listed = cluster.request("GET", f"/api/v1/namespaces/{NS}/pods")
    pods = [p for p in listed["items"] if p["status"].get("phase") != "Succeeded"]
    print(
        "release pods:",
        [(p["metadata"]["name"], p["spec"].get("nodeName"), p["status"]["phase"]) for p in pods],
    )
    assert len(pods) >= 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == node.name
        assert running_by_kubelet(pod), pod["status"]
        for container in pod["spec"]["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True

    # The API server calls the webhook through its Service, at the pod's IP on the node's bridge.
    bad = cluster.kubectl("apply", "-f", "-", input=json.dumps(device_class("rn-bad", "0")), check=False)
    assert bad.returncode != 0 and "must be greater than zero" in bad.stderr, bad
    cluster.kubectl("apply", "-f", "-", input=json.dumps(device_class("rn-ok", "1")))

    # Pod routing, and the binder (a pod itself) placing a pod the kubelet then prepares.
    cluster.create(shared_gpu_class())
    cluster.create(opted_in_namespace("rn-chart"))
    wait_routed(cluster, "rn-chart")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "shared", "namespace": "rn-chart"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "main",
                    "image": workload_image(),
                    "imagePullPolicy": "Never",
                    "resources": {"limits": {"nvidia.com/gpu.shared": "1"}},
                }
            ],
            "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"type": "real"},
        },
    }
    cluster.create(pod)
    path = "/api/v1/namespaces/rn-chart/pods/shared"
    placed = wait_for(
        "the routed pod Running",
        lambda: running_by_kubelet(p := cluster.request("GET", path)[1]) and p,
        90,
        0.5,
    )
    assert placed["spec"]["schedulerName"] == SCHEDULER_NAME
    claim, request = claim_of(placed)
    assert cdi_variable(claim, request) in cluster.kubectl("-n", "rn-chart", "logs", "shared").stdout
    cluster.request("DELETE", path)

    # A CA rotation: the new Secret reaches the webhook pod through the kubelet's Secret volume refresh
    # (syncFrequency 10 s here), the webhook serves it, and the API server trusts it.
    secret = f"/api/v1/namespaces/{NS}/secrets/{RELEASE}-dra-capacity-webhook-tls"
    before_ca = cluster.request("GET", secret)[1]["data"]["ca.crt"]
    common = [
        *("--kubeconfig", str(cluster.kubeconfig_path), "--namespace", NS),
        *("--secret", f"{RELEASE}-dra-capacity-webhook-tls", "--service", f"{RELEASE}-dra-capacity-webhook"),
        *("--webhook-config", f"{RELEASE}-dra-capacity-webhook"),
        *("--webhook-config", f"mutating/{RELEASE}-dra-capacity-pod-routing"),
    ]
    started = time.monotonic()
    rotate = subprocess.run(
        [
            tool("dra-capacity"),
            "certs",
            "rotate",
            *common,
            "--force-ca",
            "--propagation-delay",
            "5",
            "--wait",
            "240",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert rotate.returncode == 0, rotate.stdout + rotate.stderr
    print(f"CA rotation through the kubelet's Secret refresh: {time.monotonic() - started:.1f} s")
    assert cluster.request("GET", secret)[1]["data"]["ca.crt"] != before_ca
    check = subprocess.run([tool("dra-capacity"), "certs", "check", *common], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    bad = cluster.kubectl("apply", "-f", "-", input=json.dumps(device_class("rn-bad-2", "0")), check=False)
    assert bad.returncode != 0 and "must be greater than zero" in bad.stderr, bad
    helm(cluster, "uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "3m")
