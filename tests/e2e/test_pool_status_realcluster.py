"""KEP-5677's pool status API (resource.k8s.io/v1alpha3 ResourcePoolStatusRequest, alpha, gate
DRAResourcePoolStatus; v1.37.2 serves it and kube-controller-manager's resourcepoolstatusrequest-controller
answers it) against `dra-capacity top` on the same pools: the product installed by `localcluster.install` on a
real control plane with the alpha API on, the shipped 17-replica Deployment applied. docs/top.md explains the
difference in units: the pool status counts a capacity's quantity per pool, `top` counts pods of one unit per
class and node."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from localcluster.cluster import CONTROLLERS, FEATURE_GATES, ROOT, Cluster, ClusterConfig
from localcluster.install import Installed, install_product, opted_in_namespace, shared_gpu_class, wait_routed

NAMESPACE = "pool-status"
CLI = str(Path(sys.executable).parent / "dra-capacity")


@pytest.fixture
def installed(real_cluster_factory: Callable[..., Cluster], tmp_path: Path) -> Iterator[Installed]:
    cluster = real_cluster_factory(
        ClusterConfig(
            feature_gates={**FEATURE_GATES, "DRAResourcePoolStatus": True},
            apiserver_args=["--runtime-config=resource.k8s.io/v1alpha3=true"],
            controllers=[*CONTROLLERS, "resourcepoolstatusrequest-controller"],
        )
    )
    product = install_product(cluster, tmp_path / "product")
    try:
        yield product
    finally:
        product.stop()


def pool_status(cluster: Cluster, name: str) -> dict[str, Any]:
    request = {
        "apiVersion": "resource.k8s.io/v1alpha3",
        "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": name},
        "spec": {"driver": "gpu.nvidia.com"},
    }
    path = "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests"
    status, body = cluster.request("POST", path, request)
    assert status == 201, body
    return dict(
        cluster.wait_for(
            "the pool status request answered",
            lambda: cluster.request("GET", f"{path}/{name}")[1].get("status"),
            30,
        )
    )


def test_pool_status_agrees_with_top_on_used_and_free_shares(installed: Installed) -> None:
    cluster = installed.cluster
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": [opted_in_namespace(NAMESPACE), shared_gpu_class()]}
        ),
    )
    wait_routed(cluster, NAMESPACE)
    cluster.kubectl("-n", NAMESPACE, "apply", "-f", str(ROOT / "docs/examples/gpu-shared/deployment.yaml"))
    cluster.wait_for(
        "16 pods bound",
        lambda: (
            sum(
                1
                for p in cluster.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")[1]["items"]
                if p["spec"].get("nodeName")
            )
            == 16
        ),
        60,
    )
    status = pool_status(cluster, "all-gpus")
    print("\nKEP-5677 pool status:", json.dumps(status, indent=1))
    assert status["poolCount"] == 2
    top = json.loads(
        subprocess.run(
            [CLI, "top", "-o", "json", "--kubeconfig", str(cluster.kubeconfig_path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    )
    by_node = {n["node"]: n for n in top["nodes"]}
    for pool in status["pools"]:
        summary = pool["shareableSummary"]
        (shares,) = [c for c in summary["capacity"] if c["name"] == "shares"]
        ours = by_node[pool["poolName"]]  # one pool per node, named for it
        # One pod of `nvidia.com/gpu.shared: 1` consumes one share: the units agree here.
        assert (int(shares["total"]), int(shares["consumed"]), int(shares["available"])) == (
            ours["total"],
            ours["used"],
            ours["free"],
        )
        # Every share is taken, yet v1.37.2 counts both GPUs as "partially available" (some capacity consumed,
        # the full amount included) and as allocated; `top` says 0 free (docs/top.md).
        assert (summary["fullyAvailableDevices"], summary["partiallyAvailableDevices"]) == (0, 2)
        assert (pool["allocatedDevices"], pool["availableDevices"]) == (2, 0)
