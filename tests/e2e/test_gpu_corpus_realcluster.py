"""The GPU pod corpus (tests/gpu_corpus/, issue 38) on the real control plane (v1.37): the product installed
as the chart defines it (`serve` routing with its default, every namespace; `bind`), the corpus cluster's
nodes (each twice, as kwok nodes, so that every entry runs at once) and slices, and then every entry without
a PersistentVolumeClaim applied as published, one namespace each. The real controllers make the workloads'
pods, `/mutate-pods` routes those asking for `nvidia.com/gpu.shared`, and the real `bind` binds them; the
others (a router, a cache server) are kube-scheduler's. Every pod must end bound, each GPU pod by the binder
with its extended-resource claim. What the entries reference but do not ship, a cluster has: their
ServiceAccounts, and the RuntimeClass `nvidia` of the GPU operator."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.real_cluster import installed_product, node_ready, wait_default_account

from localcluster.cluster import Cluster, ClusterConfig
from localcluster.install import SCHEDULER_NAME, Installed, wait_routed
from localcluster.nodes import KWOK_ANNOTATION

pytestmark = pytest.mark.realcluster

CORPUS = Path(__file__).resolve().parents[1] / "gpu_corpus"
RESOURCE = "nvidia.com/gpu.shared"
WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet")


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _entries() -> list[tuple[str, list[dict[str, Any]]]]:
    """(namespace, objects) of each entry that is bound and has no PVC."""
    out = []
    for source in yaml.safe_load((CORPUS / "sources.yaml").read_text()):
        docs = _documents(CORPUS / f"{source['id']}.yaml")
        if source["expect"] != "bound" or any(d["kind"] == "PersistentVolumeClaim" for d in docs):
            continue
        ns = source["id"].replace(".", "-")
        for d in docs:
            d["metadata"]["namespace"] = ns
        out.append((ns, docs))
    return out


def _pod_specs(obj: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
    if obj["kind"] == "Pod":
        return [(obj["spec"], 1)]
    if obj["kind"] in WORKLOADS:
        return [(obj["spec"]["template"]["spec"], int(obj["spec"].get("replicas", 1)))]
    return []


def _asks(spec: dict[str, Any]) -> bool:
    containers = (spec.get("initContainers") or []) + spec["containers"]
    return any(
        RESOURCE in ((c.get("resources") or {}).get(p) or {})
        for c in containers
        for p in ("requests", "limits")
    )


def _apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Installed]]:
    workdir = tmp_path_factory.mktemp("gpu-corpus")
    config = ClusterConfig(nodes=0, gpus_per_node=0, netns=False)
    cluster_docs = _documents(CORPUS / "cluster.yaml")
    objects: list[dict[str, Any]] = []
    for copy_suffix in ("", "-b"):
        for d in cluster_docs:
            d = copy.deepcopy(d)
            if d["kind"] == "Node":
                name = d["metadata"]["name"] + copy_suffix
                d["metadata"]["name"] = name
                d["metadata"]["labels"]["kubernetes.io/hostname"] = name
                d["metadata"]["annotations"] = dict([KWOK_ANNOTATION])
                d["status"]["capacity"] = dict(d["status"]["allocatable"])
            elif d["kind"] == "ResourceSlice":
                name = d["spec"]["nodeName"] + copy_suffix
                d["metadata"]["name"] = f"{name}-gpu.nvidia.com"
                d["spec"]["nodeName"] = name
                d["spec"]["pool"]["name"] = name
            elif copy_suffix:
                continue
            objects.append(d)
    objects.append(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": "nvidia"},
            "handler": "nvidia",
        }
    )
    with installed_product(workdir, config) as product:
        cluster = product.cluster
        for obj in objects:
            status, body = cluster.request("POST", _path(obj), obj)
            assert status < 300, f"{obj['kind']} {obj['metadata']['name']}: {status} {body}"
        nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]
        cluster.wait_for("nodes Ready", lambda: all(node_ready(cluster, n) for n in nodes), 90)
        wait_routed(cluster, "default")
        yield cluster, product.installed


def _path(obj: dict[str, Any]) -> str:
    return {
        "Node": "/api/v1/nodes",
        "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
        "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
        "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
        "RuntimeClass": "/apis/node.k8s.io/v1/runtimeclasses",
    }[obj["kind"]]


def test_every_corpus_pod_without_a_volume_is_bound_on_the_real_control_plane(
    installed: tuple[Cluster, Installed],
) -> None:
    cluster, product = installed
    entries = _entries()
    assert len(entries) >= 15
    expected: dict[str, tuple[int, int]] = {}  # namespace -> (pods, GPU pods)
    for ns, docs in entries:
        accounts = sorted(
            {str(s.get("serviceAccountName")) for d in docs for s, _ in _pod_specs(d)} - {"None", "default"}
        )
        prelude = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
        prelude += [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": a, "namespace": ns}}
            for a in accounts
        ]
        _apply(cluster, prelude)
        wait_default_account(cluster, ns)
        counts = [(n, _asks(s)) for d in docs for s, n in _pod_specs(d)]
        expected[ns] = (sum(n for n, _ in counts), sum(n for n, gpu in counts if gpu))
    for _, docs in entries:
        _apply(cluster, docs)

    def pods(ns: str) -> list[dict[str, Any]]:
        status, body = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods")
        return list(body.get("items", [])) if status == 200 else []

    def missing() -> list[str]:
        out = []
        for ns, (count, _) in expected.items():
            bound = [p for p in pods(ns) if p["spec"].get("nodeName")]
            if len(bound) < count:
                out.append(f"{ns}: {len(bound)}/{count}")
        return out

    try:
        cluster.wait_for("every corpus pod bound", lambda: not missing(), 240, interval=1)
    except Exception:
        print("unbound:", missing())
        print(product.logs["bind"].read_text()[-6000:])
        raise
    for ns, (count, gpu) in expected.items():
        listed = pods(ns)
        assert len(listed) == count, ns
        routed = [p for p in listed if p["spec"]["schedulerName"] == SCHEDULER_NAME]
        assert len(routed) == gpu, f"{ns}: {len(routed)} routed, {gpu} ask for {RESOURCE}"
        for p in routed:
            claim = p["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
            prefix = f"{p['metadata']['name']}-extended-resources-"[:58]  # generateName's cut
            assert claim.startswith(prefix), claim
