"""DRA device binding conditions (binder/binding_conditions.py, v1.38.0-beta.0 `dynamicresources.go` PreBind)
on the real control plane of the selected release, with the real API server's validation and status
subresource: a real `dra-capacity bind` process as the chart's binder ServiceAccount places a pod asking
`nvidia.com/gpu.shared` (`schedulerName: dra-capacity`, as the routing webhook sets it) on `kwok-node-0`,
whose one GPU is an `allNodes` device with `bindsToNode`, `bindingConditions` and `bindingFailureConditions`.

* On every release (1.37 in the realcluster tier, 1.36 and 1.38 in `make test-extended`) the device is
  allocated (the allocation pinned to the node: bindsToNode), the pod waits unbound while the condition is
  unset and is bound once it is True; a True failure condition deletes the claim and the pod is retried on a
  new one. DRADeviceBindingConditions is beta and on by default in v1.36.3 and v1.37.2, GA in 1.38.
* The negative control: a binder started with `--feature-gates DRADeviceBindingConditions=false` (on 1.38
  against the gate's lock, a warning) never allocates such a device. The API server keeps the slice's
  fields (its gate is on: localcluster/cluster.py `FEATURE_GATES`).

The device's DRA driver is a test double, `DeviceController`: the test itself writes the claim's
`status.devices[].conditions` through the `kubernetes` client, as a driver's controller would. No real driver
that sets binding conditions can be built or run here: kwok nodes run no kubelet and no DRA plugin, and the
realnode tier's plugin (upstream's e2e test driver, 1.37 only) sets no conditions. The API server still
validates and stores every write.

The tests of one module share one cluster and one binder process, and run in file order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from support.gpu_cluster import DRIVER, device_class, pod, share_gpu
from support.real_binders import BinderProcess, install_binder_rbac
from support.real_cluster import module_cluster, ok, wait_default_account
from support.waiting import wait_for

from binder.binding_conditions import REASON_PENDING, pending_message
from binder.names import CLAIM_ANNOTATION
from localcluster.cluster import Cluster, ClusterConfig, selected_release
from localcluster.objects import device_conditions, make_slice
from resourceapi.gates import DRA_DEVICE_BINDING_CONDITIONS
from resourceapi.releases import release

pytestmark = pytest.mark.realcluster

NS = "bindcond"
NODE = "kwok-node-0"
READY = "dra.example.com/attached"
FAILED = "dra.example.com/attach-failed"
FABRIC = "fabric"

cluster = module_cluster("bindcond", ClusterConfig(nodes=1, gpus_per_node=1, shares=4))


def fabric_slice() -> dict[str, Any]:
    """A network-attached GPU of 4 shares (`allNodes`) that binds to the node it is allocated for, with a
    binding condition and a binding failure condition: the shape of a fabric-attached device."""
    gpu = {**share_gpu(0, NODE), "bindsToNode": True}
    gpu |= {"bindingConditions": [READY], "bindingFailureConditions": [FAILED]}
    obj = make_slice(NODE, DRIVER).name(FABRIC).pool(FABRIC).devices(gpu).obj()
    del obj["spec"]["nodeName"]
    obj["spec"]["allNodes"] = True
    return obj


@pytest.fixture(scope="module")
def binder(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BinderProcess]:
    """The fabric GPU in place of the node's own (so it is the only device), the DeviceClass, namespace
    `bindcond`, and one binder."""
    ok(*cluster.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{node_slice_name(cluster)}"))
    stored = cluster.create(fabric_slice())
    # the server keeps the fields (its gate is on in every release the harness runs)
    [dev] = stored["spec"]["devices"]
    assert (dev.get("bindingConditions"), dev.get("bindsToNode")) == ([READY], True), stored
    cluster.create(device_class(carrier="annotation"))  # a released API server drops the KEP-6406 field
    ok(*cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}), "namespace")
    wait_default_account(cluster, NS)
    logs = tmp_path_factory.mktemp("bindcond-binder")
    proc = BinderProcess("binder", install_binder_rbac(cluster), logs)
    proc.start()
    try:
        wait_for("the binder leads", proc.leads, timeout=30, interval=0.2)
        yield proc
    finally:
        proc.stop()


def node_slice_name(cluster: Cluster) -> str:
    items = ok(*cluster.request("GET", "/apis/resource.k8s.io/v1/resourceslices"), "slices")["items"]
    [name] = [s["metadata"]["name"] for s in items if s["spec"].get("nodeName") == NODE]
    return str(name)


class DeviceController:
    """Test double of the device's DRA driver controller (none can run here: see the module docstring): sets
    a condition True on every allocated device of a claim, through the claim's real status subresource."""

    def __init__(self, cluster: Cluster) -> None:
        self.api_client = cluster.api_client()
        self.api = kubernetes.client.ResourceV1Api(self.api_client)

    def report(self, claim: dict[str, Any], kind: str, reason: str) -> None:
        """Read the claim as it is now, then merge-patch `status.devices` (the field a driver owns) alone."""
        name = claim["metadata"]["name"]
        current = self.api_client.sanitize_for_serialization(
            self.api.read_namespaced_resource_claim(name, NS)
        )
        devices = device_conditions(current, kind, reason, NODE)
        self.api.patch_namespaced_resource_claim_status(name, NS, {"status": {"devices": devices}})

    def close(self) -> None:
        self.api_client.close()


