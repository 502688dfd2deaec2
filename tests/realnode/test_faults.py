"""The real node under faults, with nothing lost: the kubelet, the DRA plugin and containerd each restarted
while pods run; the node drained then deleted; a device removed from the slice while a pod uses it (the state
that follows is documented in docs/testing.md, "The real node")."""

from __future__ import annotations

import time
from typing import Any

from support.waiting import wait_for

from localcluster.realnode.node import RealNode

from .conftest import Product
from .test_headline import calls_for, cdi_variable, claim_of, deployment, pods, running_by_kubelet, scale

SELECTOR = "app%3Dgpu-real"


def start_pods(product: Product, ns: str, replicas: int) -> list[dict[str, Any]]:
    obj = deployment(replicas)
    obj["metadata"]["namespace"] = ns
    product.cluster.create(obj)
    return wait_running(product, ns, replicas)


def wait_running(product: Product, ns: str, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = wait_for(
        f"{count} pods Running by the kubelet's report",
        lambda: (
            (p := pods(product, ns, SELECTOR))
            and len(p) == count
            and all(running_by_kubelet(x) for x in p)
            and p
        ),
        timeout=90,
        interval=0.3,
    )
    return found


def containers(found: list[dict[str, Any]]) -> dict[str, tuple[str, int]]:
    """Each pod's container ID and restart count: a pod that kept running keeps both."""
    return {
        p["metadata"]["name"]: (
            p["status"]["containerStatuses"][0]["containerID"],
            p["status"]["containerStatuses"][0]["restartCount"],
        )
        for p in found
    }


def claim(product: Product, ns: str, name: str) -> dict[str, Any] | None:
    status, body = product.cluster.request(
        "GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}"
    )
    return dict(body) if status == 200 else None


def assert_new_pod_prepared(product: Product, node: RealNode, ns: str, before: list[dict[str, Any]]) -> None:
    scale(product, ns, "gpu-real", len(before) + 1)
    after = wait_running(product, ns, len(before) + 1)
    [new] = [p for p in after if p["metadata"]["name"] not in {b["metadata"]["name"] for b in before}]
    name, request = claim_of(new)
    assert calls_for(node, "NodePrepareResources", name) == 1
    logs = product.cluster.kubectl("-n", ns, "logs", new["metadata"]["name"]).stdout
    assert cdi_variable(name, request) in logs


def test_kubelet_restart_keeps_pods_running_and_claims_prepared(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    ns = routed_namespace
    before = start_pods(node_cluster, ns, 2)
    claims = [claim_of(p)[0] for p in before]
    specs = sorted(p.name for p in real_node.paths.cdi.iterdir())
    real_node.restart("kubelet")
    real_node.wait_ready()
    time.sleep(5)  # a kubelet resync (syncFrequency 10s at most) after the restart
    after = wait_running(node_cluster, ns, 2)
    assert containers(after) == containers(before)
    for name in claims:
        assert calls_for(real_node, "NodeUnprepareResources", name) == 0
        assert (c := claim(node_cluster, ns, name)) and c["status"]["reservedFor"]
    assert sorted(p.name for p in real_node.paths.cdi.iterdir()) == specs
    assert_new_pod_prepared(node_cluster, real_node, ns, after)


def test_plugin_restart_re_registers_and_prepares_new_pods(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    ns = routed_namespace
    before = start_pods(node_cluster, ns, 2)
    registered = real_node.registrations()
    real_node.restart("draplugin")  # waits for the kubelet's NotifyRegistrationStatus
    assert real_node.registrations() == registered + 1
    after = wait_running(node_cluster, ns, 2)
    assert containers(after) == containers(before)
    assert_new_pod_prepared(node_cluster, real_node, ns, after)


def test_containerd_restart_keeps_pods_and_runs_new_ones(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    ns = routed_namespace
    before = start_pods(node_cluster, ns, 2)
    real_node.restart("containerd")
    real_node.wait_ready()
    after = wait_running(node_cluster, ns, 2)
    assert containers(after) == containers(before)
    assert_new_pod_prepared(node_cluster, real_node, ns, after)


def test_drain_then_delete_evicts_frees_shares_and_removes_claims(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    cluster, ns = node_cluster.cluster, routed_namespace
    before = start_pods(node_cluster, ns, 3)
    claims = [claim_of(p)[0] for p in before]
    cluster.kubectl("drain", real_node.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s")
    gone = {p["metadata"]["name"] for p in before}
    wait_for(
        "the drained pods gone",
        lambda: not gone & {p["metadata"]["name"] for p in pods(node_cluster, ns, SELECTOR)},
        timeout=60,
        interval=0.3,
    )
    wait_for(
        "one NodeUnprepareResources per evicted pod's claim",
        lambda: all(calls_for(real_node, "NodeUnprepareResources", c) == 1 for c in claims),
        timeout=30,
        interval=0.3,
    )
    wait_for("their claims deleted", lambda: all(claim(node_cluster, ns, c) is None for c in claims), 60, 0.3)
    # The replacements wait: the only real node is cordoned, the kwok nodes are not `type: real`.
    replacements = pods(node_cluster, ns, SELECTOR)
    assert len(replacements) == 3 and not any(p["spec"].get("nodeName") for p in replacements)
    status, _ = cluster.request("DELETE", f"/api/v1/nodes/{real_node.name}")
    assert status == 200
    wait_for("the node's ResourceSlice gone with it", lambda: not real_node.slices(), 60, 0.3)
    _, listed = cluster.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims")
    assert not any(
        r.get("pool") == real_node.name
        for c in listed["items"]
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    )


def test_device_removed_from_the_slice_while_in_use(
    node_cluster: Product, real_node: RealNode, routed_namespace: str
) -> None:
    """The plugin stops publishing a device that pods use. The pods run on (the kubelet never revisits a
    prepared claim), their claims keep the allocation of a device no slice lists, and new pods get shares of
    the remaining device only: what kube-scheduler's pods would see too."""
    ns = routed_namespace
    before = start_pods(node_cluster, ns, 2)
    used = {
        r["device"]
        for p in before
        for r in claim(node_cluster, ns, claim_of(p)[0])["status"]["allocation"]["devices"]["results"]
    }  # type: ignore[index]
    removed = sorted(used)[0]
    kept = [d for d in ("gpu-0", "gpu-1") if d != removed]
    devices = [d for d in real_node.published_devices() if d["name"] != removed]
    real_node.write_devices(devices)
    wait_for(
        f"the slice without {removed}",
        lambda: [d["name"] for s in real_node.slices() for d in s["spec"]["devices"]] == kept,
        timeout=30,
        interval=0.3,
    )
    time.sleep(3)
    after = wait_running(node_cluster, ns, 2)
    assert containers(after) == containers(before)
    for p in after:
        name = claim_of(p)[0]
        assert calls_for(real_node, "NodeUnprepareResources", name) == 0
        assert (c := claim(node_cluster, ns, name)) and c["status"]["allocation"]
    scale(node_cluster, ns, "gpu-real", 4)
    grown = wait_running(node_cluster, ns, 4)
    new = [p for p in grown if p["metadata"]["name"] not in {b["metadata"]["name"] for b in before}]
    for p in new:
        results = claim(node_cluster, ns, claim_of(p)[0])["status"]["allocation"]["devices"]["results"]  # type: ignore[index]
        assert [r["device"] for r in results] == kept[:1], results
    print(f"removed {removed} in use by {len(before)} pods: they run on; new pods on {kept}")
