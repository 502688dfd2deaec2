"""NodeDeclaredFeatures (allocator/scheduling/nodefeatures.py): the features a pod needs, as
k8s.io/component-helpers v0.37.2 nodedeclaredfeatures infers them for scheduling, and the placer keeping
such a pod off nodes that do not declare them, with upstream's reason."""

from __future__ import annotations

from typing import Any

import pytest
from support.placing import _placer
from support.workloads import GPU_SHARED, container, gpu_slice, node, pod

from allocator.scheduling.nodefeatures import (
    REASON_DECLARED_FEATURES,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    VOLUME_BIND_MOUNT_OPTIONS,
    required_features,
)
from resourceapi.api.core_v1 import Node, Pod


def _with(**c: Any) -> list[dict[str, Any]]:
    return [{**container("main", {GPU_SHARED: 1}), **c}]


RESTART_RULES = {
    "restartPolicyRules": [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ]
}
BIND_MOUNT = {"volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["nosuid"]}]}


@pytest.mark.parametrize(
    ("built", "expected"),
    [
        (pod("plain", {GPU_SHARED: 1}), set()),
        (pod("restart", containers=_with(**RESTART_RULES)), {RESTART_ALL_CONTAINERS}),
        (
            pod("init", {GPU_SHARED: 1}, init=[{**container("i", {}), **RESTART_RULES}]),
            {RESTART_ALL_CONTAINERS},
        ),
        (pod("userns", {GPU_SHARED: 1}, hostNetwork=True, hostUsers=False), {USER_NAMESPACES_HOST_NETWORK}),
        (pod("hostnet", {GPU_SHARED: 1}, hostNetwork=True), set()),
        (pod("users", {GPU_SHARED: 1}, hostUsers=False), set()),
        (pod("mounts", containers=_with(**BIND_MOUNT)), {VOLUME_BIND_MOUNT_OPTIONS}),
        (pod("other-rule", containers=_with(restartPolicyRules=[{"action": "Restart"}])), set()),
    ],
)
def test_required_features_as_upstream_infers_them(built: Pod, expected: set[str]) -> None:
    assert required_features(built) == expected


def _declaring(name: str, *features: str) -> Node:
    base = node(name).to_api()
    base["status"]["declaredFeatures"] = list(features)
    return Node.model_validate(base)


@pytest.mark.parametrize("naive", [False, True])
def test_a_pod_needing_a_feature_goes_only_where_it_is_declared(naive: bool) -> None:
    nodes = [node("a"), _declaring("b", RESTART_ALL_CONTAINERS)]
    placer = _placer(nodes, [gpu_slice("a", 2), gpu_slice("b", 2)], naive=naive)
    assert placer.place(pod("plain", {GPU_SHARED: 1})).node == "a"  # binpack's name tie
    needing = pod("restart", containers=_with(**RESTART_RULES))
    assert placer.place(needing).node == "b"
    nowhere = pod("mounts", containers=_with(**BIND_MOUNT))
    placed = placer.place(nowhere)
    assert placed.node is None
    assert placed.reason == f"0/2 nodes are available: 2 {REASON_DECLARED_FEATURES}."
