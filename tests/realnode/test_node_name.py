"""A pod created with `spec.nodeName` on the real node (issue 38, the GPU operator's validator pattern). The
kubelet sees such a pod at once, so a share allocated after it would race the kubelet's admission.
`/mutate-pods` does what the DaemonSet controller does: it drops `spec.nodeName` for a required node affinity
on `metadata.name`, and the binder places the pod there with its share. The real node carries a NoSchedule
taint (`dra-capacity.io/real-node`) the pod does not tolerate: the kubelet admits a pod named to it all the
same, so the pinned pod tolerates NoSchedule. The negative control: the same pod in an opted-out namespace
keeps its `spec.nodeName`, and the kubelet runs it with no share at all."""

from __future__ import annotations

from typing import Any

from support.waiting import wait_for

from localcluster.install import SCHEDULER_NAME
from localcluster.objects import make_pod
from localcluster.realnode.node import RealNode, workload_image
from resourceapi.routing import ROUTING_DISABLED, ROUTING_LABEL

from .conftest import Product
from .test_headline import RESOURCE, calls_for, cdi_variable, claim_of, running_by_kubelet


def _validator(name: str, namespace: str, node: str) -> dict[str, Any]:
    pod = (
        make_pod(name)
        .namespace(namespace)
        .container("main", workload_image())
        .limit(RESOURCE, 1)
        .spec(nodeName=node, terminationGracePeriodSeconds=1)
        .obj()
    )
    pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    return pod


def _required_names(pod: dict[str, Any]) -> list[list[str]]:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return [
        f["values"]
        for t in terms["nodeSelectorTerms"]
        for f in t.get("matchFields", [])
        if f["key"] == "metadata.name" and f["operator"] == "In"
    ]


def test_a_pod_created_with_node_name_gets_its_share_before_the_kubelet_sees_it(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    cluster, ns = node_cluster.cluster, routed_namespace
    created = cluster.create(_validator("validator", ns, real_node.name))
    assert not created["spec"].get("nodeName"), "the kubelet would see the pod before its share"
    assert created["spec"]["schedulerName"] == SCHEDULER_NAME
    assert _required_names(created) == [[real_node.name]]
    path = f"/api/v1/namespaces/{ns}/pods/validator"
    running = wait_for(
        "the validator Running by the kubelet's report",
        lambda: running_by_kubelet(p := cluster.request("GET", path)[1]) and p,
        timeout=90,
        interval=0.3,
    )
    assert running["spec"]["nodeName"] == real_node.name
    claim, request = claim_of(running)
    assert cdi_variable(claim, request) in cluster.kubectl("-n", ns, "logs", "validator").stdout
    assert calls_for(real_node, "NodePrepareResources", claim) == 1


def test_negative_control_without_routing_the_node_name_pod_runs_with_no_share(
    node_cluster: Product, real_node: RealNode
) -> None:
    """What the pinning prevents: the same pod in an opted-out namespace keeps `spec.nodeName`, and the
    kubelet starts it at once with no claim behind its `nvidia.com/gpu.shared` and no device prepared."""
    cluster = node_cluster.cluster
    ns = "rn-nodename-control"  # opted out: /mutate-pods leaves the pod as it is
    cluster.request(
        "POST", "/api/v1/namespaces", {"metadata": {"name": ns, "labels": {ROUTING_LABEL: ROUTING_DISABLED}}}
    )
    try:
        created = cluster.create(_validator("validator", ns, real_node.name))
        assert created["spec"]["nodeName"] == real_node.name
        assert "affinity" not in created["spec"]
        path = f"/api/v1/namespaces/{ns}/pods/validator"
        running = wait_for(
            "the unrouted validator Running",
            lambda: running_by_kubelet(p := cluster.request("GET", path)[1]) and p,
            timeout=90,
            interval=0.3,
        )
        assert "extendedResourceClaimStatus" not in running["status"], running["status"]
        logs = cluster.kubectl("-n", ns, "logs", "validator").stdout
        assert not any(line.startswith("claim_") for line in logs.splitlines()), logs
        uid = running["metadata"]["uid"]
        assert not any(uid in line for line in real_node.plugin_calls("NodePrepareResources"))
    finally:
        cluster.request("DELETE", f"/api/v1/namespaces/{ns}")
