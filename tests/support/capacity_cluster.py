"""Raw objects of small shared-GPU clusters for the usage and headroom tests, and the two ways to ask them:
the `CapacityView` (what `top` and the metrics print) and simulate's pod mode (what placement then binds)."""

from __future__ import annotations

import copy
from typing import Any

from allocator.capacity.view import CapacityView
from allocator.simulate import load_inputs, run_pods
from localcluster.objects import GpuSlices, make_class
from resourceapi.gates import FeatureGates
from resourceapi.manifests.documents import Document

DRIVER = "gpu.nvidia.com"
RESOURCE = "nvidia.com/gpu.shared"
CLASS = "gpu-shared"
GATES = FeatureGates.defaults()


def device_class(name: str = CLASS, resource: str = RESOURCE, shares: str | None = "1") -> dict[str, Any]:
    built = (
        make_class(name).created("2026-01-01T00:00:00Z").driver(DRIVER).spec(extendedResourceName=resource)
    )
    return (built if shares is None else built.capacity_requests({"shares": shares})).obj()


def node(
    name: str, pods: str = "110", taints: list[dict[str, Any]] | None = None, cpu: str = "32"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "256Gi", "pods": pods}},
    }
    if taints:
        obj["spec"] = {"taints": taints}
    return obj


def gpu(
    name: str, shares: int = 4, policy: dict[str, Any] | None = None, multi: bool = True
) -> dict[str, Any]:
    capacity: dict[str, Any] = {"value": str(shares)}
    if policy is not None:
        capacity["requestPolicy"] = policy
    out: dict[str, Any] = {"name": name, "capacity": {"shares": capacity}}
    if multi:
        out["allowMultipleAllocations"] = True
    return out


# Two `gpu`s by default, else `devices=[...]`.
gpu_slice = GpuSlices(lambda i, node, shares: gpu(f"gpu-{i}"), driver=DRIVER, suffix="gpus")


def pod(name: str, units: int = 1, node_name: str | None = None, cpu: str | None = None) -> dict[str, Any]:
    requests: dict[str, str] = {RESOURCE: str(units)} if units else {}
    if cpu:
        requests["cpu"] = cpu
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/app:1",
                "resources": {
                    "requests": requests,
                    "limits": {k: v for k, v in requests.items() if k != "cpu"},
                },
            }
        ]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
    }


def allocated_claim(
    name: str, node_name: str, device: str, shares: str = "1", share: int = 0
) -> dict[str, Any]:
    """A claim holding `shares` of one GPU, as the binder leaves it."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": CLASS}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "r",
                            "driver": DRIVER,
                            "pool": node_name,
                            "device": device,
                            "shareID": f"00000000-0000-4000-8000-{share:012d}",
                            "consumedCapacity": {"shares": shares},
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                    ]
                },
            }
        },
    }


def two_nodes() -> list[dict[str, Any]]:
    """The class, node-a and node-b, each with a slice of 2 GPUs of 4 shares."""
    return [device_class(), node("node-a"), node("node-b"), gpu_slice("node-a"), gpu_slice("node-b")]


def three_shares_on_node_a(pods: bool = False) -> list[dict[str, Any]]:
    """`two_nodes` with 3 claims of one share on node-a's gpu-0 (with `pods`, the pod holding each)."""
    objs = two_nodes()
    for i in range(3):
        objs.append(allocated_claim(f"a{i}", "node-a", "gpu-0", share=i))
        if pods:
            objs.append(pod(f"run-{i}", node_name="node-a"))
    return objs


def docs(objs: list[dict[str, Any]]) -> list[Document]:
    return [Document("test", i + 1, copy.deepcopy(o)) for i, o in enumerate(objs)]


def view_of(objs: list[dict[str, Any]]) -> CapacityView:
    inputs = load_inputs(docs(objs))
    view = CapacityView(GATES)
    view.load(
        classes=inputs.classes,
        slices=inputs.slices,
        nodes=inputs.nodes,
        claims=inputs.claims,
        pods=inputs.pods,
    )
    return view


def bound_of(objs: list[dict[str, Any]], shapes: list[dict[str, Any]]) -> list[str]:
    """simulate's pod mode over the cluster plus the pending `shapes`, in order: each one's result."""
    inputs = load_inputs(docs(objs + shapes))
    run, _ = run_pods(inputs, GATES, "binpack")
    names = {s["metadata"]["name"] for s in shapes}
    return [p.result for p in run.pods if p.name in names]


def copies(shape: dict[str, Any], n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        obj = copy.deepcopy(shape)
        obj["metadata"]["name"] = f"extra-{i}"
        obj["metadata"]["uid"] = f"uid-extra-{i}"
        out.append(obj)
    return out
