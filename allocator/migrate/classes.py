"""What the move creates: one DeviceClass per shared resource name, and what a switched node publishes.

The class carries its capacity request in the annotation carrier (no released API server stores
`extendedResourceCapacityRequests`), as docs/user-guide.md's Story 1 writes it. The slice a switched node
gets is the NVIDIA DRA driver's with consumable shares, shaped as localcluster/nodes.py's `gpu_slice` (the
sandbox's publisher): each GPU `allowMultipleAllocations` with a `shares` capacity of the plugin's replicas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from resourceapi.api.resource_v1 import DeviceClass, ResourceSlice
from resourceapi.capacity_requests import ANNOTATION as CAPACITY_ANNOTATION

DRIVER = "gpu.nvidia.com"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"  # every class also answers to this name + its own


@dataclass(frozen=True)
class ClassPlan:
    """One class to create, the resource it serves and the driver settings it assumes."""

    name: str
    resource: str
    replicas: tuple[int, ...]  # the replicas per GPU the nodes have (the shares each GPU is published with)
    manifest: dict[str, Any]
    driver_settings: tuple[str, ...]
    warnings: tuple[str, ...]
    exists: bool = False  # the input already holds a class of this name


def class_name(resource: str) -> str:
    """`nvidia.com/gpu.shared` -> `gpu.nvidia.com-shared-1` (the user guide's name): one share per unit."""
    path = resource.split("/", 1)[-1]
    if path.startswith("gpu."):
        path = path[len("gpu.") :]
    slug = re.sub(r"[^a-z0-9.-]+", "-", path.lower()).strip("-.") or "gpu"
    return f"{DRIVER}-{slug}-1"


def class_manifest(name: str, resource: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {
            "name": name,
            "annotations": {CAPACITY_ANNOTATION: json.dumps({"requests": {"shares": "1"}})},
        },
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": f'device.driver == "{DRIVER}" && '
                        f'device.capacity["{DRIVER}"].shares.isGreaterThan(quantity("0"))'
                    }
                }
            ],
            "extendedResourceName": resource,
        },
    }


def plan_classes(
    shared: dict[str, set[int]], existing: Sequence[DeviceClass], rename_by_default: bool | None
) -> list[ClassPlan]:
    """One class per shared name (`shared`: name -> replicas per GPU seen on its nodes); warnings for a name
    another class already claims, and for sharing under `nvidia.com/gpu` itself."""
    out = []
    for resource in sorted(shared):
        name = class_name(resource)
        replicas = tuple(sorted(shared[resource]))
        warnings = [
            f"DeviceClass {c.metadata.name!r} already claims {resource} (spec.extendedResourceName): of two "
            "classes claiming one name the one created last wins; delete it or remove its "
            "extendedResourceName before step 0 (NVIDIA's DRA chart ships one for nvidia.com/gpu)"
            for c in existing
            if c.spec.extended_resource_name == resource and c.metadata.name != name
        ]
        if resource.split("/", 1)[-1] == "gpu" or (
            rename_by_default is False and not resource.endswith(".shared")
        ):
            warnings.append(
                f"the device plugin shares under {resource} itself (renameByDefault: false): every pod "
                f"asking for {resource} gets one share per unit today and after the move, whole-GPU pods "
                f"included; a pod that needs whole GPUs should ask for them through a ResourceClaim of a "
                f"whole-device class, not through {resource}"
            )
        if len(replicas) > 1:
            warnings.append(
                f"{resource}: the nodes time-slice with different replicas per GPU "
                f"({', '.join(map(str, replicas))}): "
                "each GPU is published with its own node's count of shares, so a unit is a different part of "
                "a GPU from node to node"
            )
        settings = (
            f"driver {DRIVER} (NVIDIA's DRA driver) with consumable shares: each GPU published with "
            f"allowMultipleAllocations: true and capacity shares: {'|'.join(map(str, replicas))} "
            "(requestPolicy default 1, validRange min 1, max the shares, step 1), as docs/user-guide.md's "
            "--consumable-shares",
            "feature gates DRAConsumableCapacity and DRAExtendedResource on the API server, scheduler, "
            "controller-manager and kubelets (on by default from 1.36)",
        )
        exists = any(c.metadata.name == name for c in existing)
        out.append(
            ClassPlan(
                name, resource, replicas, class_manifest(name, resource), settings, tuple(warnings), exists
            )
        )
    return out


def gpu_devices(node: str, gpus: int, shares: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"gpu-{i}",
            "attributes": {"index": {"int": i}, "type": {"string": "gpu"}},
            "allowMultipleAllocations": True,
            "capacity": {
                "shares": {
                    "value": str(shares),
                    "requestPolicy": {
                        "default": "1",
                        "validRange": {"min": "1", "max": str(shares), "step": "1"},
                    },
                }
            },
        }
        for i in range(gpus)
    ]


def switched_slice(node: str, gpus: int, shares: int) -> ResourceSlice:
    """The slice the DRA driver publishes for a switched node: its own pool, one slice."""
    return ResourceSlice.model_validate(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": gpu_devices(node, gpus, shares),
            },
        }
    )


def class_models(plans: Iterable[ClassPlan]) -> list[DeviceClass]:
    return [DeviceClass.model_validate(p.manifest) for p in plans]
