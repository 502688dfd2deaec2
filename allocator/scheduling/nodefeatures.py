"""kube-scheduler's NodeDeclaredFeatures filter (v1.37.2 pkg/scheduler/framework/plugins/nodedeclaredfeatures,
GA and locked on in 1.37): a pod that needs a node feature may only go to a node whose
`status.declaredFeatures` lists it. The features a pod needs for scheduling are those of
k8s.io/component-helpers v0.37.2 nodedeclaredfeatures/features whose `InferForScheduling` can be true:

* `RestartAllContainersOnContainerExits`: a container or init container with a `restartPolicyRules` action
  `RestartAllContainers`;
* `UserNamespacesHostNetworkSupport`: `hostNetwork: true` with `hostUsers: false`;
* `VolumeBindMountOptions`: a container or init container volume mount with `bindMountOptions`.

The others (the in-place resize ones, DRA node-allocatable resources, DRA optional node operations, the
kubelet's websockets) infer nothing for scheduling. None has a maximum version in v0.37.2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from resourceapi.api.core_v1 import Node, Pod

REASON_DECLARED_FEATURES = "node(s) didn't match Pod's required features"  # errReasonUnsatisfiedRequirements
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS = "VolumeBindMountOptions"


def _extra(model: Any, key: str) -> Any:
    return (getattr(model, "model_extra", None) or {}).get(key)


def required_features(pod: Pod) -> frozenset[str]:
    """InferForPodScheduling: the declared node features this pod needs."""
    out: set[str] = set()
    containers = [*(pod.spec.init_containers or []), *pod.spec.containers]
    for c in containers:
        rules = _extra(c, "restartPolicyRules") or []
        if any(isinstance(r, Mapping) and r.get("action") == "RestartAllContainers" for r in rules):
            out.add(RESTART_ALL_CONTAINERS)
        mounts = _extra(c, "volumeMounts") or []
        if any(isinstance(m, Mapping) and m.get("bindMountOptions") for m in mounts):
            out.add(VOLUME_BIND_MOUNT_OPTIONS)
    if _extra(pod.spec, "hostNetwork") is True and _extra(pod.spec, "hostUsers") is False:
        out.add(USER_NAMESPACES_HOST_NETWORK)
    return frozenset(out)


def declares(node: Node, features: Iterable[str]) -> bool:
    """Filter: the node's `status.declaredFeatures` holds every required feature."""
    declared = set((node.status.declared_features if node.status else None) or [])
    return all(f in declared for f in features)
