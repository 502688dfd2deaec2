"""A cluster in device-plugin mode, as `kubectl get -o yaml` exports it, for `migrate plan`'s tests.

Nodes advertise `nvidia.com/gpu.shared` (GPUs x replicas) in allocatable with gpu-feature-discovery's labels;
pods of a Deployment (through its ReplicaSet), a bare pod and a DaemonSet pod run on them; the device plugin's
sharing ConfigMap and a PodDisruptionBudget complete the export.
"""

from __future__ import annotations

from typing import Any

import yaml

from localcluster.objects import make_node, make_pod

RESOURCE = "nvidia.com/gpu.shared"
CLASS = "gpu.nvidia.com-shared-1"
NAMESPACE = "inference"


def dp_node(
    name: str, gpus: int = 2, replicas: int = 4, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", RESOURCE: str(gpus * replicas)}
    gfd = {"nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.replicas": str(replicas), **(labels or {})}
    return make_node(name).labels(gfd).allocatable(**resources).capacity(**resources).obj()


def owner(kind: str, name: str, uid: str | None = None) -> dict[str, Any]:
    api = "apps/v1" if kind in ("ReplicaSet", "Deployment", "StatefulSet", "DaemonSet") else "batch/v1"
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid or f"uid-{name}", "controller": True}


def replicaset(name: str, deployment: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "ownerReferences": [owner("Deployment", deployment)],
        },
        "spec": {"selector": {"matchLabels": {"app": deployment}}},
    }


def gpu_pod(
    name: str,
    node: str | None,
    units: int = 1,
    *,
    owned_by: tuple[str, str] | None = ("ReplicaSet", "web-7d9c8b6f4"),
    namespace: str = NAMESPACE,
    labels: dict[str, str] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    built = (
        make_pod(name)
        .namespace(namespace)
        .uid(f"uid-{name}")
        .labels(labels or {"app": "web"})
        .request("cpu", "1")
        .limit(RESOURCE, units)
        .request(RESOURCE, units)
        .node(node)
        .scheduler(scheduler)
        .status(phase="Running")
    )
    if owned_by is not None:
        built = built.meta(ownerReferences=[owner(*owned_by)])
    return built.obj()


def plugin_configmap(replicas: int = 4, rename: bool = True, extra: str = "") -> dict[str, Any]:
    config = {
        "version": "v1",
        "sharing": {
            "timeSlicing": {
                "renameByDefault": rename,
                "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}],
            }
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
        "data": {"any": yaml.safe_dump(config) + extra},
    }


def pdb(name: str, app: str, max_unavailable: int = 1, namespace: str = NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": app}}},
    }


def cluster(nodes: int = 3, pods_per_node: int = 3) -> list[dict[str, Any]]:
    """`nodes` nodes of 2 GPUs x 4 replicas; `pods_per_node` web pods on each of the first two."""
    objs: list[dict[str, Any]] = [dp_node(f"gpu-node-{i}") for i in range(1, nodes + 1)]
    objs.append(replicaset("web-7d9c8b6f4", "web"))
    for n in range(1, min(nodes, 2) + 1):
        for i in range(pods_per_node):
            objs.append(gpu_pod(f"web-{n}-{i}", f"gpu-node-{n}"))
    return objs


def as_list(objs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs})
