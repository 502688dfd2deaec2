"""Small object builders for the double's own tests (plain dicts, as the API serves them)."""

from __future__ import annotations

from typing import Any

from localcluster.objects import make_class


def pod(name: str = "p", namespace: str = "default", node: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}], **spec},
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def node(name: str = "n1", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}


def device_class(name: str = "gpu", **spec: Any) -> dict[str, Any]:
    return (make_class(name).spec(**spec) if spec else make_class(name).driver("gpu.example.com")).obj()


def claim(name: str = "c", namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "gpu"}}]}},
    }


def allocation(driver: str = "gpu.example.com", device: str = "gpu-0") -> dict[str, Any]:
    return {
        "devices": {
            "results": [{"request": "req-0", "driver": driver, "pool": "n1", "device": device}],
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            ]
        },
    }


def configmap(
    name: str = "cm", namespace: str = "default", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": {"k": "v"},
    }