@pytest.fixture
def driver(cluster: Cluster) -> Iterator[DeviceController]:
    double = DeviceController(cluster)
    try:
        yield double
    finally:
        double.close()


def get(cluster: Cluster, path: str) -> dict[str, Any] | None:
    status, body = cluster.request("GET", path)
    if status == 404:
        return None
    return dict(ok(status, body, path))


def the_pod(cluster: Cluster, name: str) -> dict[str, Any]:
    found = get(cluster, f"/api/v1/namespaces/{NS}/pods/{name}")
    assert found is not None, name
    return found


def claims_of(cluster: Cluster, pod_name: str) -> list[dict[str, Any]]:
    """The binder's extended-resource claims owned by pod `pod_name`, allocated ones only."""
    path = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims"
    items = ok(*cluster.request("GET", path), "claims")["items"]
    return [
        c
        for c in items
        if (c["metadata"].get("annotations") or {}).get(CLAIM_ANNOTATION) == "true"
        and any(o.get("name") == pod_name for o in c["metadata"].get("ownerReferences") or [])
        and (c.get("status") or {}).get("allocation")
        and not c["metadata"].get("deletionTimestamp")
    ]


def events_of(cluster: Cluster, pod_name: str, reason: str) -> list[dict[str, Any]]:
    items = ok(*cluster.request("GET", f"/api/v1/namespaces/{NS}/events"), "events")["items"]
    return [e for e in items if e["involvedObject"]["name"] == pod_name and e.get("reason") == reason]


def wait_allocated(cluster: Cluster, pod_name: str, other_than: str = "") -> dict[str, Any]:
    def one() -> dict[str, Any] | None:
        got = [c for c in claims_of(cluster, pod_name) if c["metadata"]["name"] != other_than]
        return got[0] if len(got) == 1 else None

    return wait_for(f"a claim of {pod_name} allocated", one, timeout=30, interval=0.1)  # type: ignore[no-any-return]


def wait_pending(cluster: Cluster, pod_name: str, count: int = 1) -> list[dict[str, Any]]:
    """The binder's `BindingConditionsPending` Events of the pod, at least `count` (an Event of a pod that
    waits again is the same object with a higher `count`)."""

    def seen() -> list[dict[str, Any]] | None:
        got = events_of(cluster, pod_name, REASON_PENDING)
        return got if sum(e.get("count", 1) for e in got) >= count else None

    return wait_for(f"{pod_name} waiting for its binding conditions", seen, timeout=30, interval=0.2)  # type: ignore[no-any-return]


