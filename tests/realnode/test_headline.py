"""The real node's headline: unchanged pods asking for `nvidia.com/gpu.shared` go through the routing webhook
and the binder onto a real kubelet node, which admits them (no `OutOf*`), has the DRA test plugin prepare each
claim once, starts the containers with the plugin's CDI variable, and unprepares each deleted pod's claim; the
shares a scale-down frees go to a pending pod. And the negative control: a pod whose status names a claim
that does not exist, bound to the node by hand, is refused by the kubelet."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.waiting import wait_for

from localcluster.install import SCHEDULER_NAME
from localcluster.objects import make_pod
from localcluster.realnode import host
from localcluster.realnode.node import NODE_LABELS, RealNode, workload_image

from .conftest import NodeFactory, Product

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "gpu-shared" / "real-node.yaml"
RESOURCE = "nvidia.com/gpu.shared"


def deployment(replicas: int) -> dict[str, Any]:
    obj = yaml.safe_load(EXAMPLE.read_text())
    obj["spec"]["replicas"] = replicas
    return dict(obj)


def pods(product: Product, namespace: str, selector: str = "") -> list[dict[str, Any]]:
    query = f"?labelSelector={selector}" if selector else ""
    status, body = product.cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods{query}")
    assert status == 200, body
    return list(body["items"])


def running_by_kubelet(pod: dict[str, Any]) -> bool:
    """Running as the kubelet reports it: phase, Ready condition and a running container."""
    status = pod.get("status", {})
    return (
        status.get("phase") == "Running"
        and any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
        and all("running" in c.get("state", {}) for c in status.get("containerStatuses", []) or [{}])
    )


def claim_of(pod: dict[str, Any]) -> tuple[str, str]:
    """The pod's extended-resource claim and its request name (the binder's status write)."""
    ers = pod["status"]["extendedResourceClaimStatus"]
    return ers["resourceClaimName"], ers["requestMappings"][0]["requestName"]


def cdi_variable(claim: str, request: str) -> str:
    """What upstream's test driver injects (test/e2e/dra/test-driver/app/kubeletplugin.go)."""
    return re.sub(r"[^a-zA-Z0-9]", "_", f"claim_{claim}_{request}") + "=true"


def calls_for(node: RealNode, method: str, claim: str) -> int:
    return sum(f'name:\\"{claim}\\"' in line for line in node.plugin_calls(method))


def scale(product: Product, namespace: str, name: str, replicas: int) -> None:
    status, body = product.cluster.request(
        "PATCH",
        f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
        {"spec": {"replicas": replicas}},
        content_type="application/merge-patch+json",
    )
    assert status == 200, body


