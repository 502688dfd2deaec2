"""Nothing silently wrong: every PodSpec field that a default-profile scheduler filter reads is either
modelled by placement or makes the pod `unsupported` (pkg/scheduler/apis/config/v1/default_plugins.go)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.workloads import node, pod

from allocator.scheduling.placement import Placer
from allocator.scheduling.podfeatures import (
    SCHEDULING_FIELDS,
    Support,
    hold,
    unsupported_fields,
)
from allocator.structured.cluster import Cluster
from resourceapi.api.core_v1 import Pod
from resourceapi.extended import ExtendedResourceResolver
from resourceapi.gates import FeatureGates
from resourceapi.manifests.apischema import SCHEMA_FILE

# core/v1 PodSpec (k8s.io/api/core/v1/types.go), every field, and what the default profile's filters read.
POD_SPEC_FIELDS = {
    "volumes": "VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits",
    "initContainers": "NodeResourcesFit, NodePorts",
    "containers": "NodeResourcesFit, NodePorts",
    "ephemeralContainers": None,
    "restartPolicy": None,
    "terminationGracePeriodSeconds": None,
    "activeDeadlineSeconds": None,
    "dnsPolicy": None,
    "nodeSelector": "NodeAffinity",
    "serviceAccountName": None,
    "serviceAccount": None,
    "automountServiceAccountToken": None,
    "nodeName": "NodeName",
    "hostNetwork": "NodePorts",
    "hostPID": None,
    "hostIPC": None,
    "shareProcessNamespace": None,
    "securityContext": None,
    "imagePullSecrets": None,
    "hostname": None,
    "subdomain": None,
    "affinity": "NodeAffinity, InterPodAffinity",
    "schedulerName": None,  # which scheduler, not a filter
    "tolerations": "TaintToleration",
    "hostAliases": None,
    "priorityClassName": "PrioritySort, DefaultPreemption",
    "priority": "PrioritySort, DefaultPreemption",
    "dnsConfig": None,
    "readinessGates": None,
    "runtimeClassName": "RuntimeClass admission",
    "enableServiceLinks": None,
    "preemptionPolicy": "DefaultPreemption",
    "overhead": "NodeResourcesFit",
    "topologySpreadConstraints": "PodTopologySpread",
    "setHostnameAsFQDN": None,
    "os": None,
    "hostUsers": None,
    "schedulingGates": "SchedulingGates",
    "resourceClaims": "DynamicResources",
    "resources": "NodeResourcesFit",
    "hostnameOverride": None,
    "workloadRef": "GangScheduling",
    "schedulingGroup": "GangScheduling",
    "evictionResponders": None,
}


def _top(path: str) -> str:
    return path.split(".")[0].split("[")[0]


@pytest.mark.parametrize("field", sorted(f for f, plugins in POD_SPEC_FIELDS.items() if plugins))
def test_every_scheduling_field_is_classified(field: str) -> None:
    assert any(_top(path) == field for path in SCHEDULING_FIELDS), f"{field} is neither modelled nor reported"


def test_the_table_names_only_pod_spec_fields() -> None:
    assert {_top(p) for p in SCHEDULING_FIELDS} <= set(POD_SPEC_FIELDS)


def test_every_field_the_api_has_is_classified_here() -> None:
    """The PodSpec of the generated API schema (Kubernetes 1.37's): a new field fails this test until
    someone decides whether a scheduler filter reads it."""
    api_fields = set(json.loads(SCHEMA_FILE.read_text())["types"]["io.k8s.api.core.v1.PodSpec"]["fields"])
    assert api_fields - set(POD_SPEC_FIELDS) == set()


# A pod using each unsupported field, and the path it is reported at.
UNSUPPORTED_EXAMPLES: dict[str, tuple[dict[str, Any], str]] = {
    "workloadRef": ({"containers": [{"name": "c"}], "workloadRef": {"name": "w"}}, "spec.workloadRef"),
    "schedulingGroup": (
        {"containers": [{"name": "c"}], "schedulingGroup": {"name": "g"}},
        "spec.schedulingGroup",
    ),
}
for _path, (_support, _) in SCHEDULING_FIELDS.items():
    if _support is Support.UNSUPPORTED and _path.startswith("volumes[]."):
        _kind = _path.removeprefix("volumes[].")
        UNSUPPORTED_EXAMPLES[_path] = (
            {"containers": [{"name": "c"}], "volumes": [{"name": "v", _kind: {}}]},
            f"spec.volumes[0].{_kind}",
        )


def test_every_unsupported_field_has_an_example() -> None:
    unsupported = {p for p, (s, _) in SCHEDULING_FIELDS.items() if s is Support.UNSUPPORTED}
    assert unsupported == set(UNSUPPORTED_EXAMPLES)


@pytest.mark.parametrize("path", sorted(UNSUPPORTED_EXAMPLES))
def test_a_pod_using_an_unsupported_field_is_reported_and_never_placed(path: str) -> None:
    spec, reported = UNSUPPORTED_EXAMPLES[path]
    p = Pod.model_validate({"metadata": {"name": "p"}, "spec": spec})
    assert unsupported_fields(p) == [reported]
    gates = FeatureGates.defaults()
    placer = Placer(Cluster(gates, [], [], []), gates, ExtendedResourceResolver([], gates), [node("n1")])
    placement = placer.place(p)
    assert placement.result == "unsupported" and placement.node is None
    assert placement.reason.startswith(f"not simulated: {reported} ({SCHEDULING_FIELDS[path][1]})")


def test_ordinary_volumes_and_container_ports_are_fine() -> None:
    """configMap/secret/emptyDir volumes and plain container ports touch no scheduler filter."""
    p = pod(
        "p",
        containers=[{"name": "c", "ports": [{"containerPort": 80}]}],
        volumes=[{"name": "a", "configMap": {"name": "x"}}, {"name": "b", "emptyDir": {}}],
    )
    assert hold(p) is None


def test_gates_come_before_unsupported_fields() -> None:
    """A gated pod never reaches a filter (SchedulingGates is a PreEnqueue plugin)."""
    p = pod("p", schedulingGates=[{"name": "g"}], volumes=[{"name": "v", "persistentVolumeClaim": {}}])
    held = hold(p)
    assert held is not None and held.result == "gated"
