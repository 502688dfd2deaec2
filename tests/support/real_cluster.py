"""Set-up and calls the real-control-plane tests share (tests/e2e, tests/binder, tests/realnode): a
module-scoped cluster, a cluster with the product installed, a request that must succeed, a kwok node and its
readiness, a namespace's default ServiceAccount, a PriorityClass, a `dra-capacity simulate -o json` run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localcluster.cluster import Cluster, ClusterConfig
from localcluster.install import Installed, install_product
from localcluster.nodes import KWOK_ANNOTATION
from localcluster.objects import make_node

CLI = str(Path(sys.executable).parent / "dra-capacity")


def module_cluster(name: str, config: ClusterConfig) -> Callable[..., Iterator[Cluster]]:
    """A module-scoped `cluster` fixture: `Cluster.start(config)` in a temporary directory named `name`."""

    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
        with Cluster.start(tmp_path_factory.mktemp(name), config) as c:
            yield c

    return cluster


@dataclass
class Product:
    """A running cluster and the product installed on it (localcluster.install)."""

    cluster: Cluster
    installed: Installed


@contextmanager
def installed_product(workdir: Path, config: ClusterConfig) -> Iterator[Product]:
    """A cluster started in `workdir/cluster` with the product installed from `workdir/product`; the product's
    processes are stopped before the cluster."""
    with Cluster.start(workdir / "cluster", config) as cluster:
        installed = install_product(cluster, workdir / "product")
        try:
            yield Product(cluster, installed)
        finally:
            installed.stop()


def ok(status: int, body: Any, what: str = "") -> Any:
    """`body` of a `Cluster.request` answer, asserting that it succeeded (`what` names it if not)."""
    assert status < 300, f"{what}: {status} {body}"
    return body


def node_ready(cluster: Cluster, name: str) -> bool:
    """The node is Ready and the node lifecycle controller has lifted its `node.kubernetes.io/` taints."""
    status, node = cluster.request("GET", f"/api/v1/nodes/{name}")
    conditions = node.get("status", {}).get("conditions", []) if status == 200 else []
    taints = node.get("spec", {}).get("taints", []) if status == 200 else []
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    return ready and not any(t["key"].startswith("node.kubernetes.io/") for t in taints)


def wait_default_account(cluster: Cluster, ns: str, timeout: float = 60) -> None:
    """Wait for the ServiceAccount controller's `default` account of `ns` (pods are refused before it)."""
    cluster.wait_for(
        f"{ns} default ServiceAccount",
        lambda: cluster.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] == 200,
        timeout,
    )


def kwok_node(name: str, labels: dict[str, str] | None = None, **resources: str) -> dict[str, Any]:
    """A node kwok manages (label `type: kwok`, as `Cluster` waits for), `resources` its capacity and
    allocatable."""
    built = make_node(name).labels({**(labels or {}), "type": "kwok"}).annotations(dict([KWOK_ANNOTATION]))
    return built.allocatable(**resources).capacity(**resources).obj()


def priority_class(name: str, value: int, never: bool = False) -> dict[str, Any]:
    """A PriorityClass; `never`: with `preemptionPolicy: Never`."""
    obj: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if never:
        obj["preemptionPolicy"] = "Never"
    return obj


def simulate_json(
    objs: list[dict[str, Any]], path: Path, gates: str, cli: str = CLI, release: str | None = None
) -> dict[str, Any]:
    """`dra-capacity simulate --feature-gates GATES -o json` of `objs`, written as a List to `path`;
    `release`: with `--kubernetes-version RELEASE`."""
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    version = ["--kubernetes-version", release] if release else []
    done = subprocess.run(
        [cli, "simulate", "--feature-gates", gates, *version, "-o", "json", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{path}: {done.stderr}"
    out: dict[str, Any] = json.loads(done.stdout)
    return out