def test_shared_gpu_pods_run_on_the_real_node(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    cluster, ns = node_cluster.cluster, routed_namespace
    assert real_node.node() is not None and real_node.ready()
    assert (real_node.node() or {})["status"]["nodeInfo"]["kubeletVersion"] == cluster.version
    [published] = real_node.slices()
    assert [d["name"] for d in published["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert all(d["allowMultipleAllocations"] for d in published["spec"]["devices"])
    assert published["spec"]["driver"] == "gpu.nvidia.com"

    # 2 GPUs x 4 shares: eight replicas fill the node.
    started = time.monotonic()
    cluster.create({**deployment(8), "metadata": {**deployment(8)["metadata"], "namespace": ns}})
    ready = wait_for(
        "8 pods Running by the kubelet's report",
        lambda: (
            (found := pods(node_cluster, ns, "app%3Dgpu-real"))
            and len(found) == 8
            and all(running_by_kubelet(p) for p in found)
            and found
        ),
        timeout=90,
        interval=0.3,
    )
    print(f"8 pods Running on the real node {time.monotonic() - started:.1f} s after the Deployment")
    claims = {}
    for pod in ready:
        assert pod["spec"]["schedulerName"] == SCHEDULER_NAME  # the routing webhook
        assert pod["spec"]["nodeName"] == real_node.name  # the binder
        assert not str(pod["status"].get("reason", "")).startswith("OutOf")
        claims[pod["metadata"]["name"]] = claim_of(pod)
    # Each pod's container printed its own claim's CDI variable, and only that one.
    for name, (claim, request) in claims.items():
        out = cluster.kubectl("-n", ns, "logs", name).stdout
        assert cdi_variable(claim, request) in out, out
        assert sum(line.startswith("claim_") for line in out.splitlines()) == 1, out
    # One NodePrepareResources per claim.
    for claim, _ in claims.values():
        assert calls_for(real_node, "NodePrepareResources", claim) == 1, claim
    shares = {
        (
            r["device"],
            r["shareID"],
        )
        for claim, _ in claims.values()
        for r in cluster.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{claim}")[
            1
        ]["status"]["allocation"]["devices"]["results"]
    }
    assert len(shares) == 8 and {d for d, _ in shares} == {"gpu-0", "gpu-1"}

    # A ninth pod waits: no share left.
    pending = (
        make_pod("waiting")
        .namespace(ns)
        .container("main", workload_image())
        .limit(RESOURCE, 1)
        .spec(
            nodeSelector=dict(NODE_LABELS),
            tolerations=deployment(1)["spec"]["template"]["spec"]["tolerations"],
            terminationGracePeriodSeconds=2,
        )
        .obj()
    )
    pending["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    cluster.create(pending)
    time.sleep(3)
    status, waiting = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/waiting")
    assert status == 200 and not waiting["spec"].get("nodeName"), waiting

    # Scale down by two: their claims are unprepared once each, and the waiting pod takes a freed share.
    scale(node_cluster, ns, "gpu-real", 6)
    wait_for(
        "two pods gone",
        lambda: len(pods(node_cluster, ns, "app%3Dgpu-real")) == 6,
        timeout=60,
        interval=0.3,
    )
    remaining = {p["metadata"]["name"] for p in pods(node_cluster, ns, "app%3Dgpu-real")}
    deleted = [claim for name, (claim, _) in claims.items() if name not in remaining]
    assert len(deleted) == 2
    waiting = wait_for(
        "the waiting pod Running",
        lambda: (
            running_by_kubelet(p := cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/waiting")[1]) and p
        ),
        timeout=60,
        interval=0.3,
    )
    claim, request = claim_of(waiting)
    assert cdi_variable(claim, request) in cluster.kubectl("-n", ns, "logs", "waiting").stdout
    assert calls_for(real_node, "NodePrepareResources", claim) == 1
    wait_for(
        "NodeUnprepareResources for the deleted pods' claims",
        lambda: all(calls_for(real_node, "NodeUnprepareResources", c) == 1 for c in deleted),
        timeout=30,
        interval=0.3,
    )
    for claim, _ in claims.values():
        if claim not in deleted:
            assert calls_for(real_node, "NodeUnprepareResources", claim) == 0


def test_negative_control_a_pod_naming_a_missing_claim_is_refused_by_the_kubelet(
    node_cluster: Product, real_node: RealNode
) -> None:
    """The tier judges: a pod whose extendedResourceClaimStatus names no existing claim, bound by hand (no
    binder), never runs; the kubelet reports why."""
    cluster = node_cluster.cluster
    ns = "rn-negative"  # not opted in: nothing routes or binds it but this test
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    pod = (
        make_pod("wrong-status")
        .namespace(ns)
        .container("main", workload_image())
        .limit(RESOURCE, 1)
        .scheduler("nobody")
        .spec(terminationGracePeriodSeconds=1)
        .obj()
    )
    pod["spec"]["containers"][0]["imagePullPolicy"] = "Never"
    cluster.create(pod)
    path = f"/api/v1/namespaces/{ns}/pods/wrong-status"
    status, body = cluster.request(
        "PATCH",
        f"{path}/status",
        {
            "status": {
                "extendedResourceClaimStatus": {
                    "resourceClaimName": "no-such-claim",
                    "requestMappings": [
                        {
                            "containerName": "main",
                            "resourceName": RESOURCE,
                            "requestName": "container-0-request-0",
                        }
                    ],
                }
            }
        },
        content_type="application/merge-patch+json",
    )
    assert status == 200, body
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "wrong-status", "namespace": ns},
        "target": {"apiVersion": "v1", "kind": "Node", "name": real_node.name},
    }
    status, body = cluster.request("POST", f"{path}/binding", binding)
    assert status == 201, body

    def refusal() -> list[dict[str, Any]]:
        _, events = cluster.request(
            "GET", f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3Dwrong-status"
        )
        return [
            e
            for e in events["items"]
            if e.get("source", {}).get("component") == "kubelet" and e["type"] == "Warning"
        ]

    refused = wait_for("the kubelet's warning about the pod", refusal, timeout=30, interval=0.3)
    print("kubelet:", [(e["reason"], e["message"]) for e in refused])
    assert any("no-such-claim" in e["message"] for e in refused), refused
    _, now = cluster.request("GET", path)
    assert not running_by_kubelet(now), now["status"]
    assert not any("no-such-claim" in line for line in real_node.plugin_calls("NodePrepareResources"))
    cluster.request("DELETE", f"/api/v1/namespaces/{ns}")


def test_one_real_node_per_machine(
    node_cluster: Product, real_node: RealNode, start_node: NodeFactory
) -> None:
    with pytest.raises(host.RealNodeBusy, match=r"another real node runs on this machine \(pid \d+, pytest"):
        start_node()
    assert real_node.ready()  # the refused second start touched nothing