def test_the_pod_binds_only_once_the_device_reports_its_binding_condition(
    cluster: Cluster, binder: BinderProcess, driver: DeviceController
) -> None:
    cluster.create(pod("web-0", NS))
    claim = wait_allocated(cluster, "web-0")
    [result] = claim["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == (FABRIC, "gpu-0")
    # bindsToNode: the allocation of an `allNodes` device is pinned to the node it was made for
    pinned = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}
    assert claim["status"]["allocation"]["nodeSelector"] == {"nodeSelectorTerms": [pinned]}
    assert (result["bindingConditions"], result["bindingFailureConditions"]) == ([READY], [FAILED])
    assert claim["status"]["allocation"]["allocationTimestamp"]
    [note] = wait_pending(cluster, "web-0")
    assert (note["type"], note["message"]) == ("Normal", pending_message(NODE))
    assert "nodeName" not in the_pod(cluster, "web-0")["spec"]
    driver.report(claim, READY, "Attached")
    placed = wait_for(
        "web-0 bound",
        lambda: (lambda p: p if p["spec"].get("nodeName") else None)(the_pod(cluster, "web-0")),
        timeout=30,
        interval=0.2,
    )
    assert placed["spec"]["nodeName"] == NODE
    assert placed["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == claim["metadata"]["name"]
    stored = get(
        cluster, f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{claim['metadata']['name']}"
    )
    assert stored is not None
    [device] = stored["status"]["devices"]
    assert [(c["type"], c["status"]) for c in device["conditions"]] == [(READY, "True")]


def test_a_failure_condition_deletes_the_claim_and_the_pod_is_retried(
    cluster: Cluster, binder: BinderProcess, driver: DeviceController
) -> None:
    cluster.create(pod("web-1", NS))
    first = wait_allocated(cluster, "web-1")
    wait_pending(cluster, "web-1")
    driver.report(first, FAILED, "NoFabric")
    name = first["metadata"]["name"]

    def failed() -> list[dict[str, Any]]:
        return [
            e
            for e in events_of(cluster, "web-1", "FailedScheduling")
            if "device binding failed" in e["message"]
        ]

    [event] = wait_for("the failure reported", failed, timeout=30, interval=0.2)
    assert (
        f'running PreBind plugin "DynamicResources": device binding failed: claim={name}, '
        f'reason=NoFabric, message="{FAILED} on {NODE}"'
    ) in event["message"]
    claim_path = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{name}"
    wait_for("the failed claim deleted", lambda: get(cluster, claim_path) is None, timeout=30, interval=0.2)
    second = wait_allocated(cluster, "web-1", other_than=name)  # the retry: a new claim, waiting again
    assert second["status"]["allocation"]["devices"]["results"][0]["bindingConditions"] == [READY]
    wait_pending(cluster, "web-1", count=2)
    assert "nodeName" not in the_pod(cluster, "web-1")["spec"]
    ok(*cluster.request("DELETE", f"/api/v1/namespaces/{NS}/pods/web-1", {"gracePeriodSeconds": 0}), "delete")


def test_the_binder_serves_the_release_the_harness_runs(binder: BinderProcess) -> None:
    """Its "binder started" line names the release it judges by (else the cases above judge another)."""
    [log] = sorted(Path(binder.logdir).glob("binder-*.log"))
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    [started] = [line for line in lines if line["msg"] == "binder started"]
    assert started["kubernetes_release"] == selected_release()


def test_the_wait_times_out_after_the_binding_timeout_and_deletes_the_claim(
    cluster: Cluster, binder: BinderProcess, tmp_path: Path
) -> None:
    """`bind --binding-timeout 1` in place of the module's binder (its default is 600): the condition never
    comes, so PreBind gives up (upstream's `device binding timeout`), the claim is deleted and the pod stays
    pending."""
    binder.stop()
    short = BinderProcess("short-timeout", binder.kubeconfig, tmp_path, args=("--binding-timeout", "1"))
    short.start()
    try:
        wait_for("the short-timeout binder leads", short.leads, timeout=30, interval=0.2)
        cluster.create(pod("web-2", NS))
        first = wait_allocated(cluster, "web-2")

        def timed_out() -> list[dict[str, Any]]:
            events = events_of(cluster, "web-2", "FailedScheduling")
            return [e for e in events if "device binding timeout" in e["message"]]

        [event] = wait_for("the timeout reported", timed_out, timeout=30, interval=0.2)
        assert 'running PreBind plugin "DynamicResources": device binding timeout' in event["message"]
        claim_path = f"/apis/resource.k8s.io/v1/namespaces/{NS}/resourceclaims/{first['metadata']['name']}"
        wait_for("the claim deleted", lambda: get(cluster, claim_path) is None, timeout=30, interval=0.2)
        assert "nodeName" not in the_pod(cluster, "web-2")["spec"]
    finally:
        short.stop()


def test_with_binding_conditions_off_such_a_device_is_never_allocated(
    cluster: Cluster, binder: BinderProcess, tmp_path: Path
) -> None:
    """The negative control: `bind --feature-gates DRADeviceBindingConditions=false` in place of the module's
    binder turns DeviceBindingAndStatus off, so the pod stays unschedulable and nothing waits."""
    binder.stop()
    off = BinderProcess(
        "gate-off", binder.kubeconfig, tmp_path, args=("--feature-gates", "DRADeviceBindingConditions=false")
    )
    off.start()
    try:
        wait_for("the gate-off binder leads", off.leads, timeout=30, interval=0.2)
        cluster.create(pod("web-3", NS))

        def unschedulable() -> list[dict[str, Any]]:
            return events_of(cluster, "web-3", "FailedScheduling")

        [event] = wait_for("web-3 unschedulable", unschedulable, timeout=30, interval=0.2)
        assert event["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")
        assert (
            "every device on this node has binding conditions (DRADeviceBindingConditions off)"
            in event["message"]
        )
        assert claims_of(cluster, "web-3") == []
        assert "nodeName" not in the_pod(cluster, "web-3")["spec"]
        assert events_of(cluster, "web-3", REASON_PENDING) == []
        # set against 1.38's lock the gate is a warning, still followed (resourceapi/releases.py `locked`)
        [log] = sorted(tmp_path.glob("gate-off-*.log"))
        warned = "DRADeviceBindingConditions is locked to true" in log.read_text()
        assert warned is (DRA_DEVICE_BINDING_CONDITIONS in release(selected_release()).locked)
    finally:
        off.stop()
